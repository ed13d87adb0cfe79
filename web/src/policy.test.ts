import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  countsByPolicy,
  emptyForm,
  enactmentNode,
  Enactment,
  fieldOfCause,
  formErrors,
  policiesTouching,
  Policy,
  policyFromForm,
} from './policy';

function enactment(node: string, policy: string, state?: string, message = ''): Enactment {
  return {
    metadata: { name: `${node}.${policy}`, labels: { 'nmstate.io/policy': policy, 'nmstate.io/node': node } },
    status: {
      conditions: ['Available', 'Failing', 'Progressing', 'Pending', 'Aborted'].map((t) => ({
        type: t,
        status: t === state ? 'True' : 'False',
        message: t === state ? message : '',
      })),
    },
  };
}

test('counts by policy and state', () => {
  const counts = countsByPolicy([
    enactment('node1', 'br', 'Available'),
    enactment('node2', 'br', 'Failing', 'no such port eth9'),
    enactment('node3', 'br', 'Available'),
    enactment('node1', 'bond', 'Pending'),
    enactment('node2', 'bond'),
  ]);
  assert.deepEqual(counts.get('br'), { Available: 2, Progressing: 0, Failing: 1, Aborted: 0, Pending: 0 });
  assert.deepEqual(counts.get('bond'), { Available: 0, Progressing: 0, Failing: 0, Aborted: 0, Pending: 1 });
});

test('node of an enactment without labels: from its name', () => {
  assert.equal(enactmentNode({ metadata: { name: 'node.with.dots.pol', labels: { 'nmstate.io/policy': 'pol' } } }), 'node.with.dots');
});

test('policies touching an interface on a node', () => {
  const p = (name: string, ifaces: unknown[]): Policy => ({ metadata: { name }, spec: { desiredState: { interfaces: ifaces as { name: string }[] } } });
  const policies = [
    p('bridge', [{ name: 'br0', bridge: { port: [{ name: 'eth1' }] } }]),
    p('other', [{ name: 'eth1' }]),
    p('eth10', [{ name: 'eth10' }]),
  ];
  const enactments = [enactment('node1', 'bridge', 'Available'), enactment('node1', 'eth10', 'Available'), enactment('node2', 'other')];
  assert.deepEqual(policiesTouching('eth1', 'node1', policies, enactments), ['bridge']);
  assert.deepEqual(policiesTouching('eth1', 'node2', policies, enactments), ['other']);
});

test('the form makes a policy', () => {
  const f = {
    ...emptyForm(),
    name: 'vlan-100',
    nodeSelector: 'kubernetes.io/hostname=node1',
    ifaceName: 'eth1.100',
    ifaceType: 'vlan' as const,
    vlanBase: 'eth1',
    vlanId: '100',
    ipv4: 'static' as const,
    ipv4Address: '192.0.2.5/24',
    ipv6: 'dhcp' as const,
  };
  assert.deepEqual(formErrors(f), {});
  assert.deepEqual(policyFromForm(f), {
    apiVersion: 'nmstate.io/v1',
    kind: 'NodeNetworkConfigurationPolicy',
    metadata: { name: 'vlan-100' },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': 'node1' },
      desiredState: {
        interfaces: [
          {
            name: 'eth1.100',
            type: 'vlan',
            state: 'up',
            vlan: { 'base-iface': 'eth1', id: 100 },
            ipv4: { enabled: true, dhcp: false, address: [{ ip: '192.0.2.5', 'prefix-length': 24 }] },
            ipv6: { enabled: true, dhcp: true, autoconf: true },
          },
        ],
      },
    },
  });
});

test('the form sees its own mistakes', () => {
  const e = formErrors({ ...emptyForm(), ifaceType: 'vlan', vlanId: 'x', nodeSelector: 'nolabel', ipv4: 'static', ipv4Address: '10.0.0.1' });
  assert.deepEqual(Object.keys(e).sort(), ['ifaceName', 'ipv4Address', 'name', 'nodeSelector', 'vlanBase', 'vlanId']);
});

test('API error causes land on their form field', () => {
  const cases: [string, string][] = [
    ['metadata.name', 'name'],
    ['spec.nodeSelector', 'nodeSelector'],
    ['spec.desiredState.interfaces[0].vlan.id', 'vlanId'],
    ['spec.desiredState.interfaces[0].vlan.base-iface', 'vlanBase'],
    ['spec.desiredState.interfaces[0].ipv4.address[0].ip', 'ipv4Address'],
    ['spec.desiredState.interfaces[0].link-aggregation.mode', 'bondMode'],
    ['spec.desiredState.interfaces[0].bridge.port[1].name', 'ports'],
    ['spec.desiredState.interfaces[0]', 'ifaceName'],
    ['spec.desiredState.routes.config[0]', ''],
    ['spec.capture.x', ''],
  ];
  for (const [path, want] of cases) assert.equal(fieldOfCause(path), want, path);
});
