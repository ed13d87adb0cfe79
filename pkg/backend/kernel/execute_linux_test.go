package kernel

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/nmstate/statetest"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

func execute(t *testing.T, b *Backend, ops ...nmstate.Op) {
	t.Helper()
	if err := b.Execute(context.Background(), &nmstate.Plan{Ops: ops}); err != nil {
		t.Fatalf("Execute: %v", err)
	}
}

func u16(v uint16) *uint16 { return &v }
func u32(v uint32) *uint32 { return &v }
func u8(v uint8) *uint8    { return &v }
func str(v string) *string { return &v }

// buildOps is a plan that uses every operation kind the host kernel
// supports: veth pair, bridge with options and a port, macvlan, vxlan,
// link attributes, addresses, routes, rules, a sysctl, DNS, hostname.
func buildOps() []nmstate.Op {
	dev := str("veth1")
	return []nmstate.Op{
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "veth0", Type: nmstate.TypeVeth, MTU: statetest.Ptr[uint64](1400), Veth: &nmstate.Veth{Peer: "veth1"}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "br0", Type: nmstate.TypeLinuxBridge, Description: str("lab bridge"),
			LinuxBridge: &nmstate.LinuxBridge{Options: &nmstate.LinuxBridgeOptions{
				STP:               &nmstate.LinuxBridgeSTP{Enabled: p(true), ForwardDelay: u8(10), HelloTime: u8(3), MaxAge: u8(25), Priority: u16(4096)},
				MACAgeingTime:     u32(120),
				GroupForwardMask:  u16(8),
				MulticastSnooping: p(false),
				MulticastRouter:   statetest.Ptr(nmstate.BridgeMulticastRouter("enabled")),
				MulticastQuerier:  p(true),
			}}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "mv0", Type: nmstate.TypeMacVlan, MacVlan: &nmstate.MacVlan{BaseIface: dev, Mode: statetest.Ptr(nmstate.MacVlanMode("bridge"))}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "mvt0", Type: nmstate.TypeMacVtap, MacVtap: &nmstate.MacVlan{BaseIface: dev, Mode: statetest.Ptr(nmstate.MacVlanMode("private"))}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "vx0", Type: nmstate.TypeVXLAN, VXLAN: &nmstate.VXLAN{BaseIface: dev, ID: u32(7), Remote: statetest.Ptr(addr("192.0.2.99"))}}},
		nmstate.LinkSetController{Name: "veth0", Controller: "br0"},
		nmstate.BridgePortSet{Bridge: "br0", Port: nmstate.LinuxBridgePort{Name: "veth0", STPPathCost: u32(150), STPPriority: u16(40), STPHairpinMode: p(true)}},
		nmstate.LinkModify{Iface: nmstate.Interface{Name: "veth1", Type: nmstate.TypeVeth, MACAddress: statetest.Ptr(nmstate.MAC("02:00:00:00:00:11")), AcceptAllMAC: p(true), Description: str("uplink")}},
		nmstate.LinkSetState{Name: "veth0", Up: true},
		nmstate.LinkSetState{Name: "veth1", Up: true},
		nmstate.LinkSetState{Name: "br0", Up: true},
		nmstate.SysctlSet{Iface: "mv0", Key: "net.ipv6.conf.mv0.disable_ipv6", Value: "1"},
		nmstate.AddrAdd{Iface: "veth1", Address: staticAddr("192.0.2.1/24")},
		nmstate.AddrAdd{Iface: "veth1", Address: staticAddr("192.0.2.2/24")},
		nmstate.AddrAdd{Iface: "veth1", Address: staticAddr("2001:db8::1/64")},
		nmstate.RouteReplace{Route: nmstate.Route{Destination: statetest.Ptr(prefix("0.0.0.0/0")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("192.0.2.254")), Metric: statetest.Ptr[int64](100)}},
		nmstate.RouteReplace{Route: nmstate.Route{Destination: statetest.Ptr(prefix("198.51.100.0/24")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("192.0.2.253")), TableID: u32(100), Cwnd: u32(20), Source: statetest.Ptr(addr("192.0.2.1"))}},
		nmstate.RouteReplace{Route: nmstate.Route{Destination: statetest.Ptr(prefix("203.0.113.0/24")), RouteType: statetest.Ptr(nmstate.RouteType("blackhole")), TableID: u32(100)}},
		nmstate.RouteReplace{Route: nmstate.Route{Destination: statetest.Ptr(prefix("2001:db8:1::/64")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("2001:db8::fe")), Metric: statetest.Ptr[int64](300)}},
		nmstate.RuleAdd{Rule: nmstate.RouteRule{IPFrom: statetest.Ptr(prefix("192.0.2.0/24")), Priority: statetest.Ptr[int64](1000), RouteTable: u32(100)}},
		nmstate.RuleAdd{Rule: nmstate.RouteRule{Family: statetest.Ptr(nmstate.Family("ipv6")), FWMark: statetest.Ptr(nmstate.Hex32(0x10)), FWMask: statetest.Ptr(nmstate.Hex32(0xff)), Priority: statetest.Ptr[int64](2000), RouteTable: u32(200)}},
		nmstate.RuleAdd{Rule: nmstate.RouteRule{IPTo: statetest.Ptr(prefix("203.0.113.0/24")), Priority: statetest.Ptr[int64](3000), Action: statetest.Ptr(nmstate.RouteRuleAction("unreachable"))}},
		nmstate.DNSWrite{Config: nmstate.DNSConfig{Server: []netip.Addr{addr("192.0.2.53"), addr("2001:db8::53")}, Search: []string{"example.com"}, Options: []string{"rotate"}}},
		nmstate.HostnameSet{Name: "node-b"},
	}
}

