// The console's Networking → Node network policies page: the policies
// view of web/src (list, enactments per node, form, YAML), fed by the
// console's watches.
import { PageSection } from '@patternfly/react-core';
import { PoliciesPage as Policies } from '../../../src/Policies';
import { paths, useWatch } from '../k8s';
import { useRoute } from '../route';
import { useStyle } from '../style';
import type { Enactment, Policy } from '../../../src/policy';
import type { NodeNetworkState } from '../../../src/nns';

export default function PoliciesPage() {
  useStyle();
  const route = useRoute();
  const states = useWatch<NodeNetworkState>(paths.states);
  const policies = useWatch<Policy>(paths.policies);
  const enactments = useWatch<Enactment>(paths.enactments);
  return (
    <PageSection data-test="knmstate-plugin-page" data-page="policies">
      <Policies route={{ page: 'policies', name: route.page === 'policies' ? route.name : '' }} policies={policies} enactments={enactments.items} nodes={states.items.length} />
    </PageSection>
  );
}
