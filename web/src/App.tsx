import { Masthead, MastheadBrand, MastheadContent, MastheadMain, Nav, NavItem, NavList, Page, Title } from '@patternfly/react-core';
import { paths, useWatch } from './k8s';
import type { Enactment, Policy } from './policy';
import type { NodeNetworkState } from './nns';
import { TopologyPage } from './Topology';
import { PoliciesPage } from './Policies';
import { StatesPage } from './States';
import { go, Route, useRoute } from './route';

export function App() {
  const route = useRoute();
  // One watch per kind for the whole app: every view sees the same,
  // live, objects. Three long requests per tab: a browser opens at most
  // six HTTP/1.1 connections to one host, so no more watches than that.
  const states = useWatch<NodeNetworkState>(paths.states);
  const policies = useWatch<Policy>(paths.policies);
  const enactments = useWatch<Enactment>(paths.enactments);
  const items: [Route['page'], string][] = [
    ['topology', 'Topology'],
    ['policies', 'Policies'],
    ['states', 'Node network states'],
  ];
  const masthead = (
    <Masthead>
      <MastheadMain>
        <MastheadBrand>
          <Title headingLevel="h1" size="lg" style={{ color: 'inherit' }}>
            knmstate
          </Title>
        </MastheadBrand>
      </MastheadMain>
      <MastheadContent>
        <Nav variant="horizontal" aria-label="views">
          <NavList>
            {items.map(([page, label]) => (
              <NavItem key={page} isActive={route.page === page} onClick={() => go({ page, name: '' })} data-test={`nav-${page}`}>
                {label}
              </NavItem>
            ))}
          </NavList>
        </Nav>
      </MastheadContent>
    </Masthead>
  );
  return (
    <Page masthead={masthead}>
      {route.page === 'topology' && <TopologyPage route={route} states={states} policies={policies.items} enactments={enactments.items} />}
      {route.page === 'policies' && <PoliciesPage route={route} policies={policies} enactments={enactments.items} nodes={states.items.length} />}
      {route.page === 'states' && <StatesPage route={route} states={states} />}
    </Page>
  );
}