func TestExecuteBuildShowAndRepeat(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	uts := nstest.UTS(t, "node-a")
	_, b := openNS(t, Options{ResolvConf: resolv, UTSNS: uts})
	ops := buildOps()
	execute(t, b, ops...)
	first := show(t, b)
	checkBuilt(t, first)

	// The same plan again converges to the same state (idempotency).
	execute(t, b, ops...)
	if diff := cmp.Diff(first, show(t, b), ignoreVolatile, cmpopts.IgnoreFields(nmstate.Address{}, "ValidLifetime", "PreferredLifetime")); diff != "" {
		t.Errorf("state after the second run (-first +second):\n%s", diff)
	}
	data, err := os.ReadFile(resolv)
	if err != nil {
		t.Fatal(err)
	}
	wantFile := "# Generated by knmstate\noptions rotate\nsearch example.com\nnameserver 192.0.2.53\nnameserver 2001:db8::53\n"
	if diff := cmp.Diff(wantFile, string(data)); diff != "" {
		t.Errorf("resolv.conf (-want +got):\n%s", diff)
	}

	// Tear down; then once more, when everything is already gone.
	dev := str("veth1")
	teardown := []nmstate.Op{
		nmstate.RuleDelete{Rule: nmstate.RouteRule{IPFrom: statetest.Ptr(prefix("192.0.2.0/24")), Priority: statetest.Ptr[int64](1000), RouteTable: u32(100)}},
		nmstate.RuleDelete{Rule: nmstate.RouteRule{IPTo: statetest.Ptr(prefix("203.0.113.0/24")), Priority: statetest.Ptr[int64](3000), Action: statetest.Ptr(nmstate.RouteRuleAction("unreachable"))}},
		nmstate.RuleDelete{Rule: nmstate.RouteRule{Family: statetest.Ptr(nmstate.Family("ipv6")), FWMark: statetest.Ptr(nmstate.Hex32(0x10)), FWMask: statetest.Ptr(nmstate.Hex32(0xff)), Priority: statetest.Ptr[int64](2000), RouteTable: u32(200)}},
		nmstate.RouteDelete{Route: nmstate.Route{Destination: statetest.Ptr(prefix("0.0.0.0/0")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("192.0.2.254")), Metric: statetest.Ptr[int64](100)}},
		nmstate.RouteDelete{Route: nmstate.Route{Destination: statetest.Ptr(prefix("203.0.113.0/24")), RouteType: statetest.Ptr(nmstate.RouteType("blackhole")), TableID: u32(100)}},
		nmstate.AddrDelete{Iface: "veth1", Address: staticAddr("192.0.2.2/24")},
		nmstate.LinkSetController{Name: "veth0", Controller: ""},
		nmstate.LinkDelete{Name: "br0", Type: nmstate.TypeLinuxBridge},
		nmstate.LinkDelete{Name: "vx0", Type: nmstate.TypeVXLAN},
		nmstate.LinkDelete{Name: "mv0", Type: nmstate.TypeMacVlan},
		nmstate.LinkDelete{Name: "mvt0", Type: nmstate.TypeMacVtap},
		nmstate.LinkDelete{Name: "veth0", Type: nmstate.TypeVeth},
		// Both ends went with veth0; deleting the peer is success too.
		nmstate.LinkDelete{Name: "veth1", Type: nmstate.TypeVeth},
		nmstate.AddrDelete{Iface: "veth1", Address: staticAddr("192.0.2.1/24")},
		nmstate.RouteDelete{Route: nmstate.Route{Destination: statetest.Ptr(prefix("198.51.100.0/24")), NextHopInterface: dev, TableID: u32(100)}},
	}
	execute(t, b, teardown...)
	execute(t, b, teardown...)
	st := show(t, b)
	if diff := cmp.Diff([]string{"lo"}, names(st)); diff != "" {
		t.Errorf("interfaces after teardown (-want +got):\n%s", diff)
	}
	if len(st.Routes.Config) != 0 || len(st.RouteRules.Config) != 0 {
		t.Errorf("left after teardown: routes %+v, rules %+v", st.Routes.Config, st.RouteRules.Config)
	}
}

