// The console's Networking → Node network states page: the states table
// of web/src, fed by the console's watch.
import { PageSection } from '@patternfly/react-core';
import { StatesPage as States } from '../../../src/States';
import { paths, useWatch } from '../k8s';
import { useRoute } from '../route';
import { useStyle } from '../style';
import type { NodeNetworkState } from '../../../src/nns';

export default function StatesPage() {
  useStyle();
  const route = useRoute();
  const states = useWatch<NodeNetworkState>(paths.states);
  return (
    <PageSection data-test="knmstate-plugin-page" data-page="states">
      <States route={{ page: 'states', name: route.page === 'states' ? route.name : '' }} states={states} />
    </PageSection>
  );
}
