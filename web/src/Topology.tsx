import { useEffect, useMemo, useState } from 'react';
import {
  Alert,
  Checkbox,
  EmptyState,
  FormSelect,
  FormSelectOption,
  PageSection,
  Title,
  Toolbar,
  ToolbarContent,
  ToolbarGroup,
  ToolbarItem,
  Content,
  Label,
  LabelGroup,
  DescriptionList,
  DescriptionListGroup,
  DescriptionListTerm,
  DescriptionListDescription,
} from '@patternfly/react-core';
import {
  action,
  observer,
  ComponentFactory,
  createTopologyControlButtons,
  defaultControlButtonsOptions,
  Edge,
  GraphComponent,
  GraphElement,
  Model,
  ModelKind,
  Node,
  SELECTION_EVENT,
  TopologyControlBar,
  TopologySideBar,
  TopologyView,
  Visualization,
  VisualizationProvider,
  VisualizationSurface,
  withPanZoom,
  withSelection,
  WithSelectionProps,
} from '@patternfly/react-topology';
import { buildGraph, GraphNode, interfaceTypes, NODE_HEIGHT, NODE_WIDTH } from './graph';
import { go, Route } from './route';
import type { Watched } from './k8s';
import { Enactment, policiesTouching, Policy } from './policy';
import type { NodeNetworkState } from './nns';
import { YamlView } from './Yaml';

// Timing of the last topology render, read by the browser tests: from
// handing the model to the controller to the first frame after React
// committed it.
declare global {
  interface Window {
    knmstateTopology?: { node: string; nodes: number; edges: number; renderMs: number };
  }
}

const IfaceNode = observer(({ element, selected, onSelect }: { element: GraphElement } & WithSelectionProps) => {
  const n = (element as Node).getData() as GraphNode;
  const addr = n.addresses.length === 0 ? '' : n.addresses.length === 1 ? n.addresses[0] : `${n.addresses[0]} +${n.addresses.length - 1}`;
  return (
    <g className={`knm-iface state-${n.state}${selected ? ' is-selected' : ''}`} onClick={onSelect} data-name={n.name} data-iface-type={n.type}>
      <title>{`${n.name} (${n.type}, ${n.state})`}</title>
      <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx={6} />
      <text className="knm-name" x={8} y={17}>
        {n.name.length > 20 ? n.name.slice(0, 19) + '…' : n.name}
      </text>
      <text className="knm-type" x={8} y={33}>
        {`${n.type} · ${n.state}${n.mtu ? ` · ${n.mtu}` : ''}`}
      </text>
      <text x={8} y={49}>
        {addr}
      </text>
    </g>
  );
});

const IfaceEdge = observer(({ element }: { element: GraphElement }) => {
  const e = element as Edge;
  const s = e.getStartPoint();
  const t = e.getEndPoint();
  const kind = (e.getData() as { kind: string }).kind;
  return <line className={`knm-edge kind-${kind}`} x1={s.x} y1={s.y} x2={t.x} y2={t.y} />;
});

const factory: ComponentFactory = (kind) => {
  switch (kind) {
    case ModelKind.graph:
      return withPanZoom()(GraphComponent);
    case ModelKind.node:
      return withSelection()(IfaceNode);
    case ModelKind.edge:
      return IfaceEdge;
    default:
      return undefined;
  }
};

