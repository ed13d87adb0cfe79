package nmstate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// twoNICs is the current state most statistic cases run against.
const twoNICs = `
interfaces:
- name: eth1
  type: ethernet
  state: up
  mac-address: 02:00:00:00:00:01
- name: eth2
  type: ethernet
  state: up
  mac-address: 02:00:00:00:00:02
`

func decodeYAML(t *testing.T, doc string) *nmstate.State {
	t.Helper()
	s, err := nmstate.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("decoding %q: %v", doc, err)
	}
	return s
}

func TestStatistic(t *testing.T) {
	tests := []struct {
		name     string
		desired  string
		current  string // "" = twoNICs; "-" = nil
		topology []string
		features []string
	}{
		{
			name: "vlan over bridge over bond with static IP",
			desired: `
interfaces:
- name: br0.101
  type: vlan
  vlan: {base-iface: br0, id: 101}
  ipv4: {enabled: true, address: [{ip: 192.0.2.252, prefix-length: 24}]}
  ipv6: {enabled: true, autoconf: false, dhcp: false, address: [{ip: "2001:db8:2::1", prefix-length: 64}]}
- name: bond1
  type: bond
  link-aggregation: {mode: active-backup, port: [eth1, eth2]}
- name: br0
  type: linux-bridge
  bridge: {port: [{name: bond1}]}
`,
			topology: []string{"static_ip4,static_ip6 -> vlan -> linux-bridge -> bond -> ethernet"},
			features: []string{},
		},
		{
			name: "separate stacks are listed shortest first, then by text",
			desired: `
interfaces:
- name: eth2.10
  type: vlan
  vlan: {base-iface: eth2, id: 10}
- name: br1
  type: linux-bridge
  bridge: {port: [{name: bond1}]}
- name: bond1
  type: bond
  link-aggregation: {mode: active-backup, port: [eth1]}
- name: dummy0
  type: dummy
  ipv4: {enabled: true, address: [{ip: 198.51.100.1, prefix-length: 24}]}
`,
			topology: []string{"vlan -> ethernet", "static_ip4 -> dummy", "linux-bridge -> bond -> ethernet"},
			features: []string{},
		},
		{
			name: "automatic IP on a port-less NIC",
			desired: `
interfaces:
- name: eth1
  type: ethernet
  ipv4: {enabled: true, dhcp: true}
  ipv6: {enabled: true, dhcp: true, autoconf: true}
`,
			topology: []string{"auto_ip4,auto_ip6 -> ethernet"},
			features: []string{},
		},
		{
			name: "disabled IP and an interface without IP have no IP part",
			desired: `
interfaces:
- name: eth1
  type: ethernet
  ipv4: {enabled: false}
- name: eth2
  type: ethernet
  mtu: 1400
`,
			topology: []string{"ethernet"},
			features: []string{},
		},
		{
			name: "down and absent interfaces build no stack",
			desired: `
interfaces:
- name: eth1
  type: ethernet
  state: down
- name: eth2
  type: ethernet
  state: absent
`,
			topology: []string{},
			features: []string{},
		},
		{
			name: "a port pulled in by its controller joins the stack but adds no feature",
			desired: `
interfaces:
- name: bond1
  type: bond
  link-aggregation: {mode: active-backup, port: [eth1]}
`,
			current: twoNICs + `  ethernet: {sr-iov: {total-vfs: 2}}
`,
			topology: []string{"bond -> ethernet"},
			features: []string{},
		},
		{
			name: "OVS internal interface sits on its bridge",
			desired: `
interfaces:
- name: ovs0
  type: ovs-interface
  ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}
- name: br0
  type: ovs-bridge
  bridge: {port: [{name: ovs0}, {name: eth1}]}
`,
			topology: []string{"static_ip4 -> ovs-interface -> ovs-bridge -> ethernet"},
			features: []string{},
		},
		{
			name: "static DNS: every list given counts, sorted",
			desired: `
dns-resolver:
  config:
    server: [192.0.2.251, "2001:db8:1::1"]
    search: [example.com]
    options: [rotate, "ndots:8"]
`,
			topology: []string{},
			features: []string{"static-dns-name-server", "static-dns-option", "static-dns-search"},
		},
		{
			name: "an empty DNS list counts, a purge does not",
			desired: `
dns-resolver:
  config:
    server: []
`,
			topology: []string{},
			features: []string{"static-dns-name-server"},
		},
		{
			name:     "DNS purge",
			desired:  "dns-resolver: {config: {}}\n",
			topology: []string{},
			features: []string{},
		},
		{
			name: "static route",
			desired: `
interfaces:
- name: eth1
  type: ethernet
  ipv4: {enabled: true, address: [{ip: 192.0.2.10, prefix-length: 24}]}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth1, metric: 103}
`,
			topology: []string{"static_ip4 -> ethernet"},
			features: []string{"static-route"},
		},
		{
			name: "a removal pattern is a static route feature too",
			desired: `
routes:
  config:
  - {state: absent, next-hop-interface: eth1}
`,
			topology: []string{},
			features: []string{"static-route"},
		},
		{
			name: "route rules with suppress-prefix-length",
			desired: `
route-rules:
  config:
  - {ip-from: 192.0.2.2/32, suppress-prefix-length: 0, route-table: 200}
  - {ip-from: "2001:db8:b::/64", route-table: 200}
`,
			topology: []string{},
			features: []string{"static-route-rule", "static-route-rule-suppress-prefix-length"},
		},
		{
			name: "suppress-prefix-length in a removal pattern does not count",
			desired: `
route-rules:
  config:
  - {state: absent, ip-from: 192.0.2.2/32, suppress-prefix-length: 0}
`,
			topology: []string{},
			features: []string{"static-route-rule"},
		},
		{
			name:     "an empty rule list is no rule",
			desired:  "route-rules: {config: []}\n",
			topology: []string{},
			features: []string{},
		},
		{
			name:     "static hostname",
			desired:  "hostname: {config: host-a.example.org}\n",
			topology: []string{},
			features: []string{"static-hostname"},
		},
		{
			name: "SR-IOV and a VF referred to by PF and index",
			desired: `
interfaces:
- name: eth1
  type: ethernet
  ethernet: {sr-iov: {total-vfs: 2}}
- name: sriov:eth1:1
  type: ethernet
  mtu: 1400
`,
			topology: []string{"ethernet"},
			features: []string{"iface-name-refered-by-sriov-vf-id", "sriov"},
		},
		{
			name: "OVS DPDK, OVS bond and global ovs-db",
			desired: `
interfaces:
- name: ovs0
  type: ovs-interface
  dpdk: {devargs: "0000:ab:cd.0", rx-queue: 100}
- name: br0
  type: ovs-bridge
  bridge:
    options: {datapath: netdev}
    port:
    - name: ovs0
    - name: bond99
      link-aggregation: {mode: balance-slb, port: [{name: eth2}, {name: eth1}]}
ovs-db:
  other_config: {dpdk-init: "true"}
`,
			topology: []string{"ovs-interface -> ovs-bridge -> ethernet"},
			features: []string{"ovs-bond", "ovs-db-global", "ovs-dpdk"},
		},
		{
			name: "OVS patch ports and interface ovs-db",
			desired: `
interfaces:
- name: patch0
  type: ovs-interface
  ovs-db: {external_ids: {owner: abc}}
  patch: {peer: patch1}
- name: ovs-br0
  type: ovs-bridge
  bridge: {port: [{name: patch0}]}
- name: patch1
  type: ovs-interface
  patch: {peer: patch0}
- name: ovs-br1
  type: ovs-bridge
  bridge: {port: [{name: patch1}]}
`,
			topology: []string{"ovs-interface -> ovs-bridge"},
			features: []string{"ovs-db-interface", "ovs-patch"},
		},
		{
			name: "interface ovs-db that only removes keys configures nothing",
			desired: `
interfaces:
- name: ovs0
  type: ovs-interface
  ovs-db: {external_ids: {owner: null}}
- name: br0
  type: ovs-bridge
  bridge: {port: [{name: ovs0}]}
`,
			topology: []string{"ovs-interface -> ovs-bridge"},
			features: []string{},
		},
		{
			name: "OVN bridge mappings",
			desired: `
ovn:
  bridge-mappings:
  - {localnet: blue, bridge: ovsbr1}
`,
			topology: []string{},
			features: []string{"ovn-mapping"},
		},
		{
			name: "MAC-based identifier",
			desired: `
interfaces:
- name: wan0
  type: ethernet
  identifier: mac-address
  mac-address: 02:00:00:00:00:01
`,
			topology: []string{"ethernet"},
			features: []string{"mac-based-identifier"},
		},
		{
			name: "DHCP custom hostnames",
			desired: `
interfaces:
- name: eth1
  type: ethernet
  ipv4: {enabled: true, dhcp: true, dhcp-send-hostname: true, dhcp-custom-hostname: c9.example.org}
  ipv6: {enabled: true, dhcp: true, autoconf: true, dhcp-custom-hostname: c9.example.net}
`,
			topology: []string{"auto_ip4,auto_ip6 -> ethernet"},
			features: []string{"dhcpv4-custom-hostname", "dhcpv6-custom-hostname"},
		},
		{
			name: "LLDP, even when disabled",
			desired: `
interfaces:
- name: eth1
  type: ethernet
  lldp: {enabled: false}
`,
			topology: []string{"ethernet"},
			features: []string{"lldp"},
		},
		{
			name: "an absent interface uses no feature",
			desired: `
interfaces:
- name: eth1
  type: ethernet
  state: absent
  lldp: {enabled: true}
`,
			topology: []string{},
			features: []string{},
		},
		{
			name: "features from several interfaces are listed once",
			desired: `
interfaces:
- name: eth1
  type: ethernet
  lldp: {enabled: true}
- name: eth2
  type: ethernet
  lldp: {enabled: true}
`,
			topology: []string{"ethernet"},
			features: []string{"lldp"},
		},
		{
			name: "no current state: nothing exists yet",
			desired: `
interfaces:
- name: bond1
  type: bond
  link-aggregation: {mode: active-backup, port: [dummy1]}
  ipv4: {enabled: true, dhcp: true}
- name: dummy1
  type: dummy
`,
			current:  "-",
			topology: []string{"auto_ip4 -> bond -> dummy"},
			features: []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired := decodeYAML(t, tc.desired)
			var current *nmstate.State
			switch tc.current {
			case "":
				current = decodeYAML(t, twoNICs)
			case "-":
			default:
				current = decodeYAML(t, tc.current)
			}
			got, err := nmstate.Statistic(desired, current)
			if err != nil {
				t.Fatalf("Statistic: %v", err)
			}
			want := nmstate.Statistics{Topology: tc.topology, Features: tc.features}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Statistic (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatisticIfaceCount checks the interface-count buckets at their
// edges; only desired interfaces that end up up count.
func TestStatisticIfaceCount(t *testing.T) {
	dummies := func(up, down int) *nmstate.State {
		var ifaces []nmstate.Interface
		for i := range up {
			ifaces = append(ifaces, st.Dummy(fmt.Sprintf("dummy%d", i)))
		}
		for i := range down {
			ifaces = append(ifaces, st.Dummy(fmt.Sprintf("down%d", i), st.Down()))
		}
		return st.State(st.Interfaces(ifaces...))
	}
	tests := []struct {
		up, down int
		want     []string
	}{
		{up: 9, want: []string{}},
		{up: 9, down: 5, want: []string{}},
		{up: 10, want: []string{"iface-count10-plus"}},
		{up: 49, want: []string{"iface-count10-plus"}},
		{up: 50, want: []string{"iface-count50-plus"}},
		{up: 101, want: []string{"iface-count100-plus"}},
		{up: 499, want: []string{"iface-count200-plus"}},
		{up: 500, want: []string{"iface-count500-plus"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d up %d down", tc.up, tc.down), func(t *testing.T) {
			got, err := nmstate.Statistic(dummies(tc.up, tc.down), decodeYAML(t, twoNICs))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Features); diff != "" {
				t.Errorf("features (-want +got):\n%s", diff)
			}
			if tc.up > 0 && !cmp.Equal(got.Topology, []string{"dummy"}) {
				t.Errorf("topology = %q, want [dummy]", got.Topology)
			}
		})
	}
}

// TestStatisticRejectsWhatMergeRejects: the statistic describes an
// applicable state, so a state the merge refuses is an error naming the
// offending path.
func TestStatisticRejectsWhatMergeRejects(t *testing.T) {
	desired := decodeYAML(t, `
interfaces:
- name: eth9
  type: ethernet
  mtu: 1400
`)
	_, err := nmstate.Statistic(desired, decodeYAML(t, twoNICs))
	if err == nil || !strings.Contains(err.Error(), "interfaces[0]") || !strings.Contains(err.Error(), "eth9") {
		t.Errorf("Statistic of a missing NIC: %v, want an error naming interfaces[0] and eth9", err)
	}
}

// TestStatisticDoesNotModifyArguments guards the pure-function contract
// (the pseudo VF entries go to a copy of current).
func TestStatisticDoesNotModifyArguments(t *testing.T) {
	desired := decodeYAML(t, `
interfaces:
- name: eth1
  type: ethernet
  ethernet: {sr-iov: {total-vfs: 2}}
- name: sriov:eth1:0
  type: ethernet
`)
	current := decodeYAML(t, twoNICs)
	wantD, wantC := desired.Clone(), current.Clone()
	if _, err := nmstate.Statistic(desired, current); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantD, desired); diff != "" {
		t.Errorf("desired changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(wantC, current); diff != "" {
		t.Errorf("current changed (-before +after):\n%s", diff)
	}
}
