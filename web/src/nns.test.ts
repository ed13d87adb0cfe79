import { test } from 'node:test';
import assert from 'node:assert/strict';
import { filterSort, NodeNetworkState, runningRoutes, summarise } from './nns';
import type { Iface } from './graph';

function nns(node: string, ifaces: unknown[], routes = 0): NodeNetworkState {
  return {
    metadata: { name: node, annotations: { 'knmstate.io/drift': 'eth1 mtu 9000 != 1500', other: 'x' } },
    status: {
      currentState: { interfaces: ifaces as Iface[], routes: { running: new Array(routes).fill({}) } },
      handlerNmstateVersion: 'knmstate v1',
      hostNetworkManagerVersion: '',
    },
  } as NodeNetworkState;
}

const node1 = nns(
  'node1',
  [
    { name: 'lo', type: 'loopback', ipv4: { address: [{ ip: '127.0.0.1', 'prefix-length': 8 }] } },
    {
      name: 'eth0',
      type: 'ethernet',
      ipv4: { address: [{ ip: '192.0.2.11', 'prefix-length': 24 }] },
      lldp: {
        enabled: true,
        neighbors: [
          [
            { type: 1, 'chassis-id': '00:11:22:33:44:55' },
            { type: 2, 'port-id': 'Ethernet1/1' },
            { type: 5, 'system-name': 'tor-1' },
          ],
        ],
      },
    },
    { name: 'eth1', type: 'ethernet' },
  ],
  4,
);
const node2 = nns('node2', [{ name: 'br0', type: 'linux-bridge', ipv4: { address: [{ ip: '192.0.2.12', 'prefix-length': 24 }] } }], 1);
const node10 = nns('node10', [], 9);

test('summary of a node', () => {
  const r = summarise(node1);
  assert.equal(r.interfaces, 3);
  assert.deepEqual(r.byType, [
    ['ethernet', 2],
    ['loopback', 1],
  ]);
  assert.deepEqual(r.addresses, ['192.0.2.11/24']);
  assert.equal(r.routes, 4);
  assert.deepEqual(r.lldp, [{ iface: 'eth0', chassis: '00:11:22:33:44:55', port: 'Ethernet1/1', system: 'tor-1' }]);
  assert.deepEqual(r.extensions, [['knmstate.io/drift', 'eth1 mtu 9000 != 1500']]);
});

test('search and sort', () => {
  const rows = [node10, node2, node1].map(summarise);
  const names = (by: Parameters<typeof filterSort>[2], asc: boolean, s = '') => filterSort(rows, s, by, asc).map((r) => r.node);
  assert.deepEqual(names('node', true), ['node1', 'node2', 'node10']);
  assert.deepEqual(names('routes', false), ['node10', 'node1', 'node2']);
  assert.deepEqual(names('node', true, 'bridge'), ['node2']);
  assert.deepEqual(names('node', true, '192.0.2.11'), ['node1']);
  assert.deepEqual(names('node', true, 'ETH1'), ['node1']);
});

test('a compact-v1 state counts the configured routes it leaves out of running', () => {
  const r1 = { destination: '198.51.100.0/24', 'next-hop-interface': 'eth1', metric: 0 };
  const r2 = { destination: '203.0.113.0/24', 'next-hop-interface': 'eth1', metric: 0 };
  // r1 again, its keys in another order: the same route.
  const r1b = { metric: 0, 'next-hop-interface': 'eth1', destination: '198.51.100.0/24' };
  const dflt = { destination: '0.0.0.0/0', 'next-hop-interface': 'eth0', metric: 100 };
  const state = (encoding?: string) =>
    ({
      metadata: { name: 'n', annotations: encoding ? { 'knmstate.io/nns-encoding': encoding } : {} },
      status: { currentState: { interfaces: [], routes: { config: [r1, r2], running: [dflt, r1b] } } },
    }) as NodeNetworkState;
  assert.deepEqual(runningRoutes(state('compact-v1')), [dflt, r1b, r2]);
  assert.equal(summarise(state('compact-v1')).routes, 3);
  // Without the annotation the state is the full one, taken as it is.
  assert.deepEqual(runningRoutes(state()), [dflt, r1b]);
  assert.equal(summarise(state()).routes, 2);
});