export function TopologyPage({
  route,
  states,
  policies,
  enactments,
}: {
  route: Route;
  states: Watched<NodeNetworkState>;
  policies: Policy[];
  enactments: Enactment[];
}) {
  const node = route.name || states.items[0]?.metadata.name || '';
  const nns = states.items.find((s) => s.metadata.name === node);
  const ifaces = useMemo(() => nns?.status?.currentState?.interfaces ?? [], [nns]);
  const allTypes = useMemo(() => interfaceTypes(ifaces), [ifaces]);
  // hidden holds the types filtered out (so a type that appears later is
  // shown).
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const graph = useMemo(() => buildGraph(ifaces, new Set(allTypes.filter((t) => !hidden.has(t)))), [ifaces, allTypes, hidden]);
  const [selected, setSelected] = useState<string>('');

  const controller = useMemo(() => {
    const c = new Visualization();
    c.registerComponentFactory(factory);
    c.addEventListener(SELECTION_EVENT, (ids: string[]) => setSelected(ids[0] ?? ''));
    c.fromModel({ graph: { id: 'g', type: 'graph' } }, false);
    return c;
  }, []);

  useEffect(() => {
    const start = performance.now();
    const model: Model = {
      graph: { id: 'g', type: 'graph' },
      nodes: graph.nodes.map((n) => ({ id: n.id, type: 'iface', x: n.x, y: n.y, width: NODE_WIDTH, height: NODE_HEIGHT, data: n })),
      edges: graph.edges.map((e) => ({ id: e.id, type: 'link', source: e.source, target: e.target, data: { kind: e.kind } })),
    };
    controller.fromModel(model, true);
    const id = requestAnimationFrame(() => {
      controller.getGraph().fit(40);
      requestAnimationFrame(() => {
        window.knmstateTopology = { node, nodes: graph.nodes.length, edges: graph.edges.length, renderMs: performance.now() - start };
      });
    });
    return () => cancelAnimationFrame(id);
  }, [controller, graph, node]);

  const sel = graph.nodes.find((n) => n.id === selected);
  const touching = sel ? policiesTouching(sel.name, node, policies, enactments) : [];
  const side = (
    <TopologySideBar show={!!sel} onClose={() => setSelected('')} header={<Title headingLevel="h2">{sel?.name}</Title>}>
      {sel && (
        <div style={{ padding: 16 }} data-test="iface-panel">
          <DescriptionList isCompact>
            <DescriptionListGroup>
              <DescriptionListTerm>Type, state, MTU</DescriptionListTerm>
              <DescriptionListDescription>{`${sel.type}, ${sel.state}${sel.mtu ? `, ${sel.mtu}` : ''}`}</DescriptionListDescription>
            </DescriptionListGroup>
            <DescriptionListGroup>
              <DescriptionListTerm>Policies touching it</DescriptionListTerm>
              <DescriptionListDescription data-test="iface-policies">
                {touching.length === 0 ? 'none' : (
                  <LabelGroup>
                    {touching.map((p) => (
                      <Label key={p} color="blue" onClick={() => go({ page: 'policies', name: p })}>
                        {p}
                      </Label>
                    ))}
                  </LabelGroup>
                )}
              </DescriptionListDescription>
            </DescriptionListGroup>
          </DescriptionList>
          <Title headingLevel="h3" style={{ marginTop: 16 }}>
            Current state
          </Title>
          <YamlView obj={{ interfaces: [sel.iface] }} />
        </div>
      )}
    </TopologySideBar>
  );

  const toolbar = (
    <Toolbar>
      <ToolbarContent>
        <ToolbarItem>
          <FormSelect
            aria-label="node"
            data-test="topology-node"
            value={node}
            onChange={(_e, v) => {
              setSelected('');
              go({ page: 'topology', name: v });
            }}
          >
            {states.items.map((s) => (
              <FormSelectOption key={s.metadata.name} value={s.metadata.name} label={s.metadata.name} />
            ))}
          </FormSelect>
        </ToolbarItem>
        <ToolbarGroup>
          {allTypes.map((t) => (
            <ToolbarItem key={t}>
              <Checkbox
                id={`type-${t}`}
                label={t}
                isChecked={!hidden.has(t)}
                onChange={(_e, on) => {
                  const h = new Set(hidden);
                  if (on) h.delete(t);
                  else h.add(t);
                  setHidden(h);
                }}
              />
            </ToolbarItem>
          ))}
        </ToolbarGroup>
        <ToolbarItem>
          <Content component="small">{`${graph.nodes.length} interfaces, ${graph.edges.length} links`}</Content>
        </ToolbarItem>
      </ToolbarContent>
    </Toolbar>
  );

  return (
    <PageSection isFilled>
      {states.error && <Alert variant="danger" isInline title={`Node network states: ${states.error}`} />}
      {states.loaded && states.items.length === 0 ? (
        <EmptyState titleText="No node network states" headingLevel="h2">
          No handler has reported a node yet.
        </EmptyState>
      ) : (
        <div className="knm-graph" data-test="topology" data-node={node}>
          <TopologyView
            sideBar={side}
            sideBarOpen={!!sel}
            viewToolbar={toolbar}
            controlBar={
              <TopologyControlBar
                controlButtons={createTopologyControlButtons({
                  ...defaultControlButtonsOptions,
                  zoomInCallback: action(() => controller.getGraph().scaleBy(4 / 3)),
                  zoomOutCallback: action(() => controller.getGraph().scaleBy(0.75)),
                  fitToScreenCallback: action(() => controller.getGraph().fit(40)),
                  resetViewCallback: action(() => {
                    controller.getGraph().reset();
                    controller.getGraph().layout();
                  }),
                  legend: false,
                })}
              />
            }
          >
            <VisualizationProvider controller={controller}>
              <VisualizationSurface state={{ selectedIds: selected ? [selected] : [] }} />
            </VisualizationProvider>
          </TopologyView>
        </div>
      )}
    </PageSection>
  );
}
