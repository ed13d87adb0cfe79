import { test } from 'node:test';
import assert from 'node:assert/strict';
import { filterSort, NodeNetworkState, summarise } from './nns';
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
