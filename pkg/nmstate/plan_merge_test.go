package nmstate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestPlanThroughMerge checks the ordering rules on what Merge really
// produces from a desired document, and that a perfect kernel (Simulate)
// reaches the fixed point.
func TestPlanThroughMerge(t *testing.T) {
	const nics = `
- {name: eth1, type: ethernet, state: up, mtu: 1500}
- {name: eth2, type: ethernet, state: up, mtu: 1500}
- {name: eth3, type: ethernet, state: up, mtu: 1500}
`
	for _, tc := range []struct {
		name, current, desired string
		want                   []string
	}{
		{
			name: "ports swapping between bonds are detached before being attached",
			current: "interfaces:" + `
- {name: eth1, type: ethernet, state: up, controller: bond0}
- {name: eth2, type: ethernet, state: up, controller: bond1}
- {name: bond0, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth1]}}
- {name: bond1, type: bond, state: up, link-aggregation: {mode: active-backup, port: [eth2]}}
`,
			desired: "interfaces:" + `
- {name: bond0, type: bond, link-aggregation: {port: [eth2]}}
- {name: bond1, type: bond, link-aggregation: {port: [eth1]}}
`,
			want: []string{
				"link set eth1 nomaster",
				"link set eth2 nomaster",
				"link set eth1 master bond1",
				"link set eth2 master bond0",
				// Ports lose their IP configuration (merge rule); the
				// current state did not say IPv6 was off. IPv6 goes off
				// before the links come up.
				"sysctl set net.ipv6.conf.eth1.disable_ipv6 1",
				"sysctl set net.ipv6.conf.eth2.disable_ipv6 1",
				"link set eth1 up",
				"link set eth2 up",
			},
		},
		{
			name:    "controllers are created before their ports and links come up after config",
			current: "interfaces:" + nics,
			desired: "interfaces:" + `
- {name: br0, type: linux-bridge, state: up, bridge: {options: {stp: {enabled: false}}, port: [{name: bond0}]}, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}}
- {name: bond0, type: bond, state: up, link-aggregation: {mode: 802.3ad, port: [eth1, eth2]}}
`,
			want: []string{
				"link add br0 type linux-bridge options.stp.enabled false",
				"link add bond0 type bond mode 802.3ad",
				"link set bond0 master br0",
				"link set eth1 master bond0",
				"link set eth2 master bond0",
				"sysctl set net.ipv6.conf.bond0.disable_ipv6 1",
				"sysctl set net.ipv6.conf.eth1.disable_ipv6 1",
				"sysctl set net.ipv6.conf.eth2.disable_ipv6 1",
				"link set br0 up",
				"link set bond0 up",
				"link set eth1 up",
				"link set eth2 up",
				"addr add 192.0.2.1/24 dev br0",
			},
		},
		{
			name: "mtu decrease goes ports and children first",
			current: "interfaces:" + `
- {name: eth1, type: ethernet, state: up, mtu: 9000}
- {name: eth1.10, type: vlan, state: up, mtu: 9000, vlan: {base-iface: eth1, id: 10}}
`,
			desired: "interfaces:" + `
- {name: eth1, mtu: 1500}
- {name: eth1.10, mtu: 1400}
`,
			want: []string{
				"link set eth1.10 type vlan mtu 1400",
				"link set eth1 type ethernet mtu 1500",
			},
		},
		{
			name:    "primary ipv4 change deletes and re-adds in order",
			current: "interfaces:\n- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.1, prefix-length: 24}, {ip: 198.51.100.1, prefix-length: 24}]}}\n",
			desired: "interfaces:\n- {name: eth1, ipv4: {enabled: true, address: [{ip: 198.51.100.1, prefix-length: 24}, {ip: 192.0.2.1, prefix-length: 24}]}}\n",
			want: []string{
				"addr delete 192.0.2.1/24 dev eth1",
				"addr delete 198.51.100.1/24 dev eth1",
				"addr add 198.51.100.1/24 dev eth1",
				"addr add 192.0.2.1/24 dev eth1",
			},
		},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			cur, err := nmstate.Decode([]byte(tc.current))
			if err != nil {
				t.Fatal(err)
			}
			des, err := nmstate.Decode([]byte(tc.desired))
			if err != nil {
				t.Fatal(err)
			}
			m, err := nmstate.Merge(des, cur)
			if err != nil {
				t.Fatal(err)
			}
			p, err := nmstate.PlanChanges(m)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, planLines(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			m2, err := nmstate.Merge(des, nmstate.Simulate(cur, m))
			if err != nil {
				t.Fatal(err)
			}
			p2, err := nmstate.PlanChanges(m2)
			if err != nil {
				t.Fatal(err)
			}
			if !p2.Empty() {
				t.Errorf("plan after a perfect apply is not empty:\n%s", p2)
			}
		})
	}
}
