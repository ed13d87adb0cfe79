// graph.ts turns a node's network state (the NNS currentState, nmstate's
// schema) into the nodes and edges the topology view draws, and lays them
// out. It is pure: values in, values out, so it is tested without a
// browser (graph.test.ts) and the view only renders what it returns.

// Iface is the part of an nmstate interface the views read; the rest of
// the object is kept as it is (the side panel shows it whole).
export interface Iface {
  name: string;
  type?: string;
  state?: string;
  mtu?: number;
  controller?: string;
  ipv4?: IPConfig;
  ipv6?: IPConfig;
  [key: string]: unknown;
}

export interface IPConfig {
  enabled?: boolean;
  dhcp?: boolean;
  autoconf?: boolean;
  address?: { ip: string; 'prefix-length': number }[];
}

// EdgeKind says why two interfaces are joined: a port to its controller
// (bond, Linux or OVS bridge, VRF), a stacked interface to its base (VLAN,
// MAC-VLAN, VXLAN...), or the two ends of a veth pair.
export type EdgeKind = 'port' | 'base' | 'peer';

export interface GraphNode {
  id: string;
  name: string;
  type: string;
  state: string;
  mtu?: number;
  addresses: string[];
  // level is the node's row: 0 for interfaces nothing sits below (NICs),
  // one more than the highest interface below it otherwise.
  level: number;
  x: number;
  y: number;
  iface: Iface;
}

