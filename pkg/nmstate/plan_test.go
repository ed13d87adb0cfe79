package nmstate_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// planCase is a hand-built Merged: what Merge would produce for a desired
// state against cur, so the ordering rules are tested on their own.
type planCase struct {
	name   string
	cur    *nmstate.State
	change []nmstate.Interface
	routes []nmstate.Route
	rules  []nmstate.RouteRule
	dns    *nmstate.DNSConfig
	host   *nmstate.Hostname
	want   []string // plan lines
}

func (c planCase) merged() *nmstate.Merged {
	return &nmstate.Merged{
		Desired: &nmstate.State{Interfaces: c.change}, Current: c.cur,
		Interfaces: c.change, Routes: c.routes, RouteRules: c.rules, DNS: c.dns, Hostname: c.host,
	}
}

func planLines(p *nmstate.Plan) []string {
	s := strings.TrimSuffix(p.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func ifaces(l ...nmstate.Interface) st.StateOption { return st.Interfaces(l...) }

func ctrlOf(c string) st.IfaceOption { return st.Controller(c) }

func TestPlanChanges(t *testing.T) {
	eth := func(name string, opts ...st.IfaceOption) nmstate.Interface { return st.Ethernet(name, opts...) }
	base := st.State(ifaces(eth("eth1"), eth("eth2"), eth("eth3")))
	for _, tc := range []planCase{
		{
			name:   "no-op change produces no op",
			cur:    st.State(ifaces(eth("eth1", st.MTU(1500), st.IPv4("192.0.2.1/24")))),
			change: []nmstate.Interface{eth("eth1", st.MTU(1500), st.IPv4("192.0.2.1/24"))},
		},
		{
			name:   "interfaces outside the change set are untouched",
			cur:    st.State(ifaces(eth("eth1", st.Down()), eth("eth2", st.IPv4("192.0.2.1/24")))),
			change: []nmstate.Interface{eth("eth2", st.IPv4("192.0.2.1/24"))},
		},
		{
			name: "controllers are created before their ports",
			cur:  base,
			change: []nmstate.Interface{
				eth("eth1", ctrlOf("bond0")), eth("eth2", ctrlOf("bond0")),
				st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth1", "eth2")),
			},
			want: []string{
				"link add bond0 type bond mode active-backup",
				"link set eth1 master bond0",
				"link set eth2 master bond0",
				"link set bond0 up",
				"link set eth1 up",
				"link set eth2 up",
			},
		},
		{
			name: "vlan is created after its base and links come up after config",
			cur:  base,
			change: []nmstate.Interface{
				st.VLAN("eth1.101", "eth1", 101, st.IPv4("192.0.2.1/24")),
			},
			want: []string{
				"link add eth1.101 link eth1 type vlan id 101",
				"link set eth1.101 up",
				"addr add 192.0.2.1/24 dev eth1.101",
			},
		},
		{
			name: "nesting bond vlan bridge follows up priority",
			cur:  base,
			change: []nmstate.Interface{
				st.LinuxBridge("br0", st.Ports("bond0.10")),
				st.VLAN("bond0.10", "bond0", 10),
				st.Bond("bond0", st.Mode("802.3ad"), st.Ports("eth1")),
			},
			want: []string{
				"link add bond0 type bond mode 802.3ad",
				"link add br0 type linux-bridge",
				"link add bond0.10 link bond0 type vlan id 10",
				"link set bond0.10 master br0",
				"link set eth1 master bond0",
				"link set bond0 up",
				"link set br0 up",
				"link set bond0.10 up",
				"link set eth1 up",
			},
		},
		{
			name: "nesting deeper than 4 levels is an error",
			cur:  base,
			change: []nmstate.Interface{
				st.VLAN("v1", "eth1", 1), st.VLAN("v2", "v1", 2), st.VLAN("v3", "v2", 3),
				st.VLAN("v4", "v3", 4), st.VLAN("v5", "v4", 5),
			},
			want: []string{"error: interfaces[name=v5]: interfaces nest deeper than 4 levels (controllers and bases of v5)"},
		},
		{
			name: "nesting of 4 levels is accepted",
			cur:  base,
			change: []nmstate.Interface{
				st.VLAN("v1", "eth1", 1), st.VLAN("v2", "v1", 2), st.VLAN("v3", "v2", 3), st.VLAN("v4", "v3", 4),
			},
			want: []string{
				"link add v1 link eth1 type vlan id 1", "link add v2 link v1 type vlan id 2",
				"link add v3 link v2 type vlan id 3", "link add v4 link v3 type vlan id 4",
				"link set v1 up", "link set v2 up", "link set v3 up", "link set v4 up",
			},
		},
		{
			name: "deletions run children before parents and ports are released before their controller is deleted",
			cur: st.State(ifaces(eth("eth1", ctrlOf("bond0")), eth("eth2", ctrlOf("bond0")),
				st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth1", "eth2")),
				st.VLAN("bond0.10", "bond0", 10))),
			change: []nmstate.Interface{
				st.Bond("bond0", st.Absent()), st.Iface("bond0.10", nmstate.TypeVLAN, st.Absent()),
				eth("eth1", ctrlOf("")), eth("eth2", ctrlOf("")),
			},
			want: []string{
				"link set eth1 nomaster",
				"link set eth2 nomaster",
				"link delete bond0.10 type vlan",
				"link delete bond0 type bond",
				"link set eth1 up",
				"link set eth2 up",
			},
		},
		{
			name: "absent interface that does not exist produces no op",
			cur:  base,
			change: []nmstate.Interface{
				st.Bond("bond9", st.Absent()),
			},
		},
		{
			name:   "virtual interface down is deleted",
			cur:    st.State(ifaces(eth("eth1"), st.VLAN("eth1.5", "eth1", 5))),
			change: []nmstate.Interface{st.Iface("eth1.5", nmstate.TypeVLAN, st.Down())},
			want:   []string{"link delete eth1.5 type vlan"},
		},
		{
			name:   "ethernet absent is released, deconfigured and set down, never deleted",
			cur:    st.State(ifaces(eth("eth1", ctrlOf("br0"), st.IPv4("192.0.2.1/24")), st.LinuxBridge("br0", st.Ports("eth1")))),
			change: []nmstate.Interface{eth("eth1", st.Absent())},
			want: []string{
				"link set eth1 nomaster",
				"sysctl set net.ipv6.conf.eth1.disable_ipv6 1",
				"link set eth1 down",
				"addr delete 192.0.2.1/24 dev eth1",
			},
		},
		{
			name:   "ethernet down keeps its configuration",
			cur:    st.State(ifaces(eth("eth1", st.IPv4("192.0.2.1/24")))),
			change: []nmstate.Interface{eth("eth1", st.Down(), st.IPv4("192.0.2.1/24"))},
			want:   []string{"link set eth1 down"},
		},
		{
			name: "ports swapping between bonds are detached before being attached",
			cur: st.State(ifaces(eth("eth1", ctrlOf("bond0")), eth("eth2", ctrlOf("bond1")),
				st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth1")),
				st.Bond("bond1", st.Mode("active-backup"), st.Ports("eth2")))),
			change: []nmstate.Interface{
				st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth2")),
				st.Bond("bond1", st.Mode("active-backup"), st.Ports("eth1")),
				eth("eth1", ctrlOf("bond1")), eth("eth2", ctrlOf("bond0")),
			},
			want: []string{
				"link set eth1 nomaster",
				"link set eth2 nomaster",
				"link set eth1 master bond1",
				"link set eth2 master bond0",
				"link set eth1 up",
				"link set eth2 up",
			},
		},
		{
			name:   "vlan id change re-creates the vlan",
			cur:    st.State(ifaces(eth("eth1"), st.VLAN("vl", "eth1", 10, st.IPv4("192.0.2.1/24")))),
			change: []nmstate.Interface{st.VLAN("vl", "eth1", 20, st.IPv4("192.0.2.1/24"))},
			want: []string{
				"link delete vl type vlan",
				"link add vl link eth1 type vlan id 20",
				"link set vl up",
				"addr add 192.0.2.1/24 dev vl",
			},
		},
		{
			name: "re-created base takes its children along",
			cur: st.State(ifaces(eth("eth1"), st.VLAN("vl", "eth1", 10),
				st.MacVlan("mv0", "vl", "bridge", st.IPv4("192.0.2.1/24")))),
			change: []nmstate.Interface{st.VLAN("vl", "eth1", 20)},
			want: []string{
				"link delete mv0 type mac-vlan",
				"link delete vl type vlan",
				"link add vl link eth1 type vlan id 20",
				"link add mv0 link vl type mac-vlan mode bridge",
				"link set vl up",
				"link set mv0 up",
				"addr add 192.0.2.1/24 dev mv0",
			},
		},
		{
			name:   "vrf table change re-creates the vrf and re-attaches its ports",
			cur:    st.State(ifaces(eth("eth1", ctrlOf("vrf0")), st.VRF("vrf0", 100, st.With(func(i *nmstate.Interface) { i.VRF.Port = []string{"eth1"} })))),
			change: []nmstate.Interface{st.VRF("vrf0", 200, st.With(func(i *nmstate.Interface) { i.VRF.Port = []string{"eth1"} }))},
			want: []string{
				"link set eth1 nomaster",
				"link delete vrf0 type vrf",
				"link add vrf0 type vrf route-table-id 200",
				"link set eth1 master vrf0",
				"link set vrf0 up",
				"link set eth1 up",
			},
		},
		{
			name:   "veth peer change re-creates the pair",
			cur:    st.State(ifaces(st.Veth("v0", "v0p"), st.Veth("v0p", "v0"))),
			change: []nmstate.Interface{st.Veth("v0", "v0q")},
			want: []string{
				"link delete v0 type veth",
				"link add v0 type veth peer v0q",
				"link set v0 up",
				"link set v0q up",
			},
		},
		{
			name:   "veth pair is created once and deleted once",
			cur:    base,
			change: []nmstate.Interface{st.Veth("v0", "v0p", st.MTU(9000)), st.Veth("v0p", "v0", st.MTU(9000))},
			want: []string{
				"link add v0 type veth mtu 9000 peer v0p",
				"link set v0p type veth mtu 9000",
				"link set v0 up",
				"link set v0p up",
			},
		},
		{
			name:   "veth pair deleted together is deleted by one end",
			cur:    st.State(ifaces(st.Veth("v0", "v0p"), st.Veth("v0p", "v0"))),
			change: []nmstate.Interface{st.Iface("v0", nmstate.TypeVeth, st.Absent()), st.Iface("v0p", nmstate.TypeVeth, st.Absent())},
			want:   []string{"link delete v0 type veth"},
		},
		{
			name:   "missing ethernet is an error",
			cur:    base,
			change: []nmstate.Interface{eth("eth9")},
			want:   []string{"error: interfaces[name=eth9]: interface eth9 of type ethernet does not exist and cannot be created"},
		},
		{
			name: "bond mode change releases ports, sets down, modifies, re-attaches",
			cur: st.State(ifaces(eth("eth1", ctrlOf("bond0")), eth("eth2", ctrlOf("bond0")),
				st.Bond("bond0", st.Mode("balance-rr"), st.Ports("eth1", "eth2")),
				st.VLAN("bond0.10", "bond0", 10))),
			change: []nmstate.Interface{st.Bond("bond0", st.Mode("balance-tlb"), st.Ports("eth1", "eth2"))},
			want: []string{
				"link set eth1 nomaster",
				"link set eth2 nomaster",
				"link set bond0 down",
				"link set bond0 type bond mode balance-tlb",
				"link set eth1 master bond0",
				"link set eth2 master bond0",
				"link set bond0 up",
				"link set eth1 up",
				"link set eth2 up",
			},
		},
		{
			name: "bond option change is a live modify",
			cur:  st.State(ifaces(eth("eth1", ctrlOf("bond0")), st.Bond("bond0", st.Mode("balance-rr"), st.Ports("eth1")))),
			change: []nmstate.Interface{st.Bond("bond0", st.Mode("balance-rr"), st.Ports("eth1"),
				st.BondOptions(func(o *nmstate.BondOptions) { o.MIIMon = st.Ptr(uint32(100)) }))},
			want: []string{"link set bond0 type bond options.miimon 100"},
		},
		{
			name:   "mtu increase goes base first",
			cur:    st.State(ifaces(eth("eth1", st.MTU(1500)), st.VLAN("eth1.5", "eth1", 5, st.MTU(1500)))),
			change: []nmstate.Interface{st.VLAN("eth1.5", "eth1", 5, st.MTU(9000)), eth("eth1", st.MTU(9000))},
			want:   []string{"link set eth1 type ethernet mtu 9000", "link set eth1.5 type vlan mtu 9000"},
		},
		{
			name:   "mtu decrease goes children first",
			cur:    st.State(ifaces(eth("eth1", st.MTU(9000)), st.VLAN("eth1.5", "eth1", 5, st.MTU(9000)))),
			change: []nmstate.Interface{eth("eth1", st.MTU(1500)), st.VLAN("eth1.5", "eth1", 5, st.MTU(1500))},
			want:   []string{"link set eth1.5 type vlan mtu 1500", "link set eth1 type ethernet mtu 1500"},
		},
		{
			name:   "addresses: add desired, delete undesired, deletions first",
			cur:    st.State(ifaces(eth("eth1", st.IPv4("192.0.2.1/24", "198.51.100.1/24")), eth("eth2"))),
			change: []nmstate.Interface{eth("eth1", st.IPv4("192.0.2.1/24", "203.0.113.1/24")), eth("eth2", st.IPv4("198.51.100.1/24"))},
			want: []string{
				"addr delete 198.51.100.1/24 dev eth1",
				"addr add 203.0.113.1/24 dev eth1",
				"addr add 198.51.100.1/24 dev eth2",
			},
		},
		{
			name:   "primary ipv4 change deletes and re-adds in order",
			cur:    st.State(ifaces(eth("eth1", st.IPv4("192.0.2.1/24", "198.51.100.1/24")))),
			change: []nmstate.Interface{eth("eth1", st.IPv4("198.51.100.1/24", "192.0.2.1/24"))},
			want: []string{
				"addr delete 192.0.2.1/24 dev eth1",
				"addr delete 198.51.100.1/24 dev eth1",
				"addr add 198.51.100.1/24 dev eth1",
				"addr add 192.0.2.1/24 dev eth1",
			},
		},
		{
			name:   "deleting a primary re-adds the kept secondary of its subnet",
			cur:    st.State(ifaces(eth("eth1", st.IPv4("192.0.2.1/24", "192.0.2.2/24")))),
			change: []nmstate.Interface{eth("eth1", st.IPv4("192.0.2.2/24"))},
			want:   []string{"addr delete 192.0.2.1/24 dev eth1", "addr delete 192.0.2.2/24 dev eth1", "addr add 192.0.2.2/24 dev eth1"},
		},
		{
			name: "ipv6 order is not significant and link-local and dynamic addresses are left alone",
			cur: st.State(ifaces(eth("eth1", st.IPv6("2001:db8::1/64", "2001:db8::2/64", "fe80::1/64"), st.With(func(i *nmstate.Interface) {
				i.IPv6.Address = append(i.IPv6.Address, nmstate.Address{IP: mustAddr("2001:db8:1::9"), PrefixLength: 64, ValidLifetime: st.Ptr("3600sec")})
			})))),
			change: []nmstate.Interface{eth("eth1", st.IPv6("2001:db8::2/64", "2001:db8::1/64"))},
		},
		{
			name:   "ipv6 disable is a sysctl",
			cur:    st.State(ifaces(eth("eth1", st.IPv6("2001:db8::1/64")))),
			change: []nmstate.Interface{eth("eth1", st.IPv6Disabled())},
			want:   []string{"sysctl set net.ipv6.conf.eth1.disable_ipv6 1"},
		},
		{
			name:   "ipv6 enable is a sysctl before its addresses",
			cur:    st.State(ifaces(eth("eth1", st.IPv6Disabled()))),
			change: []nmstate.Interface{eth("eth1", st.IPv6("2001:db8::1/64"))},
			want:   []string{"sysctl set net.ipv6.conf.eth1.disable_ipv6 0", "addr add 2001:db8::1/64 dev eth1"},
		},
		{
			name:   "ipv4 disable deletes all its addresses",
			cur:    st.State(ifaces(eth("eth1", st.IPv4("192.0.2.1/24")))),
			change: []nmstate.Interface{eth("eth1", st.IPv4Disabled())},
			want:   []string{"addr delete 192.0.2.1/24 dev eth1"},
		},
		{
			name: "forwarding is a sysctl",
			cur:  st.State(ifaces(eth("eth1", st.IPv4("192.0.2.1/24")))),
			change: []nmstate.Interface{eth("eth1", st.IPv4("192.0.2.1/24"), st.With(func(i *nmstate.Interface) {
				i.IPv4.Forwarding = st.Ptr(true)
			}))},
			want: []string{"sysctl set net.ipv4.conf.eth1.forwarding 1"},
		},
		{
			name: "routes after addresses, removed ones deleted, gateway routes after on-link routes",
			cur: st.State(ifaces(eth("eth1", st.IPv4("192.0.2.1/24"))),
				st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.254"))),
			change: []nmstate.Interface{eth("eth1", st.IPv4("192.0.2.1/24", "203.0.113.1/24"))},
			routes: []nmstate.Route{
				st.Route("0.0.0.0/0", "eth1", "192.0.2.254"),
				st.Route("203.0.113.128/25", "eth1", ""),
			},
			want: []string{
				"addr add 203.0.113.1/24 dev eth1",
				"route delete 198.51.100.0/24 via 192.0.2.254 dev eth1 table 254 proto static",
				"route replace 203.0.113.128/25 dev eth1 table 254 proto static",
				"route replace 0.0.0.0/0 via 192.0.2.254 dev eth1 table 254 proto static",
			},
		},
		{
			name: "metric-only route change is a replace of the same identity",
			cur: st.State(ifaces(eth("eth1")),
				st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.254", st.Metric(100)))),
			routes: []nmstate.Route{st.Route("198.51.100.0/24", "eth1", "192.0.2.254", st.Metric(150))},
			want:   []string{"route replace 198.51.100.0/24 via 192.0.2.254 dev eth1 metric 150 table 254 proto static"},
		},
		{
			name: "route without metric is satisfied by any metric",
			cur: st.State(ifaces(eth("eth1")),
				st.Routes(st.Route("2001:db8:1::/64", "eth1", "2001:db8::1", st.Metric(1024)))),
			routes: []nmstate.Route{st.Route("2001:db8:1::/64", "eth1", "2001:db8::1")},
		},
		{
			name: "routes via a re-created link are installed again",
			cur: st.State(ifaces(eth("eth1"), st.VLAN("vl", "eth1", 10, st.IPv4("192.0.2.1/24"))),
				st.Routes(st.Route("198.51.100.0/24", "vl", "192.0.2.254"))),
			change: []nmstate.Interface{st.VLAN("vl", "eth1", 11, st.IPv4("192.0.2.1/24"))},
			want: []string{
				"link delete vl type vlan",
				"link add vl link eth1 type vlan id 11",
				"link set vl up",
				"addr add 192.0.2.1/24 dev vl",
				"route replace 198.51.100.0/24 via 192.0.2.254 dev vl table 254 proto static",
			},
		},
		{
			name: "routes of a deleted link are not deleted again",
			cur: st.State(ifaces(eth("eth1"), st.VLAN("vl", "eth1", 10)),
				st.Routes(st.Route("198.51.100.0/24", "vl", ""))),
			change: []nmstate.Interface{st.Iface("vl", nmstate.TypeVLAN, st.Absent())},
			routes: []nmstate.Route{},
			want:   []string{"link delete vl type vlan"},
		},
		{
			name:  "rules last: deletions then additions",
			cur:   st.State(ifaces(eth("eth1")), st.Rules(st.Rule("192.0.2.0/24", "", 100))),
			rules: []nmstate.RouteRule{withPriority(st.Rule("198.51.100.0/24", "", 100), 1000)},
			dns:   &nmstate.DNSConfig{Server: []netipAddr{mustAddr("192.0.2.53")}},
			want: []string{
				"rule delete from 192.0.2.0/24 table 100",
				"rule add from 198.51.100.0/24 priority 1000 table 100",
				"dns write nameserver 192.0.2.53",
			},
		},
		{
			name:  "rule already present produces no op",
			cur:   st.State(st.Rules(withPriority(st.Rule("192.0.2.0/24", "", 100), 1000))),
			rules: []nmstate.RouteRule{st.Rule("192.0.2.0/24", "", 100)},
		},
		{
			name: "dns and hostname only when different",
			cur: st.State(st.DNS([]string{"192.0.2.53"}, []string{"example.com"}, []string{"rotate", "debug"}),
				func(s *nmstate.State) { s.Hostname = &nmstate.Hostname{Running: st.Ptr("node1")} }),
			dns:  &nmstate.DNSConfig{Server: []netipAddr{mustAddr("192.0.2.53")}, Search: []string{"example.com"}, Options: []string{"debug", "rotate"}},
			host: &nmstate.Hostname{Running: st.Ptr("node1")},
		},
		{
			name: "hostname set when different",
			cur:  st.State(func(s *nmstate.State) { s.Hostname = &nmstate.Hostname{Running: st.Ptr("node1")} }),
			host: &nmstate.Hostname{Config: st.Ptr("node2")},
			want: []string{"hostname set node2"},
		},
		{
			name: "bridge port options and vlans after attachment",
			cur:  base,
			change: []nmstate.Interface{
				st.LinuxBridge("br0", st.Ports("eth1"), st.BridgePortVLAN("eth1", nmstate.BridgeVLAN{Mode: st.Ptr(nmstate.BridgeVLANMode("access")), Tag: st.Ptr(uint16(10))}),
					st.With(func(i *nmstate.Interface) { i.LinuxBridge.Port[0].STPPathCost = st.Ptr(uint32(100)) })),
				eth("eth1", ctrlOf("br0")),
			},
			want: []string{
				"link add br0 type linux-bridge",
				"link set eth1 master br0",
				"bridge port set eth1 master br0 stp-path-cost 100",
				"bridge vlan set eth1 master br0 mode access tag 10",
				"link set br0 up",
				"link set eth1 up",
			},
		},
		{
			name: "bridge port vlan removed is cleared",
			cur: st.State(ifaces(eth("eth1", ctrlOf("br0")),
				st.LinuxBridge("br0", st.Ports("eth1"), st.BridgePortVLAN("eth1", nmstate.BridgeVLAN{Mode: st.Ptr(nmstate.BridgeVLANMode("access")), Tag: st.Ptr(uint16(10))})))),
			change: []nmstate.Interface{st.LinuxBridge("br0", st.Ports("eth1"))},
			// No port keeps a VLAN configuration: filtering goes off too.
			want: []string{"bridge vlan set eth1 master br0 none", "bridge vlan-filtering br0 off"},
		},
		{
			name: "bridge port options unchanged produce no op",
			cur: st.State(ifaces(eth("eth1", ctrlOf("br0")),
				st.LinuxBridge("br0", st.Ports("eth1"), st.With(func(i *nmstate.Interface) { i.LinuxBridge.Port[0].STPPriority = st.Ptr(uint16(32)) })))),
			change: []nmstate.Interface{st.LinuxBridge("br0", st.Ports("eth1"), st.With(func(i *nmstate.Interface) { i.LinuxBridge.Port[0].STPPriority = st.Ptr(uint16(32)) }))},
		},
		{
			name: "bond ports-config change modifies only the changed port",
			cur: st.State(ifaces(eth("eth1", ctrlOf("bond0")), eth("eth2", ctrlOf("bond0")),
				st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth1", "eth2"), st.With(func(i *nmstate.Interface) {
					i.LinkAggregation.PortsConfig = []nmstate.BondPortConfig{{Name: "eth1", Priority: st.Ptr(int32(0))}, {Name: "eth2", Priority: st.Ptr(int32(0))}}
				})))),
			change: []nmstate.Interface{st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth1", "eth2"), st.With(func(i *nmstate.Interface) {
				i.LinkAggregation.PortsConfig = []nmstate.BondPortConfig{{Name: "eth2", Priority: st.Ptr(int32(5))}}
			}))},
			want: []string{`link set bond0 type bond ports-config [{"name":"eth2","priority":5}]`},
		},
		{
			name:   "recreated link with ipv6 disabled gets the sysctl again",
			cur:    st.State(ifaces(eth("eth1"), st.VLAN("vl", "eth1", 10, st.IPv6Disabled()))),
			change: []nmstate.Interface{st.VLAN("vl", "eth1", 11, st.IPv6Disabled())},
			want: []string{
				"link delete vl type vlan",
				"link add vl link eth1 type vlan id 11",
				"sysctl set net.ipv6.conf.vl.disable_ipv6 1",
				"link set vl up",
			},
		},
		{
			name: "ignored interface is never touched",
			cur:  st.State(ifaces(eth("eth1", st.StateOf(nmstate.StateIgnore)))),
			change: []nmstate.Interface{
				eth("eth1", st.StateOf(nmstate.StateIgnore), st.MTU(9000)),
			},
		},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			m := tc.merged()
			snapshot := func() any {
				tr, err := nmstate.Tree(&nmstate.State{Interfaces: append(append([]nmstate.Interface{}, m.Interfaces...), m.Current.Interfaces...)})
				if err != nil {
					t.Fatal(err)
				}
				return tr
			}
			before := snapshot()
			p, err := nmstate.PlanChanges(m)
			if diff := cmp.Diff(before, snapshot()); diff != "" {
				t.Errorf("PlanChanges changed its input (-before +after):\n%s", diff)
			}
			var got []string
			if err != nil {
				got = []string{"error: " + err.Error()}
			} else {
				got = planLines(p)
				if p.Empty() != (len(got) == 0) {
					t.Errorf("Empty() = %v with %d lines", p.Empty(), len(got))
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanChangesErrorKinds(t *testing.T) {
	_, err := nmstate.PlanChanges(&nmstate.Merged{})
	if !errors.Is(err, &nmstate.Error{Kind: nmstate.Bug}) {
		t.Errorf("no current state: got %v, want a Bug error", err)
	}
	_, err = nmstate.PlanChanges(planCase{cur: st.State(), change: []nmstate.Interface{st.Ethernet("eth9")}}.merged())
	if !errors.Is(err, &nmstate.Error{Kind: nmstate.Dependency}) {
		t.Errorf("missing ethernet: got %v, want a Dependency error", err)
	}
	loop := []nmstate.Interface{st.VLAN("a", "b", 1), st.VLAN("b", "a", 2)}
	_, err = nmstate.PlanChanges(planCase{cur: st.State(), change: loop}.merged())
	if !errors.Is(err, &nmstate.Error{Kind: nmstate.InvalidArgument}) {
		t.Errorf("loop: got %v, want an InvalidArgument error", err)
	}
}

type netipAddr = netip.Addr

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
