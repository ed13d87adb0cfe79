import { useMemo, useState } from 'react';
import {
  Alert,
  Button,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Drawer,
  DrawerActions,
  DrawerCloseButton,
  DrawerContent,
  DrawerContentBody,
  DrawerHead,
  DrawerPanelBody,
  DrawerPanelContent,
  Label,
  LabelGroup,
  PageSection,
  SearchInput,
  Tab,
  Tabs,
  Title,
  Toolbar,
  ToolbarContent,
  ToolbarItem,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, ThProps, Tr } from '@patternfly/react-table';
import { go, Route } from './route';
import { addresses } from './graph';
import type { Watched } from './k8s';
import { filterSort, NodeNetworkState, SortKey, StateRow, summarise } from './nns';
import { clean, YamlView } from './Yaml';

const columns: [SortKey, string][] = [
  ['node', 'Node'],
  ['interfaces', 'Interfaces'],
  ['addresses', 'Addresses'],
  ['routes', 'Routes'],
  ['lldp', 'LLDP neighbours'],
  ['handlerVersion', 'Handler'],
  ['backend', 'Backend'],
  ['updated', 'Updated'],
];

function Details({ row }: { row: StateRow }) {
  const ifaces = row.nns.status?.currentState?.interfaces ?? [];
  const [tab, setTab] = useState<string | number>('interfaces');
  return (
    <Tabs activeKey={tab} onSelect={(_e, k) => setTab(k)}>
      <Tab eventKey="interfaces" title="Interfaces">
        {row.byType.map(([type, n]) => (
          <section key={type} data-type={type}>
            <Title headingLevel="h4" style={{ marginTop: 12 }}>{`${type} (${n})`}</Title>
            <Table aria-label={type} variant="compact">
              <Tbody>
                {ifaces
                  .filter((i) => (i.type ?? 'unknown') === type)
                  .map((i) => (
                    <Tr key={i.name}>
                      <Td>{i.name}</Td>
                      <Td>{i.state}</Td>
                      <Td>{i.mtu}</Td>
                      <Td>{addresses(i).join(', ')}</Td>
                    </Tr>
                  ))}
              </Tbody>
            </Table>
          </section>
        ))}
      </Tab>
      <Tab eventKey="lldp" title={`LLDP (${row.lldp.length})`}>
        <Table aria-label="LLDP neighbours" variant="compact">
          <Thead>
            <Tr>
              <Th>Interface</Th>
              <Th>System</Th>
              <Th>Chassis</Th>
              <Th>Port</Th>
            </Tr>
          </Thead>
          <Tbody>
            {row.lldp.map((n, k) => (
              <Tr key={k}>
                <Td>{n.iface}</Td>
                <Td>{n.system}</Td>
                <Td>{n.chassis}</Td>
                <Td>{n.port}</Td>
              </Tr>
            ))}
          </Tbody>
        </Table>
      </Tab>
      <Tab eventKey="knmstate" title="knmstate">
        <DescriptionList isCompact style={{ marginTop: 16 }}>
          {row.extensions.length === 0 && 'No knmstate.io/ extensions on this node.'}
          {row.extensions.map(([k, v]) => (
            <DescriptionListGroup key={k}>
              <DescriptionListTerm>{k}</DescriptionListTerm>
              <DescriptionListDescription>
                <pre style={{ whiteSpace: 'pre-wrap' }}>{v}</pre>
              </DescriptionListDescription>
            </DescriptionListGroup>
          ))}
        </DescriptionList>
      </Tab>
      <Tab eventKey="yaml" title="YAML">
        <YamlView obj={clean(row.nns as unknown as { metadata: Record<string, unknown> })} />
      </Tab>
    </Tabs>
  );
}

export function StatesPage({ route, states }: { route: Route; states: Watched<NodeNetworkState> }) {
  const [search, setSearch] = useState('');
  const [by, setBy] = useState<number>(0);
  const [asc, setAsc] = useState(true);
  const rows = useMemo(() => states.items.map(summarise), [states.items]);
  const shown = filterSort(rows, search, columns[by][0], asc);
  const open = rows.find((r) => r.node === route.name);
  const sort = (i: number): ThProps['sort'] => ({
    sortBy: { index: by, direction: asc ? 'asc' : 'desc' },
    onSort: (_e, index, dir) => {
      setBy(index);
      setAsc(dir === 'asc');
    },
    columnIndex: i,
  });
  const panel = (
    <DrawerPanelContent widths={{ default: 'width_50' }}>
      <DrawerHead>
        <Title headingLevel="h2">{open?.node}</Title>
        <DrawerActions>
          <DrawerCloseButton onClick={() => go({ page: 'states', name: '' })} />
        </DrawerActions>
      </DrawerHead>
      <DrawerPanelBody>{open && <Details row={open} />}</DrawerPanelBody>
    </DrawerPanelContent>
  );
  return (
    <PageSection isFilled>
      <Title headingLevel="h2">Node network states</Title>
      <Toolbar>
        <ToolbarContent>
          <ToolbarItem>
            <SearchInput placeholder="node, interface, type or address" value={search} onChange={(_e, v) => setSearch(v)} onClear={() => setSearch('')} />
          </ToolbarItem>
        </ToolbarContent>
      </Toolbar>
      {states.error && <Alert variant="danger" isInline title={`Node network states: ${states.error}`} />}
      <Drawer isExpanded={!!open} isInline>
        <DrawerContent panelContent={panel}>
          <DrawerContentBody>
            <Table aria-label="node network states" variant="compact" data-test="states">
              <Thead>
                <Tr>
                  {columns.map(([k, label], i) => (
                    <Th key={k} sort={sort(i)}>
                      {label}
                    </Th>
                  ))}
                </Tr>
              </Thead>
              <Tbody>
                {shown.map((r) => (
                  <Tr key={r.node} data-node={r.node} isRowSelected={open?.node === r.node}>
                    <Td dataLabel="Node">
                      <Button variant="link" isInline onClick={() => go({ page: 'states', name: r.node })}>
                        {r.node}
                      </Button>{' '}
                      <Button variant="plain" size="sm" onClick={() => go({ page: 'topology', name: r.node })} aria-label={`topology of ${r.node}`}>
                        ⧉
                      </Button>
                    </Td>
                    <Td dataLabel="Interfaces">
                      <LabelGroup numLabels={6}>
                        {r.byType.map(([t, n]) => (
                          <Label key={t} isCompact>{`${t} ${n}`}</Label>
                        ))}
                      </LabelGroup>
                    </Td>
                    <Td dataLabel="Addresses">{r.addresses.join(', ')}</Td>
                    <Td dataLabel="Routes">{r.routes}</Td>
                    <Td dataLabel="LLDP neighbours">{r.lldp.length}</Td>
                    <Td dataLabel="Handler">{r.handlerVersion}</Td>
                    <Td dataLabel="Backend">{r.backend}</Td>
                    <Td dataLabel="Updated">{r.updated}</Td>
                  </Tr>
                ))}
              </Tbody>
            </Table>
          </DrawerContentBody>
        </DrawerContent>
      </Drawer>
    </PageSection>
  );
}
