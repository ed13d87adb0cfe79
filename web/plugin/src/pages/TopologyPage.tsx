// The console's Networking → Node network topology page: the topology
// view of web/src, fed by the console's watches.
import { PageSection } from '@patternfly/react-core';
import { TopologyPage as Topology } from '../../../src/Topology';
import { paths, useWatch } from '../k8s';
import { useRoute } from '../route';
import { useStyle } from '../style';
import type { Enactment, Policy } from '../../../src/policy';
import type { NodeNetworkState } from '../../../src/nns';

export default function TopologyPage() {
  useStyle();
  const route = useRoute();
  const states = useWatch<NodeNetworkState>(paths.states);
  const policies = useWatch<Policy>(paths.policies);
  const enactments = useWatch<Enactment>(paths.enactments);
  return (
    <PageSection data-test="knmstate-plugin-page" data-page="topology">
      <Topology route={{ page: 'topology', name: route.page === 'topology' ? route.name : '' }} states={states} policies={policies.items} enactments={enactments.items} />
    </PageSection>
  );
}
