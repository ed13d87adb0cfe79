// nns.ts summarises node network states for the table: pure, tested in
// states.test.ts.
import { addresses, Iface } from './graph';
import type { Condition, Resource } from './policy';

export interface NodeNetworkState extends Resource {
  status?: {
    currentState?: {
      interfaces?: Iface[];
      routes?: { running?: unknown[]; config?: unknown[] };
      'dns-resolver'?: unknown;
      [k: string]: unknown;
    };
    lastSuccessfulUpdateTime?: string;
    hostNetworkManagerVersion?: string;
    handlerNmstateVersion?: string;
    handlerNetworkManagerVersion?: string;
    conditions?: Condition[];
  };
}

export interface LLDPNeighbour {
  iface: string;
  // chassis and port as the neighbour announces them (TLVs 1 and 2),
  // system its name (TLV 5), when present.
  chassis?: string;
  port?: string;
  system?: string;
}

export interface StateRow {
  node: string;
  interfaces: number;
  byType: [string, number][];
  addresses: string[];
  routes: number;
  lldp: LLDPNeighbour[];
  handlerVersion: string;
  backend: string;
  updated: string;
  // extensions are knmstate.io/ annotations (knmstate's extensions: plans
  // of dry-runs, drift), shown as they are.
  extensions: [string, string][];
  nns: NodeNetworkState;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
}

// lldpOf reads nmstate's lldp.neighbors: a list per neighbour of TLV
// objects (type 1 chassis-id, 2 port-id, 5 system-name).
export function lldpOf(iface: Iface): LLDPNeighbour[] {
  const lldp = iface.lldp as { neighbors?: unknown[] } | undefined;
  const out: LLDPNeighbour[] = [];
  for (const n of lldp?.neighbors ?? []) {
    if (!Array.isArray(n)) continue;
    const nb: LLDPNeighbour = { iface: iface.name };
    for (const tlv of n as Record<string, unknown>[]) {
      if (tlv?.type === 1) nb.chassis = str(tlv['chassis-id']);
      if (tlv?.type === 2) nb.port = str(tlv['port-id']);
      if (tlv?.type === 5) nb.system = str(tlv['system-name']);
    }
    out.push(nb);
  }
  return out;
}

export function summarise(nns: NodeNetworkState): StateRow {
  const cs = nns.status?.currentState ?? {};
  const ifaces = cs.interfaces ?? [];
  const types = new Map<string, number>();
  for (const i of ifaces) types.set(i.type ?? 'unknown', (types.get(i.type ?? 'unknown') ?? 0) + 1);
  const st = nns.status ?? {};
  return {
    node: nns.metadata.name,
    interfaces: ifaces.length,
    byType: [...types.entries()].sort((a, b) => a[0].localeCompare(b[0])),
    addresses: ifaces.filter((i) => i.type !== 'loopback').flatMap(addresses),
    routes: cs.routes?.running?.length ?? 0,
    lldp: ifaces.flatMap(lldpOf),
    handlerVersion: st.handlerNmstateVersion ?? '',
    backend: st.handlerNetworkManagerVersion || st.hostNetworkManagerVersion || '',
    updated: st.lastSuccessfulUpdateTime ?? '',
    extensions: Object.entries(nns.metadata.annotations ?? {})
      .filter(([k]) => k.startsWith('knmstate.io/'))
      .sort(),
    nns,
  };
}

export type SortKey = 'node' | 'interfaces' | 'addresses' | 'routes' | 'lldp' | 'handlerVersion' | 'backend' | 'updated';

function key(r: StateRow, k: SortKey): string | number {
  switch (k) {
    case 'addresses':
      return r.addresses.length;
    case 'lldp':
      return r.lldp.length;
    default:
      return r[k];
  }
}

// filterSort keeps the rows whose node, interface names, types or
// addresses contain the search text, sorted by one column.
export function filterSort(rows: StateRow[], search: string, by: SortKey, asc: boolean): StateRow[] {
  const s = search.trim().toLowerCase();
  const hit = (r: StateRow) =>
    s === '' ||
    r.node.toLowerCase().includes(s) ||
    r.addresses.some((a) => a.includes(s)) ||
    (r.nns.status?.currentState?.interfaces ?? []).some((i) => i.name.toLowerCase().includes(s) || (i.type ?? '').includes(s));
  const out = rows.filter(hit);
  out.sort((a, b) => {
    const x = key(a, by);
    const y = key(b, by);
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
    return asc ? c : -c;
  });
  return out;
}
