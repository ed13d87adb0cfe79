package nmstate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// noCurrent and emptyCurrent select the current state a case validates
// against: unknown (nil), or a system with nothing on it.
const (
	noCurrent    = ""
	emptyCurrent = "{}"
)

func TestInvalidDocuments(t *testing.T) {
	type want struct {
		path   string
		reason string
		kind   nmstate.Kind
	}
	cases := []struct {
		name    string
		doc     string
		current string
		want    []want
	}{
		// Decoding.
		{"bad bond mode", `
interfaces:
- name: eth0
  type: ethernet
- name: bond0
  type: bond
  link-aggregation:
    mode: balance-xx`, noCurrent, []want{{"interfaces[1].link-aggregation.mode",
			`"balance-xx" is not one of balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb, balance-alb`, nmstate.InvalidArgument}}},
		{"unknown key", `
interfaces:
- name: eth1
  type: ethernet
  speling: 1`, noCurrent, []want{{"interfaces[0].speling", "unknown field", nmstate.InvalidArgument}}},
		{"unknown top-level key", `capabilities: []`, noCurrent, []want{{"capabilities", "unknown field", nmstate.InvalidArgument}}},
		// Keys and values of nmstate releases after the engine's base: named
		// with their release, not "unknown field" (docs/schema.md).
		{"made-up route key", `
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-interface: eth1, foo: 1}`, noCurrent,
			[]want{{"routes.config[0].foo", "unknown field", nmstate.InvalidArgument}}},
		{"newer interface key", `
interfaces:
- name: eth1
  type: ethernet
  pci-address: "0000:07:00.0"`, noCurrent, []want{{"interfaces[0].pci-address",
			"not supported by knmstate yet (added in nmstate 2.2.47)", nmstate.NotSupported}}},
		{"alt name is the interface's name", `
interfaces:
- name: eth1
  type: ethernet
  alt-names: [{name: eth1}]`, noCurrent, []want{{"interfaces[0].alt-names[0].name", "alternative name eth1 is the interface's own name", nmstate.InvalidArgument}}},
		{"alt name listed twice", `
interfaces:
- name: eth1
  type: ethernet
  alt-names: [{name: port1}, {name: port1, state: absent}]`, noCurrent, []want{{"interfaces[0].alt-names[1].name", "port1 is listed twice", nmstate.InvalidArgument}}},
		{"alt name of another interface", `
interfaces:
- name: eth1
  type: ethernet
  alt-names: [{name: eth2}]
- name: eth2
  type: ethernet`, noCurrent, []want{{"interfaces[0].alt-names[0].name", "alternative name eth2 of eth1 is already a name of interface eth2", nmstate.InvalidArgument}}},
		{"alt name with a slash", `
interfaces:
- name: eth1
  type: ethernet
  alt-names: [{name: a/b}]`, noCurrent, []want{{"interfaces[0].alt-names[0].name", `"a/b" is not a valid interface name`, nmstate.InvalidArgument}}},
		{"newer interface type", `
interfaces:
- name: ipip0
  type: ip-tunnel`, noCurrent, []want{{"interfaces[0].type",
			`"ip-tunnel" not supported by knmstate yet (added in nmstate 2.2.59)`, nmstate.NotSupported}}},
		{"newer identifier", `
interfaces:
- name: wan0
  type: ethernet
  identifier: pci-address`, noCurrent, []want{{"interfaces[0].identifier",
			`"pci-address" not supported by knmstate yet (added in nmstate 2.2.47)`, nmstate.NotSupported}}},
		{"newer bond option", `
interfaces:
- name: bond0
  type: bond
  link-aggregation: {mode: 802.3ad, options: {lacp_active: "on"}}`, noCurrent, []want{{"interfaces[0].link-aggregation.options.lacp_active",
			"added in nmstate 2.2.47", nmstate.NotSupported}}},
		{"newer ethtool key", `
interfaces:
- name: eth1
  type: ethernet
  ethtool: {fec: {auto: true}}`, noCurrent, []want{{"interfaces[0].ethtool.fec", "added in nmstate 2.2.43", nmstate.NotSupported}}},
		{"section of another type", `
interfaces:
- name: eth1
  type: ethernet
  vlan: {id: 3}`, noCurrent, []want{{"interfaces[0].vlan", "is not valid for interface type ethernet", nmstate.InvalidArgument}}},
		{"section without type", `
interfaces:
- name: br0
  bridge: {port: []}`, noCurrent, []want{{"interfaces[0].bridge", "needs the interface type", nmstate.InvalidArgument}}},
		{"unknown type", `
interfaces:
- name: x
  type: ethernt`, noCurrent, []want{{"interfaces[0].type", `"ethernt" is not one of ethernet`, nmstate.InvalidArgument}}},
		{"bad state", `
interfaces:
- name: x
  state: upp`, noCurrent, []want{{"interfaces[0].state", `"upp" is not one of up, down, absent, ignore`, nmstate.InvalidArgument}}},
		{"missing name", `
interfaces:
- type: dummy`, noCurrent, []want{{"interfaces[0].name", "is required", nmstate.InvalidArgument}}},
		{"mtu not an integer", `
interfaces:
- name: eth1
  mtu: big`, noCurrent, []want{{"interfaces[0].mtu", `"big" is not an integer`, nmstate.InvalidArgument}}},
		{"vlan id overflows u16", `
interfaces:
- name: v
  type: vlan
  vlan: {base-iface: eth1, id: 70000}`, noCurrent, []want{{"interfaces[0].vlan.id", "70000 is out of range 0..65535", nmstate.InvalidArgument}}},
		{"bad boolean", `
interfaces:
- name: eth1
  accept-all-mac-addresses: maybe`, noCurrent, []want{{"interfaces[0].accept-all-mac-addresses", `"maybe" is not a boolean`, nmstate.InvalidArgument}}},
		{"bad address", `
interfaces:
- name: eth1
  ipv4:
    address:
    - {ip: 192.0.2.300, prefix-length: 24}`, noCurrent, []want{{"interfaces[0].ipv4.address[0].ip", `"192.0.2.300" is not an IP address`, nmstate.InvalidArgument}}},
		{"address without prefix length", `
interfaces:
- name: eth1
  ipv4:
    address:
    - ip: 192.0.2.3`, noCurrent, []want{{"interfaces[0].ipv4.address[0].prefix-length", "is required", nmstate.InvalidArgument}}},
		{"bad mac", `
interfaces:
- name: eth1
  mac-address: 00:11:22:33:44:zz`, noCurrent, []want{{"interfaces[0].mac-address", "is not a MAC address", nmstate.InvalidArgument}}},
		{"list expected", `
interfaces:
- name: bond0
  type: bond
  link-aggregation:
    port: eth1`, noCurrent, []want{{"interfaces[0].link-aggregation.port", `expected a list, got "eth1"`, nmstate.InvalidArgument}}},
		{"port and ports both given", `
interfaces:
- name: bond0
  type: bond
  link-aggregation:
    port: [eth1]
    ports: [eth2]`, noCurrent, []want{{"interfaces[0].link-aggregation.ports", "duplicate key (also given as port)", nmstate.InvalidArgument}}},
		{"bad destination", `
routes:
  config:
  - destination: 198.51.100.0/33
    next-hop-interface: eth1`, noCurrent, []want{{"routes.config[0].destination", "is not an IP prefix", nmstate.InvalidArgument}}},
		{"interfaces not a list", `interfaces: {name: eth1}`, noCurrent, []want{{"interfaces", "expected a list, got a mapping", nmstate.InvalidArgument}}},
		{"yaml syntax", "interfaces: [\n", noCurrent, []want{{"", "invalid YAML", nmstate.InvalidArgument}}},
		{"json syntax", `{"interfaces": [}`, noCurrent, []want{{"", "invalid JSON", nmstate.InvalidArgument}}},
		{"json unknown key with path", `{"interfaces": [{"name": "eth1", "ipv4": {"enabld": true}}]}`, noCurrent,
			[]want{{"interfaces[0].ipv4.enabld", "unknown field", nmstate.InvalidArgument}}},
		{"every error is collected", `
interfaces:
- name: a
  type: vlan
  vlan: {id: x}
- name: b
  mtu: -1
routes:
  config:
  - metric: z`, noCurrent, []want{
			{"interfaces[0].vlan.id", `"x" is not an integer`, nmstate.InvalidArgument},
			{"interfaces[1].mtu", `"-1" is not an integer`, nmstate.InvalidArgument},
			{"routes.config[0].metric", `"z" is not an integer`, nmstate.InvalidArgument},
		}},

		// Validation on its own.
		{"vlan id above 4094", `
interfaces:
- name: eth1.5000
  type: vlan
  vlan: {base-iface: eth1, id: 4095}`, noCurrent, []want{{"interfaces[0].vlan.id", "4095 is out of range 0..4094", nmstate.InvalidArgument}}},
		{"ipv6 with small mtu", `
interfaces:
- name: eth1
  type: ethernet
  mtu: 1000
  ipv6: {enabled: true}`, noCurrent, []want{{"interfaces[0].mtu", "MTU should be >= 1280 when IPv6 is enabled", nmstate.InvalidArgument}}},
		{"prefix too long for ipv4", `
interfaces:
- name: eth1
  type: ethernet
  ipv4:
    enabled: true
    address: [{ip: 192.0.2.1, prefix-length: 33}]`, noCurrent, []want{{"interfaces[0].ipv4.address[0].prefix-length", "33 is out of range 0..32", nmstate.InvalidArgument}}},
		{"ipv6 address in ipv4", `
interfaces:
- name: eth1
  type: ethernet
  ipv4:
    address: [{ip: "2001:db8::1", prefix-length: 64}]`, noCurrent, []want{{"interfaces[0].ipv4.address[0].ip", "2001:db8::1 is not an IPv4 address", nmstate.InvalidArgument}}},
		{"autoconf in ipv4", `
interfaces:
- name: eth1
  type: ethernet
  ipv4: {enabled: true, autoconf: true}`, noCurrent, []want{{"interfaces[0].ipv4.autoconf", "is only valid in ipv6", nmstate.InvalidArgument}}},
		{"dhcp-client-id in ipv6", `
interfaces:
- name: eth1
  type: ethernet
  ipv6: {enabled: true, dhcp-client-id: ll}`, noCurrent, []want{{"interfaces[0].ipv6.dhcp-client-id", "is only valid in ipv4", nmstate.InvalidArgument}}},
		{"token upper bits", `
interfaces:
- name: eth1
  type: ethernet
  ipv6: {enabled: true, autoconf: true, token: "2001::1"}`, noCurrent, []want{{"interfaces[0].ipv6.token", "must have the upper 64 bits zero", nmstate.InvalidArgument}}},
		{"miimon with arp_interval", `
interfaces:
- name: bond0
  type: bond
  link-aggregation:
    mode: active-backup
    options: {miimon: 100, arp_interval: 100}`, noCurrent, []want{{"interfaces[0].link-aggregation.options.arp_interval", "miimon and arp_interval are mutually exclusive", nmstate.InvalidArgument}}},
		{"overbooked port", `
interfaces:
- name: bond0
  type: bond
  link-aggregation: {mode: balance-rr, port: [eth1]}
- name: br0
  type: linux-bridge
  bridge:
    port: [{name: eth1}]`, noCurrent, []want{{"interfaces[1].bridge.port[0].name", "port eth1 is overbooked by two controllers: bond0 and br0", nmstate.InvalidArgument}}},
		{"duplicate interface", `
interfaces:
- name: eth1
  type: ethernet
- name: eth1
  type: ethernet
  mtu: 1500`, noCurrent, []want{{"interfaces[1].name", "duplicate interface eth1 (also interfaces[0])", nmstate.InvalidArgument}}},
		{"route weight", `
routes:
  config:
  - destination: 198.51.100.0/24
    next-hop-interface: eth1
    weight: 257`, noCurrent, []want{{"routes.config[0].weight", "257 is out of range 1..256", nmstate.InvalidArgument}}},
		{"ipv6 route weight", `
routes:
  config:
  - destination: 2001:db8::/64
    next-hop-interface: eth1
    weight: 5`, noCurrent, []want{{"routes.config[0].weight", "is only supported for IPv4 routes", nmstate.NotSupported}}},
		{"route without next hop interface", `
routes:
  config:
  - destination: 198.51.100.0/24
    next-hop-address: 192.0.2.1`, noCurrent, []want{{"routes.config[0].next-hop-interface", "routes without a next hop interface are not supported", nmstate.NotSupported}}},
		{"route next hop family", `
routes:
  config:
  - destination: 198.51.100.0/24
    next-hop-interface: eth1
    next-hop-address: 2001:db8::1`, noCurrent, []want{{"routes.config[0].next-hop-address", "is not an IPv4 address", nmstate.InvalidArgument}}},
		{"route via absent interface", `
interfaces:
- name: dummy0
  type: dummy
  state: absent
routes:
  config:
  - destination: 198.51.100.0/24
    next-hop-interface: dummy0`, noCurrent, []want{{"routes.config[0].next-hop-interface", "next hop interface dummy0 is marked absent", nmstate.InvalidArgument}}},
		{"rule without selector", `
route-rules:
  config:
  - priority: 100
    route-table: 50`, noCurrent, []want{{"route-rules.config[0]", "needs at least one of ip-from, ip-to or family", nmstate.InvalidArgument}}},
		{"fwmask without fwmark", `
route-rules:
  config:
  - ip-from: 192.0.2.0/24
    fwmask: 0x10`, noCurrent, []want{{"route-rules.config[0].fwmask", "needs fwmark", nmstate.InvalidArgument}}},
		{"dns option", `
dns-resolver:
  config:
    options: [rotate, fast]`, noCurrent, []want{{"dns-resolver.config.options[1]", `unsupported DNS option "fast"`, nmstate.InvalidArgument}}},
		{"linux bridge trunk tag", `
interfaces:
- name: br0
  type: linux-bridge
  bridge:
    port:
    - name: eth1
      vlan:
        mode: trunk
        trunk-tags: [{id-range: {min: 600, max: 500}}]`, noCurrent, []want{{"interfaces[0].bridge.port[0].vlan.trunk-tags[0].id-range", "min 600 is bigger than max 500", nmstate.InvalidArgument}}},
		{"stp forward delay", `
interfaces:
- name: br0
  type: linux-bridge
  bridge:
    options:
      stp: {enabled: true, forward-delay: 1}`, noCurrent, []want{{"interfaces[0].bridge.options.stp.forward-delay", "1 is out of range 2..30", nmstate.InvalidArgument}}},
		{"vlan parent absent", `
interfaces:
- name: bond0
  type: bond
  state: absent
- name: bond0.10
  type: vlan
  vlan: {base-iface: bond0, id: 10}`, noCurrent, []want{{"interfaces[1].vlan.base-iface", "cannot be up as its parent bond0 is marked absent", nmstate.InvalidArgument}}},
		{"own controller", `
interfaces:
- name: eth2
  type: ethernet
  controller: eth2`, noCurrent, []want{{"interfaces[0].controller", "an interface cannot be its own controller", nmstate.InvalidArgument}}},
		{"ovs internal interface its bridge does not list", `
interfaces:
- name: br-ex
  type: ovs-bridge
  bridge:
    port: [{name: eth1}]
- name: br-ex
  type: ovs-interface
  controller: br-ex`, noCurrent, []want{{"interfaces[1].controller", "br-ex is not in the port list of br-ex", nmstate.InvalidArgument}}},
		{"ovs internal interface without an ovs bridge of its name", `
interfaces:
- name: br-ex
  type: ovs-interface
  controller: br-ex`, noCurrent, []want{{"interfaces[0].controller", "an interface cannot be its own controller", nmstate.InvalidArgument}}},
		{"port controller mismatch", `
interfaces:
- name: bond0
  type: bond
  link-aggregation: {mode: balance-rr, port: [eth1]}
- name: eth2
  type: ethernet
  controller: bond0`, noCurrent, []want{{"interfaces[1].controller", "eth2 is not in the port list of bond0", nmstate.InvalidArgument}}},
		{"ip on a bond port", `
interfaces:
- name: bond0
  type: bond
  link-aggregation: {mode: balance-rr, port: [eth1]}
- name: eth1
  type: ethernet
  ipv4: {enabled: true, dhcp: true}`, noCurrent, []want{{"interfaces[1].ipv4.enabled", "eth1 cannot have IP enabled as it is a port of bond bond0", nmstate.InvalidArgument}}},
		{"loopback disabled", `
interfaces:
- name: lo
  type: loopback
  ipv4: {enabled: false}`, noCurrent, []want{{"interfaces[0].ipv4.enabled", "loopback cannot have ipv4 disabled", nmstate.InvalidArgument}}},
		{"sriov vf id", `
interfaces:
- name: eth1
  type: ethernet
  ethernet:
    sr-iov:
      total-vfs: 2
      vfs: [{id: 2}]`, noCurrent, []want{{"interfaces[0].ethernet.sr-iov.vfs[0].id", "2 is out of range 0..1", nmstate.InvalidArgument}}},
		{"team", `
interfaces:
- name: team0
  type: team
  team: {port: [{name: eth1}]}`, noCurrent, []want{{"interfaces[0].type", "team is not supported", nmstate.NotSupported}}},
		{"interface name too long", `
interfaces:
- name: averyveryverylongname
  type: dummy`, noCurrent, []want{{"interfaces[0].name", "is longer than 15 characters", nmstate.InvalidArgument}}},
		{"ovn mapping without bridge", `
ovn:
  bridge-mappings:
  - localnet: net1`, noCurrent, []want{{"ovn.bridge-mappings[0].bridge", "is required", nmstate.InvalidArgument}}},

		// Validation against the current state.
		{"new bond needs mode", `
interfaces:
- name: bond0
  type: bond
  link-aggregation: {port: []}`, emptyCurrent, []want{{"interfaces[0].link-aggregation.mode", "is required for a new bond", nmstate.InvalidArgument}}},
		{"new vlan needs base and id", `
interfaces:
- name: vlan5
  type: vlan`, emptyCurrent, []want{
			{"interfaces[0].vlan.base-iface", "is required for a new vlan", nmstate.InvalidArgument},
			{"interfaces[0].vlan.id", "is required for a new vlan", nmstate.InvalidArgument},
		}},
		{"new vrf needs table", `
interfaces:
- name: vrf0
  type: vrf
  vrf: {port: []}`, emptyCurrent, []want{{"interfaces[0].vrf.route-table-id", "is required (and not 0) for a new vrf", nmstate.InvalidArgument}}},
		{"new veth needs peer", `
interfaces:
- name: veth0
  type: veth`, emptyCurrent, []want{{"interfaces[0].veth.peer", "is required to create veth veth0", nmstate.InvalidArgument}}},
		{"missing ethernet", `
interfaces:
- name: eth9
  type: ethernet`, emptyCurrent, []want{{"interfaces[0]", "ethernet interface eth9 does not exist", nmstate.Dependency}}},
		{"unknown port", `
interfaces:
- name: bond0
  type: bond
  link-aggregation: {mode: balance-rr, port: [eth7]}`, emptyCurrent, []want{{"interfaces[0].link-aggregation.port[0]", "controller bond0 holds unknown port eth7", nmstate.Dependency}}},
		{"untyped interface not in current", `
interfaces:
- name: eth3
  mtu: 1500`, emptyCurrent, []want{{"interfaces[0]", "has no type and is not in the current state", nmstate.InvalidArgument}}},
		{"mtu above current max", `
interfaces:
- name: eth1
  type: ethernet
  mtu: 9000`, `
interfaces:
- name: eth1
  type: ethernet
  max-mtu: 1500`, []want{{"interfaces[0].mtu", "9000 is bigger than the maximum MTU 1500 of eth1", nmstate.InvalidArgument}}},
		{"ipv6 on in current, small mtu", `
interfaces:
- name: eth1
  type: ethernet
  mtu: 1200`, `
interfaces:
- name: eth1
  type: ethernet
  ipv6: {enabled: true}`, []want{{"interfaces[0].mtu", "MTU should be >= 1280", nmstate.InvalidArgument}}},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got nmstate.ErrorList
			s, err := nmstate.Decode([]byte(tc.doc))
			if err != nil {
				if !errors.As(err, &got) {
					t.Fatalf("Decode returned %T, want ErrorList", err)
				}
			} else {
				var cur *nmstate.State
				if tc.current != noCurrent {
					cur, err = nmstate.Decode([]byte(tc.current))
					if err != nil {
						t.Fatalf("current: %v", err)
					}
				}
				got = nmstate.Validate(s, cur)
			}
			type row struct {
				Path string
				Kind nmstate.Kind
			}
			var wantRows, gotRows []row
			for _, w := range tc.want {
				wantRows = append(wantRows, row{w.path, w.kind})
			}
			for _, e := range got {
				gotRows = append(gotRows, row{string(e.Path), e.Kind})
			}
			if diff := cmp.Diff(wantRows, gotRows); diff != "" {
				t.Fatalf("errors (-want +got):\n%s\nall errors:\n%v", diff, got)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Detail, w.reason) {
					t.Errorf("error %d = %q, want it to contain %q", i, got[i].Error(), w.reason)
				}
			}
		})
	}
}