// checkBuilt asserts what buildOps should have produced, read back by Show.
func checkBuilt(t *testing.T, st *nmstate.State) {
	t.Helper()
	br := findIface(t, st, "br0")
	wantOpts := &nmstate.LinuxBridgeOptions{
		STP:               &nmstate.LinuxBridgeSTP{Enabled: p(true), ForwardDelay: u8(10), HelloTime: u8(3), MaxAge: u8(25), Priority: u16(4096)},
		MACAgeingTime:     u32(120),
		GroupForwardMask:  u16(8),
		MulticastSnooping: p(false),
		MulticastRouter:   statetest.Ptr(nmstate.BridgeMulticastRouter("enabled")),
		MulticastQuerier:  p(true),
	}
	gotOpts := *br.LinuxBridge.Options
	// Compare only the options the plan set.
	gotOpts = nmstate.LinuxBridgeOptions{STP: gotOpts.STP, MACAgeingTime: gotOpts.MACAgeingTime, GroupForwardMask: gotOpts.GroupForwardMask,
		MulticastSnooping: gotOpts.MulticastSnooping, MulticastRouter: gotOpts.MulticastRouter, MulticastQuerier: gotOpts.MulticastQuerier}
	if diff := cmp.Diff(wantOpts, &gotOpts); diff != "" {
		t.Errorf("br0 options (-want +got):\n%s", diff)
	}
	wantPorts := []nmstate.LinuxBridgePort{{Name: "veth0", STPPathCost: u32(150), STPPriority: u16(40), STPHairpinMode: p(true)}}
	if diff := cmp.Diff(wantPorts, br.LinuxBridge.Port); diff != "" {
		t.Errorf("br0 ports (-want +got):\n%s", diff)
	}
	if br.State != nmstate.StateUp || br.Description == nil || *br.Description != "lab bridge" {
		t.Errorf("br0 state %q description %v", br.State, br.Description)
	}
	veth1 := findIface(t, st, "veth1")
	wantVeth1 := nmstate.Interface{
		Name: "veth1", Type: nmstate.TypeVeth, State: nmstate.StateUp, MTU: statetest.Ptr[uint64](1400),
		MACAddress: statetest.Ptr(nmstate.MAC("02:00:00:00:00:11")), AcceptAllMAC: p(true), Description: str("uplink"),
		Veth: &nmstate.Veth{Peer: "veth0"},
		IPv4: &nmstate.IPConfig{Enabled: p(true), DHCP: p(false), Forwarding: p(false), Address: []nmstate.Address{staticAddr("192.0.2.1/24"), staticAddr("192.0.2.2/24")}},
		IPv6: &nmstate.IPConfig{Enabled: p(true), DHCP: p(false), Autoconf: p(false), Forwarding: p(false), Address: []nmstate.Address{staticAddr("2001:db8::1/64")}},
	}
	noMACIgnore := cmp.Options{cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{}), cmpopts.IgnoreFields(nmstate.Interface{}, "MinMTU", "MaxMTU", "Ethtool")}
	if diff := cmp.Diff(wantVeth1, veth1, noMACIgnore); diff != "" {
		t.Errorf("veth1 (-want +got):\n%s", diff)
	}
	if c := findIface(t, st, "veth0").Controller; c == nil || *c != "br0" {
		t.Errorf("veth0 controller = %v, want br0", c)
	}
	if diff := cmp.Diff(&nmstate.MacVlan{BaseIface: str("veth1"), Mode: statetest.Ptr(nmstate.MacVlanMode("bridge")), Promiscuous: p(true)}, findIface(t, st, "mv0").MacVlan); diff != "" {
		t.Errorf("mv0 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&nmstate.IPConfig{Enabled: p(false)}, findIface(t, st, "mv0").IPv6); diff != "" {
		t.Errorf("mv0 ipv6 after sysctl (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&nmstate.MacVlan{BaseIface: str("veth1"), Mode: statetest.Ptr(nmstate.MacVlanMode("private")), Promiscuous: p(true)}, findIface(t, st, "mvt0").MacVtap); diff != "" {
		t.Errorf("mvt0 (-want +got):\n%s", diff)
	}
	wantVX := &nmstate.VXLAN{BaseIface: str("veth1"), ID: u32(7), Remote: statetest.Ptr(addr("192.0.2.99")), DestinationPort: u16(4789), Learning: p(true)}
	if diff := cmp.Diff(wantVX, findIface(t, st, "vx0").VXLAN, ignoreVolatile); diff != "" {
		t.Errorf("vx0 (-want +got):\n%s", diff)
	}
	dev := str("veth1")
	wantRoutes := []nmstate.Route{
		{Destination: statetest.Ptr(prefix("0.0.0.0/0")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("192.0.2.254")), Metric: statetest.Ptr[int64](100), TableID: u32(254)},
		{Destination: statetest.Ptr(prefix("198.51.100.0/24")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("192.0.2.253")), Metric: statetest.Ptr[int64](0), TableID: u32(100), Cwnd: u32(20), Source: statetest.Ptr(addr("192.0.2.1"))},
		{Destination: statetest.Ptr(prefix("203.0.113.0/24")), RouteType: statetest.Ptr(nmstate.RouteType("blackhole")), Metric: statetest.Ptr[int64](0), TableID: u32(100)},
		{Destination: statetest.Ptr(prefix("2001:db8:1::/64")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("2001:db8::fe")), Metric: statetest.Ptr[int64](300), TableID: u32(254)},
	}
	sortRoutes := cmpopts.SortSlices(func(a, b nmstate.Route) bool { return a.Destination.String() < b.Destination.String() })
	if diff := cmp.Diff(wantRoutes, st.Routes.Config, sortRoutes, ignoreVolatile); diff != "" {
		t.Errorf("routes.config (-want +got):\n%s", diff)
	}
	wantRules := []nmstate.RouteRule{
		{Family: statetest.Ptr(nmstate.Family("ipv4")), Priority: statetest.Ptr[int64](1000), RouteTable: u32(100), IPFrom: statetest.Ptr(prefix("192.0.2.0/24"))},
		{Family: statetest.Ptr(nmstate.Family("ipv4")), Priority: statetest.Ptr[int64](3000), Action: statetest.Ptr(nmstate.RouteRuleAction("unreachable")), IPTo: statetest.Ptr(prefix("203.0.113.0/24"))},
		{Family: statetest.Ptr(nmstate.Family("ipv6")), Priority: statetest.Ptr[int64](2000), RouteTable: u32(200), FWMark: statetest.Ptr(nmstate.Hex32(0x10)), FWMask: statetest.Ptr(nmstate.Hex32(0xff))},
	}
	if diff := cmp.Diff(wantRules, st.RouteRules.Config, ignoreVolatile); diff != "" {
		t.Errorf("route-rules.config (-want +got):\n%s", diff)
	}
	wantDNS := &nmstate.DNSConfig{Server: []netip.Addr{addr("192.0.2.53"), addr("2001:db8::53")}, Search: []string{"example.com"}, Options: []string{"rotate"}}
	if diff := cmp.Diff(&nmstate.DNSResolver{Config: wantDNS, Running: wantDNS}, st.DNSResolver, ignoreVolatile); diff != "" {
		t.Errorf("dns-resolver (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&nmstate.Hostname{Running: str("node-b"), Config: str("node-b")}, st.Hostname); diff != "" {
		t.Errorf("hostname (-want +got):\n%s", diff)
	}
}

func TestExecuteRouteMetricChangeReplacesOldRoute(t *testing.T) {
	_, b := openNS(t, Options{})
	route := func(metric int64) nmstate.Route {
		return nmstate.Route{Destination: statetest.Ptr(prefix("198.51.100.0/24")), NextHopInterface: str("veth0"), NextHopAddress: statetest.Ptr(addr("192.0.2.254")), Metric: &metric}
	}
	execute(t, b,
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "veth0", Type: nmstate.TypeVeth, Veth: &nmstate.Veth{Peer: "veth1"}}},
		nmstate.LinkSetState{Name: "veth0", Up: true},
		nmstate.AddrAdd{Iface: "veth0", Address: staticAddr("192.0.2.1/24")},
		nmstate.RouteReplace{Route: route(100)},
	)
	execute(t, b, nmstate.RouteReplace{Route: route(200)})
	got := show(t, b).Routes.Config
	want := []nmstate.Route{route(200)}
	want[0].TableID = u32(254)
	if diff := cmp.Diff(want, got, ignoreVolatile); diff != "" {
		t.Errorf("routes.config after a metric change (-want +got):\n%s", diff)
	}
}

