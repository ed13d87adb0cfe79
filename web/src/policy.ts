// policy.ts holds the pure logic of the policies view: the enactment
// state of a policy on each node, the counts the list shows, the policies
// that touch an interface, and the NNCP the creation form describes.

export interface ObjectMeta {
  name: string;
  resourceVersion?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
  generation?: number;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface Resource {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface Policy extends Resource {
  spec?: {
    nodeSelector?: Record<string, string>;
    desiredState?: { interfaces?: { name?: string; [k: string]: unknown }[]; [k: string]: unknown };
    [k: string]: unknown;
  };
  status?: { conditions?: Condition[]; [k: string]: unknown };
}

export interface Enactment extends Resource {
  status?: { conditions?: Condition[]; policyGeneration?: number; [k: string]: unknown };
}

// The enactment states, in the order the list shows them.
export const enactmentStates = ['Available', 'Progressing', 'Failing', 'Aborted', 'Pending'] as const;
export type EnactmentState = (typeof enactmentStates)[number];

// Labels the handler puts on an enactment (api/shared/labels.go).
export const policyLabel = 'nmstate.io/policy';
export const nodeLabel = 'nmstate.io/node';

// enactmentState is the condition that is True, if any of the five is.
export function enactmentState(e: Enactment): EnactmentState | undefined {
  for (const c of e.status?.conditions ?? []) {
    if (c.status === 'True' && (enactmentStates as readonly string[]).includes(c.type)) return c.type as EnactmentState;
  }
  return undefined;
}

// enactmentMessage is the message of the True condition, the reason a
// failing node gives.
export function enactmentMessage(e: Enactment): string {
  const c = (e.status?.conditions ?? []).find((c) => c.status === 'True');
  return c?.message ?? '';
}

export function enactmentPolicy(e: Enactment): string {
  return e.metadata.labels?.[policyLabel] ?? e.metadata.name.slice(e.metadata.name.indexOf('.') + 1);
}

// enactmentNode is the node of an enactment: its label, or the part of its
// name "<node>.<policy>" before the policy.
export function enactmentNode(e: Enactment): string {
  const l = e.metadata.labels?.[nodeLabel];
  if (l) return l;
  const p = enactmentPolicy(e);
  const n = e.metadata.name;
  return n.endsWith('.' + p) ? n.slice(0, n.length - p.length - 1) : n;
}

export type Counts = Record<EnactmentState, number>;

export function emptyCounts(): Counts {
  return { Available: 0, Progressing: 0, Failing: 0, Aborted: 0, Pending: 0 };
}

// countsByPolicy counts each policy's enactments by state.
export function countsByPolicy(enactments: Enactment[]): Map<string, Counts> {
  const out = new Map<string, Counts>();
  for (const e of enactments) {
    const p = enactmentPolicy(e);
    const s = enactmentState(e);
    if (!out.has(p)) out.set(p, emptyCounts());
    if (s) out.get(p)![s]++;
  }
  return out;
}

export function enactmentsOf(policy: string, enactments: Enactment[]): Enactment[] {
  return enactments
    .filter((e) => enactmentPolicy(e) === policy)
    .sort((a, b) => enactmentNode(a).localeCompare(enactmentNode(b), undefined, { numeric: true }));
}

// policyCondition is the policy's own True condition (the controller's
// aggregate: Available, Progressing, Degraded, Ignored).
export function policyCondition(p: Policy): Condition | undefined {
  return (p.status?.conditions ?? []).find((c) => c.status === 'True');
}

// policiesTouching lists the policies enacted on a node whose desired
// state names an interface (as itself or as a port of another).
export function policiesTouching(iface: string, node: string, policies: Policy[], enactments: Enactment[]): string[] {
  const onNode = new Set(enactments.filter((e) => enactmentNode(e) === node).map(enactmentPolicy));
  return policies
    .filter((p) => onNode.has(p.metadata.name))
    .filter((p) => JSON.stringify(p.spec?.desiredState?.interfaces ?? []).includes(JSON.stringify(iface)))
    .map((p) => p.metadata.name)
    .sort();
}

// The creation form.
export type FormIfaceType = 'ethernet' | 'bond' | 'linux-bridge' | 'vlan';
export type IPMode = 'disabled' | 'dhcp' | 'static';

export interface PolicyForm {
  name: string;
  // nodeSelector is "key=value" pairs, one a line or comma-separated.
  nodeSelector: string;
  ifaceName: string;
  ifaceType: FormIfaceType;
  // ports: the bond's or bridge's ports, comma-separated.
  ports: string;
  bondMode: string;
  vlanBase: string;
  vlanId: string;
  ipv4: IPMode;
  ipv4Address: string;
  ipv6: IPMode;
  ipv6Address: string;
}

export function emptyForm(): PolicyForm {
  return {
    name: '',
    nodeSelector: '',
    ifaceName: '',
    ifaceType: 'linux-bridge',
    ports: '',
    bondMode: 'active-backup',
    vlanBase: '',
    vlanId: '',
    ipv4: 'disabled',
    ipv4Address: '',
    ipv6: 'disabled',
    ipv6Address: '',
  };
}

function list(s: string): string[] {
  return s
    .split(/[,\s]+/)
    .map((x) => x.trim())
    .filter((x) => x !== '');
}

// parseSelector reads "k=v" pairs; a pair without "=" is an error naming it.
export function parseSelector(s: string): { selector: Record<string, string>; error?: string } {
  const selector: Record<string, string> = {};
  for (const pair of s.split(/[,\n]+/).map((x) => x.trim()).filter((x) => x !== '')) {
    const i = pair.indexOf('=');
    if (i <= 0) return { selector, error: `"${pair}" is not key=value` };
    selector[pair.slice(0, i).trim()] = pair.slice(i + 1).trim();
  }
  return { selector };
}

function ipConfig(mode: IPMode, addrs: string, v6: boolean): Record<string, unknown> {
  if (mode === 'disabled') return { enabled: false };
  if (mode === 'dhcp') return v6 ? { enabled: true, dhcp: true, autoconf: true } : { enabled: true, dhcp: true };
  const address = list(addrs).map((a) => {
    const [ip, prefix] = a.split('/');
    return { ip, 'prefix-length': prefix === undefined ? NaN : Number(prefix) };
  });
  return v6 ? { enabled: true, dhcp: false, autoconf: false, address } : { enabled: true, dhcp: false, address };
}

// formErrors are the mistakes the form can see itself, by form field;
// everything else is the API server's (dry-run) to say.
export function formErrors(f: PolicyForm): Partial<Record<keyof PolicyForm, string>> {
  const e: Partial<Record<keyof PolicyForm, string>> = {};
  if (f.name.trim() === '') e.name = 'a policy needs a name';
  if (f.ifaceName.trim() === '') e.ifaceName = 'an interface needs a name';
  const sel = parseSelector(f.nodeSelector);
  if (sel.error) e.nodeSelector = sel.error;
  if (f.ifaceType === 'vlan') {
    if (f.vlanBase.trim() === '') e.vlanBase = 'a VLAN needs a base interface';
    if (!/^\d+$/.test(f.vlanId.trim())) e.vlanId = 'a VLAN id is a number (0-4094)';
  }
  for (const [fam, field] of [
    ['ipv4', 'ipv4Address'],
    ['ipv6', 'ipv6Address'],
  ] as const) {
    if (f[fam] !== 'static') continue;
    const addrs = list(f[field]);
    if (addrs.length === 0) e[field] = 'a static address is ADDRESS/PREFIX';
    for (const a of addrs) if (!/^[^/]+\/\d+$/.test(a)) e[field] = `"${a}" is not ADDRESS/PREFIX`;
  }
  return e;
}

// policyFromForm is the NNCP the form describes.
export function policyFromForm(f: PolicyForm): Policy {
  const iface: Record<string, unknown> = { name: f.ifaceName.trim(), type: f.ifaceType, state: 'up' };
  const ports = list(f.ports);
  if (f.ifaceType === 'bond') {
    iface['link-aggregation'] = { mode: f.bondMode, port: ports };
  } else if (f.ifaceType === 'linux-bridge') {
    iface.bridge = { options: { stp: { enabled: false } }, port: ports.map((name) => ({ name })) };
  } else if (f.ifaceType === 'vlan') {
    iface.vlan = { 'base-iface': f.vlanBase.trim(), id: Number(f.vlanId.trim()) };
  }
  iface.ipv4 = ipConfig(f.ipv4, f.ipv4Address, false);
  iface.ipv6 = ipConfig(f.ipv6, f.ipv6Address, true);
  const spec: Policy['spec'] = { desiredState: { interfaces: [iface as { name: string }] } };
  const sel = parseSelector(f.nodeSelector).selector;
  if (Object.keys(sel).length > 0) spec.nodeSelector = sel;
  return {
    apiVersion: 'nmstate.io/v1',
    kind: 'NodeNetworkConfigurationPolicy',
    metadata: { name: f.name.trim() },
    spec,
  };
}

// fieldOfCause maps the field path of an API error cause (the admission
// webhook's or the CRD schema's) to the form field it is about; "" when no
// field of the form says it.
export function fieldOfCause(path: string): keyof PolicyForm | '' {
  const p = path.replace(/^spec\.desiredState\./, '').replace(/^interfaces\[[^\]]*\]\.?/, '');
  if (path === 'metadata.name' || path.startsWith('metadata.name')) return 'name';
  if (path.startsWith('spec.nodeSelector')) return 'nodeSelector';
  if (!path.startsWith('spec.desiredState.interfaces')) return '';
  if (p === '' || p === 'name') return 'ifaceName';
  if (p.startsWith('ipv4')) return 'ipv4Address';
  if (p.startsWith('ipv6')) return 'ipv6Address';
  if (p.startsWith('vlan.base-iface')) return 'vlanBase';
  if (p.startsWith('vlan')) return 'vlanId';
  if (p.startsWith('link-aggregation.mode')) return 'bondMode';
  if (p.startsWith('link-aggregation') || p.startsWith('bridge')) return 'ports';
  if (p.startsWith('type')) return 'ifaceType';
  return 'ifaceName';
}