export interface GraphEdge {
  id: string;
  kind: EdgeKind;
  // source is the lower interface (the port, the base), target the upper
  // one (the controller, the VLAN).
  source: string;
  target: string;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

// Layout constants (SVG units).
export const NODE_WIDTH = 150;
export const NODE_HEIGHT = 60;
const COLUMN = 190;
const ROW = 130;
// A row longer than this wraps: a node with hundreds of NICs stays a
// rectangle rather than one line many screens wide.
export const ROW_WRAP = 20;

// Interface types whose base interface is named by `<type>.base-iface`.
const baseKeys: Record<string, string> = {
  vlan: 'vlan',
  'mac-vlan': 'mac-vlan',
  'mac-vtap': 'mac-vtap',
  vxlan: 'vxlan',
  ipvlan: 'ipvlan',
  infiniband: 'infiniband',
  hsr: 'hsr',
  macsec: 'macsec',
};

// nodeId is the graph id of an interface. An OVS bridge and its internal
// interface share a name, so the bridge gets a prefix; every other
// interface is its own name (what ports refer to).
export function nodeId(name: string, type: string | undefined): string {
  return type === 'ovs-bridge' ? `ovs-bridge/${name}` : name;
}

export function edgeId(kind: EdgeKind, source: string, target: string): string {
  return `${kind}:${source}->${target}`;
}

export function addresses(iface: Iface): string[] {
  const out: string[] = [];
  for (const fam of [iface.ipv4, iface.ipv6]) {
    for (const a of fam?.address ?? []) {
      out.push(`${a.ip}/${a['prefix-length']}`);
    }
  }
  return out;
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function names(v: unknown): string[] {
  if (!Array.isArray(v)) return [];
  return v.flatMap((p) => (typeof p === 'string' ? [p] : typeof obj(p)?.name === 'string' ? [obj(p)!.name as string] : []));
}

// portsOf lists the names of the ports an interface controls, from
// whichever of nmstate's shapes it has.
export function portsOf(iface: Iface): string[] {
  const t = iface.type ?? '';
  if (t === 'bond') {
    const la = obj(iface['link-aggregation']);
    return [...names(la?.port), ...names(la?.ports)];
  }
  if (t === 'linux-bridge' || t === 'ovs-bridge') {
    const out: string[] = [];
    for (const p of (obj(iface.bridge)?.port as unknown[]) ?? []) {
      const po = obj(p);
      if (!po) continue;
      // An OVS bond port lists its members under link-aggregation.
      const la = obj(po['link-aggregation']);
      if (la) out.push(...names(la.port));
      else if (typeof po.name === 'string') out.push(po.name);
    }
    return out;
  }
  if (t === 'vrf') {
    const v = obj(iface.vrf);
    return [...names(v?.port), ...names(v?.ports)];
  }
  if (t === 'team') return names(obj(iface.team)?.ports);
  return [];
}

// baseOf is the name of the interface a stacked interface sits on.
export function baseOf(iface: Iface): string | undefined {
  const key = baseKeys[iface.type ?? ''];
  if (!key) return undefined;
  const b = obj(iface[key])?.['base-iface'];
  return typeof b === 'string' ? b : undefined;
}

// peerOf is the other end of a veth pair.
export function peerOf(iface: Iface): string | undefined {
  const p = obj(iface.veth)?.peer;
  return typeof p === 'string' ? p : undefined;
}

// buildGraph turns a node's interfaces into a laid-out graph. Edges to
// interfaces the state does not list are left out: there is nothing to
// draw them to.
export function buildGraph(ifaces: Iface[], types?: ReadonlySet<string>): Graph {
  const shown = ifaces.filter((i) => typeof i?.name === 'string' && (!types || types.has(i.type ?? 'unknown')));
  const byName = new Map<string, string>(); // port name -> node id
  for (const i of shown) {
    if (i.type !== 'ovs-bridge' || !byName.has(i.name)) byName.set(i.name, nodeId(i.name, i.type));
  }
  const edges = new Map<string, GraphEdge>();
  const add = (kind: EdgeKind, sourceName: string, target: string) => {
    const source = byName.get(sourceName);
    if (!source || source === target) return;
    const id = edgeId(kind, source, target);
    edges.set(id, { id, kind, source, target });
  };
  for (const i of shown) {
    const id = nodeId(i.name, i.type);
    for (const p of portsOf(i)) add('port', p, id);
    const base = baseOf(i);
    if (base) add('base', base, id);
    // A port that names its controller (nmstate's `controller`) when the
    // controller lists no ports.
    if (typeof i.controller === 'string' && i.controller !== '') {
      const ctl = shown.find((c) => c.name === i.controller && portsOf(c).length === 0 && c.type !== 'ovs-interface');
      if (ctl) add('port', i.name, nodeId(ctl.name, ctl.type));
    }
    // One edge per pair: from the end whose name sorts first.
    const peer = peerOf(i);
    if (peer && i.name < peer && byName.has(peer)) add('peer', i.name, byName.get(peer)!);
  }
  const edgeList = [...edges.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const levels = levelsOf(shown.map((i) => nodeId(i.name, i.type)), edgeList);
  const nodes: GraphNode[] = shown.map((i) => {
    const id = nodeId(i.name, i.type);
    return {
      id,
      name: i.name,
      type: i.type ?? 'unknown',
      state: i.state ?? 'unknown',
      mtu: i.mtu,
      addresses: addresses(i),
      level: levels.get(id) ?? 0,
      x: 0,
      y: 0,
      iface: i,
    };
  });
  layout(nodes);
  return { nodes, edges: edgeList };
}

// levelsOf gives each node one more than the highest node below it (its
// ports, its base); peers share a level. A cycle (a broken state) stops at
// the node it comes back to.
function levelsOf(ids: string[], edges: GraphEdge[]): Map<string, number> {
  const below = new Map<string, string[]>();
  for (const e of edges) {
    if (e.kind === 'peer') continue;
    below.set(e.target, [...(below.get(e.target) ?? []), e.source]);
  }
  const level = new Map<string, number>();
  const visiting = new Set<string>();
  const visit = (id: string): number => {
    const known = level.get(id);
    if (known !== undefined) return known;
    if (visiting.has(id)) return 0;
    visiting.add(id);
    let l = 0;
    for (const b of below.get(id) ?? []) l = Math.max(l, visit(b) + 1);
    visiting.delete(id);
    level.set(id, l);
    return l;
  };
  for (const id of ids) visit(id);
  return level;
}

// layout places the nodes in rows by level, the lowest level (NICs) at the
// bottom, each row sorted by name and wrapped at ROW_WRAP.
function layout(nodes: GraphNode[]) {
  const rows = new Map<number, GraphNode[]>();
  for (const n of nodes) rows.set(n.level, [...(rows.get(n.level) ?? []), n]);
  const levels = [...rows.keys()].sort((a, b) => b - a);
  let y = 0;
  for (const l of levels) {
    const row = rows.get(l)!.sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
    for (let k = 0; k < row.length; k++) {
      row[k].x = (k % ROW_WRAP) * COLUMN;
      row[k].y = y + Math.floor(k / ROW_WRAP) * ROW;
    }
    y += Math.ceil(row.length / ROW_WRAP) * ROW;
  }
}

// interfaceTypes lists the types present, for the type filter.
export function interfaceTypes(ifaces: Iface[]): string[] {
  return [...new Set(ifaces.map((i) => i.type ?? 'unknown'))].sort();
}