// TestExecuteRouteMetrics installs a route with nmstate 2.2.42+'s route
// metrics and reads them back; a later replace without them clears them.
func TestExecuteRouteMetrics(t *testing.T) {
	_, b := openNS(t, Options{})
	base := func() nmstate.Route {
		return nmstate.Route{Destination: statetest.Ptr(prefix("198.51.100.0/24")), NextHopInterface: str("veth0"),
			NextHopAddress: statetest.Ptr(addr("192.0.2.254")), Metric: statetest.Ptr(int64(100)), TableID: u32(254)}
	}
	withMetrics := base()
	withMetrics.MTU, withMetrics.LockMTU = u32(1400), statetest.Ptr(true)
	withMetrics.AdvMSS, withMetrics.InitCwnd, withMetrics.InitRwnd = u32(1360), u32(20), u32(30)
	withMetrics.QuickACK = statetest.Ptr(true)
	execute(t, b,
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "veth0", Type: nmstate.TypeVeth, Veth: &nmstate.Veth{Peer: "veth1"}}},
		nmstate.LinkSetState{Name: "veth0", Up: true},
		nmstate.AddrAdd{Iface: "veth0", Address: staticAddr("192.0.2.1/24")},
		nmstate.RouteReplace{Route: withMetrics},
	)
	if diff := cmp.Diff([]nmstate.Route{withMetrics}, show(t, b).Routes.Config, ignoreVolatile); diff != "" {
		t.Errorf("routes.config with metrics (-want +got):\n%s", diff)
	}
	unlocked := base()
	unlocked.MTU = u32(1300)
	execute(t, b, nmstate.RouteReplace{Route: unlocked})
	unlocked.LockMTU = statetest.Ptr(false)
	if diff := cmp.Diff([]nmstate.Route{unlocked}, show(t, b).Routes.Config, ignoreVolatile); diff != "" {
		t.Errorf("routes.config after replace (-want +got):\n%s", diff)
	}
}

