import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildGraph, edgeId, interfaceTypes, Iface, ROW_WRAP } from './graph';

// A lab node after a bond + VLAN + bridge policy, as the handler reports it.
const stacked: Iface[] = [
  { name: 'lo', type: 'loopback', state: 'up', mtu: 65536, ipv4: { enabled: true, address: [{ ip: '127.0.0.1', 'prefix-length': 8 }] } },
  { name: 'eth1', type: 'ethernet', state: 'up', mtu: 1500, controller: 'bond0' },
  { name: 'eth2', type: 'ethernet', state: 'up', mtu: 1500, controller: 'bond0' },
  { name: 'bond0', type: 'bond', state: 'up', mtu: 1500, 'link-aggregation': { mode: 'active-backup', port: ['eth1', 'eth2'] } },
  { name: 'bond0.100', type: 'vlan', state: 'up', vlan: { 'base-iface': 'bond0', id: 100 }, controller: 'br0' },
  {
    name: 'br0',
    type: 'linux-bridge',
    state: 'up',
    ipv4: { enabled: true, address: [{ ip: '192.0.2.10', 'prefix-length': 24 }] },
    ipv6: { enabled: true, address: [{ ip: '2001:db8::10', 'prefix-length': 64 }] },
    bridge: { port: [{ name: 'bond0.100' }] },
  },
];

test('bond, VLAN on the bond, bridge on the VLAN: the edges and rows', () => {
  const g = buildGraph(stacked);
  assert.deepEqual(
    g.edges.map((e) => e.id),
    [
      edgeId('base', 'bond0', 'bond0.100'),
      edgeId('port', 'bond0.100', 'br0'),
      edgeId('port', 'eth1', 'bond0'),
      edgeId('port', 'eth2', 'bond0'),
    ],
  );
  const level = Object.fromEntries(g.nodes.map((n) => [n.name, n.level]));
  assert.deepEqual(level, { lo: 0, eth1: 0, eth2: 0, bond0: 1, 'bond0.100': 2, br0: 3 });
  const br0 = g.nodes.find((n) => n.name === 'br0')!;
  assert.deepEqual(br0.addresses, ['192.0.2.10/24', '2001:db8::10/64']);
  // Upper interfaces are drawn above lower ones.
  const y = Object.fromEntries(g.nodes.map((n) => [n.name, n.y]));
  assert.ok(y.br0 < y['bond0.100'] && y['bond0.100'] < y.bond0 && y.bond0 < y.eth1);
});

test('each kind of relation', () => {
  const cases: { name: string; ifaces: Iface[]; want: string[] }[] = [
    {
      name: 'OVS bridge sharing its name with its internal interface, OVS bond port',
      ifaces: [
        { name: 'br-ex', type: 'ovs-bridge', bridge: { port: [{ name: 'br-ex' }, { name: 'ovs-bond', 'link-aggregation': { port: [{ name: 'eth1' }, { name: 'eth2' }] } }] } },
        { name: 'br-ex', type: 'ovs-interface' },
        { name: 'eth1', type: 'ethernet' },
        { name: 'eth2', type: 'ethernet' },
      ],
      want: ['port:br-ex->ovs-bridge/br-ex', 'port:eth1->ovs-bridge/br-ex', 'port:eth2->ovs-bridge/br-ex'],
    },
    {
      name: 'MAC-VLAN, VXLAN and VRF',
      ifaces: [
        { name: 'eth0', type: 'ethernet' },
        { name: 'mv0', type: 'mac-vlan', 'mac-vlan': { 'base-iface': 'eth0', mode: 'bridge' } },
        { name: 'vx0', type: 'vxlan', vxlan: { 'base-iface': 'eth0', id: 42 } },
        { name: 'red', type: 'vrf', vrf: { port: ['mv0'], 'route-table-id': 100 } },
      ],
      want: ['base:eth0->mv0', 'base:eth0->vx0', 'port:mv0->red'],
    },
    {
      name: 'veth pair: one edge',
      ifaces: [
        { name: 'veth-b', type: 'veth', veth: { peer: 'veth-a' } },
        { name: 'veth-a', type: 'veth', veth: { peer: 'veth-b' } },
      ],
      want: ['peer:veth-a->veth-b'],
    },
    {
      name: 'port named only by its controller field',
      ifaces: [
        { name: 'br1', type: 'linux-bridge' },
        { name: 'eth3', type: 'ethernet', controller: 'br1' },
      ],
      want: ['port:eth3->br1'],
    },
    {
      name: 'ports the state does not list are left out',
      ifaces: [{ name: 'bond1', type: 'bond', 'link-aggregation': { port: ['gone0'] } }],
      want: [],
    },
    {
      name: 'a cycle (broken state) still ends',
      ifaces: [
        { name: 'a', type: 'vlan', vlan: { 'base-iface': 'b', id: 1 } },
        { name: 'b', type: 'vlan', vlan: { 'base-iface': 'a', id: 2 } },
      ],
      want: ['base:a->b', 'base:b->a'],
    },
  ];
  for (const c of cases) {
    assert.deepEqual(buildGraph(c.ifaces).edges.map((e) => e.id), c.want, c.name);
  }
});

test('type filter drops the nodes and their edges', () => {
  const g = buildGraph(stacked, new Set(['bond', 'ethernet']));
  assert.deepEqual(g.nodes.map((n) => n.name).sort(), ['bond0', 'eth1', 'eth2']);
  assert.deepEqual(g.edges.map((e) => e.id), ['port:eth1->bond0', 'port:eth2->bond0']);
  assert.deepEqual(interfaceTypes(stacked), ['bond', 'ethernet', 'linux-bridge', 'loopback', 'vlan']);
});

test('500 interfaces: every node placed once, rows wrapped', () => {
  const ifaces: Iface[] = [];
  for (let i = 0; i < 250; i++) {
    ifaces.push({ name: `veth${i}a`, type: 'veth', veth: { peer: `veth${i}b` } });
    ifaces.push({ name: `veth${i}b`, type: 'veth', veth: { peer: `veth${i}a` } });
  }
  const g = buildGraph(ifaces);
  assert.equal(g.nodes.length, 500);
  assert.equal(g.edges.length, 250);
  const places = new Set(g.nodes.map((n) => `${n.x},${n.y}`));
  assert.equal(places.size, 500);
  assert.equal(Math.max(...g.nodes.map((n) => n.x)), (ROW_WRAP - 1) * 190);
});