// TestExecuteAltNames sets a link's alternative names to a target set
// (nmstate 2.2.51's alt-names) and reads them back sorted.
func TestExecuteAltNames(t *testing.T) {
	_, b := openNS(t, Options{})
	alt := func(names ...string) *[]nmstate.AltName {
		l := []nmstate.AltName{}
		for _, n := range names {
			l = append(l, nmstate.AltName{Name: n})
		}
		return &l
	}
	veth := nmstate.Interface{Name: "veth0", Type: nmstate.TypeVeth, Veth: &nmstate.Veth{Peer: "veth1"}, AltNames: alt("port1", "a-very-long-alternative-name-of-veth0")}
	execute(t, b, nmstate.LinkCreate{Iface: veth})
	got := func() *[]nmstate.AltName {
		t.Helper()
		for _, ifc := range show(t, b).Interfaces {
			if ifc.Name == "veth0" {
				return ifc.AltNames
			}
		}
		t.Fatal("veth0 not shown")
		return nil
	}
	if diff := cmp.Diff(alt("a-very-long-alternative-name-of-veth0", "port1"), got()); diff != "" {
		t.Errorf("alt-names after create (-want +got):\n%s", diff)
	}
	execute(t, b, nmstate.LinkModify{Iface: nmstate.Interface{Name: "veth0", Type: nmstate.TypeVeth, AltNames: alt("port1", "port2")}})
	if diff := cmp.Diff(alt("port1", "port2"), got()); diff != "" {
		t.Errorf("alt-names after modify (-want +got):\n%s", diff)
	}
}

func TestExecuteErrorNamesTheOperation(t *testing.T) {
	_, b := openNS(t, Options{})
	op := nmstate.AddrAdd{Iface: "nosuch0", Address: staticAddr("192.0.2.1/24")}
	err := b.Execute(context.Background(), &nmstate.Plan{Ops: []nmstate.Op{op}})
	want := op.String() + ": interface nosuch0 does not exist"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if k := nmstate.KindOf(err); k != nmstate.Dependency {
		t.Errorf("kind = %v, want Dependency", k)
	}
	// Only net.* keys: the other sysctls are not per namespace.
	err = b.Execute(context.Background(), &nmstate.Plan{Ops: []nmstate.Op{nmstate.SysctlSet{Key: "kernel.hostname", Value: "x"}}})
	if err == nil || nmstate.KindOf(err) != nmstate.InvalidArgument {
		t.Errorf("sysctl kernel.hostname: err = %v, want InvalidArgument", err)
	}
}

func TestSysctlPath(t *testing.T) {
	tests := []struct{ iface, key, want string }{
		{"eth1", "net.ipv6.conf.eth1.disable_ipv6", "/proc/sys/net/ipv6/conf/eth1/disable_ipv6"},
		{"eth1.10", "net.ipv4.conf.eth1.10.forwarding", "/proc/sys/net/ipv4/conf/eth1.10/forwarding"},
		{"", "net.ipv4.ip_forward", "/proc/sys/net/ipv4/ip_forward"},
	}
	for _, tc := range tests {
		got, err := sysctlPath(tc.iface, tc.key)
		if err != nil || got != tc.want {
			t.Errorf("sysctlPath(%q, %q) = %q, %v; want %q", tc.iface, tc.key, got, err, tc.want)
		}
	}
}

func TestExecuteLinkModify(t *testing.T) {
	_, b := openNS(t, Options{})
	execute(t, b,
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "veth0", Type: nmstate.TypeVeth, Veth: &nmstate.Veth{Peer: "veth1"}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "br0", Type: nmstate.TypeLinuxBridge, LinuxBridge: &nmstate.LinuxBridge{}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "mv0", Type: nmstate.TypeMacVlan, MacVlan: &nmstate.MacVlan{BaseIface: str("veth0")}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "vx0", Type: nmstate.TypeVXLAN, VXLAN: &nmstate.VXLAN{ID: u32(9), DestinationPort: u16(8472), Learning: p(false)}}},
	)
	ops := []nmstate.Op{
		nmstate.LinkModify{Iface: nmstate.Interface{Name: "veth0", Type: nmstate.TypeVeth, MTU: statetest.Ptr[uint64](1280), Description: str("renamed")}},
		nmstate.LinkModify{Iface: nmstate.Interface{Name: "br0", Type: nmstate.TypeLinuxBridge, LinuxBridge: &nmstate.LinuxBridge{
			Options: &nmstate.LinuxBridgeOptions{MACAgeingTime: u32(60), STP: &nmstate.LinuxBridgeSTP{Priority: u16(8192)}}}}},
		nmstate.LinkModify{Iface: nmstate.Interface{Name: "mv0", Type: nmstate.TypeMacVlan, MacVlan: &nmstate.MacVlan{Mode: statetest.Ptr(nmstate.MacVlanMode("private"))}}},
		nmstate.LinkModify{Iface: nmstate.Interface{Name: "vx0", Type: nmstate.TypeVXLAN, VXLAN: &nmstate.VXLAN{Learning: p(true)}}},
	}
	execute(t, b, ops...)
	execute(t, b, ops...)
	st := show(t, b)
	v := findIface(t, st, "veth0")
	if *v.MTU != 1280 || v.Description == nil || *v.Description != "renamed" {
		t.Errorf("veth0 mtu %d description %v", *v.MTU, v.Description)
	}
	o := findIface(t, st, "br0").LinuxBridge.Options
	if *o.MACAgeingTime != 60 || *o.STP.Priority != 8192 || *o.STP.Enabled {
		t.Errorf("br0 ageing %d priority %d stp %v; want 60, 8192, false", *o.MACAgeingTime, *o.STP.Priority, *o.STP.Enabled)
	}
	if m := findIface(t, st, "mv0").MacVlan.Mode; *m != "private" {
		t.Errorf("mv0 mode %s, want private", *m)
	}
	vx := findIface(t, st, "vx0").VXLAN
	if *vx.Learning != true || *vx.DestinationPort != 8472 || vx.BaseIface != nil {
		t.Errorf("vx0 learning %v port %d base %v", *vx.Learning, *vx.DestinationPort, vx.BaseIface)
	}
}

func TestOpenByNameAndOwnNamespace(t *testing.T) {
	ns, _ := openNS(t, Options{})
	b, err := Open(context.Background(), Options{NetNS: ns.Name})
	if err != nil {
		t.Fatalf("Open by name %s: %v", ns.Name, err)
	}
	defer b.Close()
	if got := names(show(t, b)); len(got) != 1 || got[0] != "lo" {
		t.Errorf("interfaces of a fresh namespace = %v, want [lo]", got)
	}
	// "" is this process's own namespace, read only here.
	own, err := Open(context.Background(), Options{})
	if err != nil {
		t.Fatalf("Open own namespace: %v", err)
	}
	defer own.Close()
	if show(t, own).FindTyped("lo", nmstate.TypeLoopback) == nil {
		t.Errorf("own namespace: no loopback shown")
	}
	if _, err := Open(context.Background(), Options{NetNS: "knmt-does-not-exist"}); err == nil {
		t.Errorf("Open of a missing namespace: no error")
	}
}

func TestExecuteECMPRouteWithWeights(t *testing.T) {
	_, b := openNS(t, Options{})
	hop := func(dev, gw string, weight uint16) nmstate.Route {
		return nmstate.Route{Destination: statetest.Ptr(prefix("203.0.113.0/24")), NextHopInterface: str(dev), NextHopAddress: statetest.Ptr(addr(gw)),
			Metric: statetest.Ptr[int64](50), TableID: u32(254), Weight: &weight}
	}
	setup := []nmstate.Op{
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "veth0", Type: nmstate.TypeVeth, Veth: &nmstate.Veth{Peer: "veth1"}}},
		nmstate.LinkSetState{Name: "veth0", Up: true},
		nmstate.LinkSetState{Name: "veth1", Up: true},
		nmstate.AddrAdd{Iface: "veth0", Address: staticAddr("192.0.2.1/24")},
		nmstate.AddrAdd{Iface: "veth1", Address: staticAddr("198.51.100.1/24")},
		nmstate.RouteReplace{Route: hop("veth0", "192.0.2.254", 2)},
		nmstate.RouteReplace{Route: hop("veth1", "198.51.100.254", 3)},
	}
	execute(t, b, setup...)
	execute(t, b, setup...)
	want := []nmstate.Route{hop("veth0", "192.0.2.254", 2), hop("veth1", "198.51.100.254", 3)}
	if diff := cmp.Diff(want, show(t, b).Routes.Config, ignoreVolatile); diff != "" {
		t.Errorf("routes.config (-want +got):\n%s", diff)
	}
	// Removing one next hop leaves the other (a plain route: no weight).
	execute(t, b, nmstate.RouteDelete{Route: hop("veth0", "192.0.2.254", 1)}, nmstate.RouteDelete{Route: hop("veth0", "192.0.2.254", 1)})
	left := hop("veth1", "198.51.100.254", 3)
	left.Weight = nil
	if diff := cmp.Diff([]nmstate.Route{left}, show(t, b).Routes.Config, ignoreVolatile); diff != "" {
		t.Errorf("routes.config after removing a next hop (-want +got):\n%s", diff)
	}
	if err := b.Execute(context.Background(), &nmstate.Plan{Ops: []nmstate.Op{nmstate.RouteReplace{Route: nmstate.Route{
		Destination: statetest.Ptr(prefix("2001:db8::/64")), NextHopInterface: str("veth0"), Weight: statetest.Ptr[uint16](2)}}}}); nmstate.KindOf(err) != nmstate.NotSupported {
		t.Errorf("IPv6 weight: err = %v, want NotSupported", err)
	}
}

// An ethernet with a veth peer is a veth: nmstate documents say
// `type: ethernet` for veth ends, and re-running such a plan against the
// existing pair converges it.
func TestExecuteEthernetWithPeerIsVeth(t *testing.T) {
	_, b := openNS(t, Options{})
	op := nmstate.LinkCreate{Iface: nmstate.Interface{Name: "eth1", Type: nmstate.TypeEthernet, MTU: statetest.Ptr[uint64](1450), Veth: &nmstate.Veth{Peer: "sw-eth1"}}}
	execute(t, b, op)
	execute(t, b, op)
	got := findIface(t, show(t, b), "eth1")
	if got.Type != nmstate.TypeVeth || got.Veth == nil || got.Veth.Peer != "sw-eth1" || *got.MTU != 1450 {
		t.Errorf("eth1: type %q veth %+v mtu %d", got.Type, got.Veth, *got.MTU)
	}
	// A plain ethernet cannot be created, only configured when it exists.
	err := b.Execute(context.Background(), &nmstate.Plan{Ops: []nmstate.Op{nmstate.LinkCreate{Iface: nmstate.Interface{Name: "eth9", Type: nmstate.TypeEthernet}}}})
	if nmstate.KindOf(err) != nmstate.NotSupported {
		t.Errorf("creating a plain ethernet: err = %v, want NotSupported", err)
	}
}
