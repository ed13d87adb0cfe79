package kernel

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/nmstate/statetest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

var p = statetest.Ptr[bool]

// openNS opens a backend on a fresh namespace; both are closed by cleanup.
func openNS(t *testing.T, opts Options) (*nstest.NS, *Backend) {
	t.Helper()
	ns := nstest.New(t)
	opts.NetNS = ns.Path
	b, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return ns, b
}

func show(t *testing.T, b *Backend) *nmstate.State {
	t.Helper()
	st, err := b.Show(context.Background())
	if err != nil {
		t.Fatalf("Show: %v", err)
	}
	return st
}

func findIface(t *testing.T, st *nmstate.State, name string) nmstate.Interface {
	t.Helper()
	i := st.FindTyped(name, "")
	if i == nil {
		t.Fatalf("interface %s not shown; have %v", name, names(st))
	}
	return *i
}

func names(st *nmstate.State) []string {
	var out []string
	for _, i := range st.Interfaces {
		out = append(out, i.Name)
	}
	return out
}

// ignoreVolatile leaves out what differs between runs or kernels: random
// MACs, MTU limits, running bridge timers, a kernel-rounded interval, the
// offload features a kernel gives veths (ethtool_linux_test.go tests them).
var ignoreVolatile = cmp.Options{
	cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{}),
	cmpopts.IgnoreFields(nmstate.Interface{}, "MACAddress", "PermanentMACAddress", "MinMTU", "MaxMTU", "Ethtool"),
	cmpopts.IgnoreFields(nmstate.LinuxBridgeOptions{}, "GCTimer", "HelloTimer", "MulticastStartupQueryInterval", "HashElasticity", "HashMax"),
}

func link(t *testing.T, ns *nstest.NS, name string) netlink.Link {
	t.Helper()
	l, err := ns.Netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("link %s: %v", name, err)
	}
	return l
}

func mustAdd(t *testing.T, ns *nstest.NS, l netlink.Link) {
	t.Helper()
	if err := ns.Netlink.LinkAdd(l); err != nil {
		t.Fatalf("adding %s: %v", l.Attrs().Name, err)
	}
}

func addr(s string) netip.Addr     { return netip.MustParseAddr(s) }
func prefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func staticAddr(s string) nmstate.Address {
	pf := prefix(s)
	return nmstate.Address{IP: pf.Addr(), PrefixLength: uint8(pf.Bits())}
}

func TestShowLoopback(t *testing.T) {
	_, b := openNS(t, Options{})
	got := findIface(t, show(t, b), "lo")
	want := nmstate.Interface{
		Name: "lo", Type: nmstate.TypeLoopback, State: nmstate.StateUp,
		MTU: statetest.Ptr[uint64](65536), AcceptAllMAC: p(false),
		IPv4: &nmstate.IPConfig{Enabled: p(true), DHCP: p(false), Forwarding: p(false), Address: []nmstate.Address{staticAddr("127.0.0.1/8")}},
		IPv6: &nmstate.IPConfig{Enabled: p(true), DHCP: p(false), Autoconf: p(false), Forwarding: p(false), Address: []nmstate.Address{staticAddr("::1/128")}},
	}
	if diff := cmp.Diff(want, got, ignoreVolatile); diff != "" {
		t.Errorf("lo (-want +got):\n%s", diff)
	}
}

func TestShowVethPairAndAddresses(t *testing.T) {
	ns, b := openNS(t, Options{})
	other := nstest.New(t)
	mustAdd(t, ns, &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0", MTU: 1400}, PeerName: "veth1"})
	nstest.Veth(t, ns, "ext0", other, "far0")
	ns.LinkUp(t, "veth0")
	ns.AddrAdd(t, "veth0", "192.0.2.1/24")
	ns.AddrAdd(t, "veth0", "192.0.2.2/24") // secondary
	ns.AddrAdd(t, "veth0", "2001:db8::1/64")
	// A dynamic (leased) address: finite lifetimes.
	dyn := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP("198.51.100.7"), Mask: net.CIDRMask(24, 32)}, ValidLft: 3600, PreferedLft: 1800}
	if err := ns.Netlink.AddrAdd(link(t, ns, "veth1"), dyn); err != nil {
		t.Fatal(err)
	}
	if err := ns.Netlink.LinkSetAlias(link(t, ns, "veth1"), "uplink to rack"); err != nil {
		t.Fatal(err)
	}
	if err := ns.Netlink.SetPromiscOn(link(t, ns, "veth1")); err != nil {
		t.Fatal(err)
	}
	st := show(t, b)

	v6off := &nmstate.IPConfig{Enabled: p(true), DHCP: p(false), Autoconf: p(false), Forwarding: p(false), Address: []nmstate.Address{}}
	want := []nmstate.Interface{
		{
			Name: "veth0", Type: nmstate.TypeVeth, State: nmstate.StateUp, MTU: statetest.Ptr[uint64](1400),
			AcceptAllMAC: p(false), Veth: &nmstate.Veth{Peer: "veth1"},
			IPv4: &nmstate.IPConfig{Enabled: p(true), DHCP: p(false), Forwarding: p(false), Address: []nmstate.Address{staticAddr("192.0.2.1/24"), staticAddr("192.0.2.2/24")}},
			IPv6: &nmstate.IPConfig{Enabled: p(true), DHCP: p(false), Autoconf: p(false), Forwarding: p(false), Address: []nmstate.Address{staticAddr("2001:db8::1/64")}},
		},
		{
			Name: "veth1", Type: nmstate.TypeVeth, State: nmstate.StateDown, MTU: statetest.Ptr[uint64](1400),
			AcceptAllMAC: p(true), Description: statetest.Ptr("uplink to rack"), Veth: &nmstate.Veth{Peer: "veth0"},
			IPv4: &nmstate.IPConfig{Enabled: p(true), DHCP: p(true), Forwarding: p(false), Address: []nmstate.Address{{
				IP: addr("198.51.100.7"), PrefixLength: 24,
				ValidLifetime: statetest.Ptr("3600sec"), PreferredLifetime: statetest.Ptr("1800sec"),
			}}},
			IPv6: v6off,
		},
		{
			Name: "ext0", Type: nmstate.TypeVeth, State: nmstate.StateUp, MTU: statetest.Ptr[uint64](1500),
			AcceptAllMAC: p(false), Veth: &nmstate.Veth{Peer: "far0"},
			IPv4: &nmstate.IPConfig{Enabled: p(false)}, IPv6: v6off,
		},
	}
	for _, w := range want {
		got := findIface(t, st, w.Name)
		// Lifetimes count down while the test runs; compare the rest.
		if w.Name == "veth1" && got.IPv4 != nil && len(got.IPv4.Address) == 1 {
			a := &got.IPv4.Address[0]
			if a.ValidLifetime == nil || a.PreferredLifetime == nil {
				t.Fatalf("veth1 dynamic address without lifetimes: %+v", a)
			}
			a.ValidLifetime, a.PreferredLifetime = statetest.Ptr("3600sec"), statetest.Ptr("1800sec")
		}
		if diff := cmp.Diff(w, got, ignoreVolatile); diff != "" {
			t.Errorf("%s (-want +got):\n%s", w.Name, diff)
		}
	}
}

func TestShowIPv6Disabled(t *testing.T) {
	ns, b := openNS(t, Options{})
	mustAdd(t, ns, &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0"}, PeerName: "veth1"})
	if err := ns.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/veth0/disable_ipv6", []byte("1"), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	got := findIface(t, show(t, b), "veth0")
	if diff := cmp.Diff(&nmstate.IPConfig{Enabled: p(false)}, got.IPv6, ignoreVolatile); diff != "" {
		t.Errorf("veth0 ipv6 (-want +got):\n%s", diff)
	}
	if v := findIface(t, show(t, b), "veth1").IPv6; v == nil || v.Enabled == nil || !*v.Enabled {
		t.Errorf("veth1 ipv6 = %+v, want enabled", v)
	}
}

func TestShowBridgeWithPort(t *testing.T) {
	ns, b := openNS(t, Options{})
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}, AgeingTime: statetest.Ptr[uint32](12000), MulticastSnooping: p(false), GroupFwdMask: statetest.Ptr[uint16](8)}
	mustAdd(t, ns, br)
	mustAdd(t, ns, &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0"}, PeerName: "veth1"})
	if err := ns.Netlink.LinkSetMaster(link(t, ns, "veth0"), link(t, ns, "br0")); err != nil {
		t.Fatal(err)
	}
	if err := ns.Netlink.LinkSetHairpin(link(t, ns, "veth0"), true); err != nil {
		t.Fatal(err)
	}
	st := show(t, b)
	got := findIface(t, st, "br0")
	want := &nmstate.LinuxBridge{
		Options: &nmstate.LinuxBridgeOptions{
			GroupAddr:                      statetest.Ptr(nmstate.MAC("01:80:C2:00:00:00")),
			GroupForwardMask:               statetest.Ptr[uint16](8),
			MACAgeingTime:                  statetest.Ptr[uint32](120),
			MulticastLastMemberCount:       statetest.Ptr[uint32](2),
			MulticastLastMemberInterval:    statetest.Ptr[uint64](100),
			MulticastMembershipInterval:    statetest.Ptr[uint64](26000),
			MulticastQuerier:               p(false),
			MulticastQuerierInterval:       statetest.Ptr[uint64](25500),
			MulticastQueryInterval:         statetest.Ptr[uint64](12500),
			MulticastQueryResponseInterval: statetest.Ptr[uint64](1000),
			MulticastQueryUseIfaddr:        p(false),
			MulticastRouter:                statetest.Ptr(nmstate.BridgeMulticastRouter("auto")),
			MulticastSnooping:              p(false),
			MulticastStartupQueryCount:     statetest.Ptr[uint32](2),
			STP: &nmstate.LinuxBridgeSTP{
				Enabled: p(false), ForwardDelay: statetest.Ptr[uint8](15), HelloTime: statetest.Ptr[uint8](2),
				MaxAge: statetest.Ptr[uint8](20), Priority: statetest.Ptr[uint16](32768),
			},
			VlanProtocol:    statetest.Ptr(nmstate.VLANProto("802.1q")),
			VlanDefaultPVID: statetest.Ptr[uint16](1),
		},
		Port: []nmstate.LinuxBridgePort{{
			Name: "veth0", STPHairpinMode: p(true), STPPathCost: statetest.Ptr[uint32](2), STPPriority: statetest.Ptr[uint16](32),
		}},
	}
	// vlan-protocol and vlan-default-pvid exist only with bridge VLAN
	// filtering in the kernel: asserted in the qemu lane.
	noVLAN := cmpopts.IgnoreFields(nmstate.LinuxBridgeOptions{}, "VlanProtocol", "VlanDefaultPVID")
	if diff := cmp.Diff(want, got.LinuxBridge, ignoreVolatile, noVLAN); diff != "" {
		t.Errorf("br0 bridge (-want +got):\n%s", diff)
	}
	if got.Type != nmstate.TypeLinuxBridge {
		t.Errorf("br0 type = %q", got.Type)
	}
	port := findIface(t, st, "veth0")
	if port.Controller == nil || *port.Controller != "br0" {
		t.Errorf("veth0: controller %v, want br0", port.Controller)
	}
	if diff := cmp.Diff(&nmstate.IPConfig{Enabled: p(false)}, port.IPv4); diff != "" {
		t.Errorf("veth0 ipv4 (-want +got):\n%s", diff)
	}
}

func TestShowStackedAndTun(t *testing.T) {
	ns, b := openNS(t, Options{})
	mustAdd(t, ns, &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0"}, PeerName: "veth1"})
	base := link(t, ns, "veth0").Attrs().Index
	mustAdd(t, ns, &netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: "mv0", ParentIndex: base}, Mode: netlink.MACVLAN_MODE_BRIDGE})
	mustAdd(t, ns, &netlink.Macvtap{Macvlan: netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: "mvt0", ParentIndex: base}, Mode: netlink.MACVLAN_MODE_VEPA}})
	mustAdd(t, ns, &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: "vx0"}, VxlanId: 42, VtepDevIndex: base, Port: 4789, Learning: true,
		SrcAddr: net.ParseIP("192.0.2.1"), Group: net.ParseIP("192.0.2.9")})
	// tun/tap devices are made with an ioctl on /dev/net/tun, which acts
	// in the calling thread's namespace: create them from inside ns.
	for _, tt := range []*netlink.Tuntap{
		{LinkAttrs: netlink.LinkAttrs{Name: "tap0"}, Mode: netlink.TUNTAP_MODE_TAP, Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_ONE_QUEUE, Owner: 0, Group: 0},
		{LinkAttrs: netlink.LinkAttrs{Name: "tun0"}, Mode: netlink.TUNTAP_MODE_TUN, Flags: netlink.TUNTAP_ONE_QUEUE | netlink.TUNTAP_VNET_HDR, Owner: 1000, Group: 0},
	} {
		if err := ns.Do(func() error { return ns.Netlink.LinkAdd(tt) }); err != nil {
			t.Fatalf("adding %s: %v", tt.Name, err)
		}
	}
	st := show(t, b)
	veth0 := statetest.Ptr("veth0")
	tests := []struct {
		name string
		typ  nmstate.InterfaceType
		sect func(nmstate.Interface) any
		want any
	}{
		{"mv0", nmstate.TypeMacVlan, func(i nmstate.Interface) any { return i.MacVlan },
			&nmstate.MacVlan{BaseIface: veth0, Mode: statetest.Ptr(nmstate.MacVlanMode("bridge")), Promiscuous: p(true)}},
		{"mvt0", nmstate.TypeMacVtap, func(i nmstate.Interface) any { return i.MacVtap },
			&nmstate.MacVlan{BaseIface: veth0, Mode: statetest.Ptr(nmstate.MacVlanMode("vepa")), Promiscuous: p(true)}},
		{"vx0", nmstate.TypeVXLAN, func(i nmstate.Interface) any { return i.VXLAN },
			&nmstate.VXLAN{BaseIface: veth0, ID: statetest.Ptr[uint32](42), Local: statetest.Ptr(addr("192.0.2.1")),
				Remote: statetest.Ptr(addr("192.0.2.9")), DestinationPort: statetest.Ptr[uint16](4789), Learning: p(true)}},
		{"tap0", nmstate.TypeTun, func(i nmstate.Interface) any { return i.Tun },
			&nmstate.Tun{Mode: statetest.Ptr("tap"), Owner: statetest.Ptr[uint32](0), Group: statetest.Ptr[uint32](0), PI: p(false), VnetHdr: p(false), MultiQueue: p(false), Persist: p(true)}},
		{"tun0", nmstate.TypeTun, func(i nmstate.Interface) any { return i.Tun },
			&nmstate.Tun{Mode: statetest.Ptr("tun"), Owner: statetest.Ptr[uint32](1000), Group: statetest.Ptr[uint32](0), PI: p(true), VnetHdr: p(true), MultiQueue: p(false), Persist: p(true)}},
	}
	for _, tc := range tests {
		got := findIface(t, st, tc.name)
		if got.Type != tc.typ {
			t.Errorf("%s type = %q, want %q", tc.name, got.Type, tc.typ)
		}
		if diff := cmp.Diff(tc.want, tc.sect(got), ignoreVolatile); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestShowRoutesAndRules(t *testing.T) {
	ns, b := openNS(t, Options{})
	mustAdd(t, ns, &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0"}, PeerName: "veth1"})
	ns.LinkUp(t, "veth0")
	ns.AddrAdd(t, "veth0", "192.0.2.1/24")
	ns.AddrAdd(t, "veth0", "2001:db8::1/64")
	idx := link(t, ns, "veth0").Attrs().Index
	routes := []netlink.Route{
		{Dst: nil, Gw: net.ParseIP("192.0.2.254"), LinkIndex: idx, Priority: 100, Protocol: unix.RTPROT_STATIC},
		{Dst: ipnet("198.51.100.0/24"), Gw: net.ParseIP("192.0.2.253"), LinkIndex: idx, Priority: 50, Table: 100, Protocol: unix.RTPROT_STATIC},
		{Dst: ipnet("203.0.113.0/24"), LinkIndex: idx, Table: 200, Protocol: unix.RTPROT_BOOT, Scope: unix.RT_SCOPE_LINK},
		{Dst: ipnet("203.0.113.128/25"), Type: unix.RTN_BLACKHOLE, Table: 200, Protocol: unix.RTPROT_STATIC},
		{Dst: ipnet("2001:db8:1::/64"), Gw: net.ParseIP("2001:db8::fe"), LinkIndex: idx, Priority: 300, Protocol: unix.RTPROT_STATIC},
		{Dst: ipnet("10.9.0.0/16"), Gw: net.ParseIP("192.0.2.252"), LinkIndex: idx, Protocol: unix.RTPROT_DHCP},
	}
	for _, r := range routes {
		if err := ns.Netlink.RouteAdd(&r); err != nil {
			t.Fatalf("adding route %v: %v", r, err)
		}
	}
	rule := netlink.NewRule()
	rule.Priority, rule.Table, rule.Src = 1000, 100, ipnet("192.0.2.0/24")
	rule2 := netlink.NewRule()
	rule2.Family, rule2.Priority, rule2.Mark, rule2.Mask, rule2.Table, rule2.SuppressPrefixlen = unix.AF_INET6, 2000, 0x10, statetest.Ptr[uint32](0xff), 200, 0
	rule3 := netlink.NewRule()
	rule3.Priority, rule3.Dst, rule3.Type, rule3.IifName = 3000, ipnet("203.0.113.0/24"), frActProhibit, "veth0"
	for _, r := range []*netlink.Rule{rule, rule2, rule3} {
		if err := ns.Netlink.RuleAdd(r); err != nil {
			t.Fatalf("adding rule %v: %v", r, err)
		}
	}
	st := show(t, b)
	dev := statetest.Ptr("veth0")
	cfg := []nmstate.Route{
		{Destination: statetest.Ptr(prefix("0.0.0.0/0")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("192.0.2.254")), Metric: statetest.Ptr[int64](100), TableID: statetest.Ptr[uint32](254)},
		{Destination: statetest.Ptr(prefix("198.51.100.0/24")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("192.0.2.253")), Metric: statetest.Ptr[int64](50), TableID: statetest.Ptr[uint32](100)},
		{Destination: statetest.Ptr(prefix("203.0.113.0/24")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("0.0.0.0")), Metric: statetest.Ptr[int64](0), TableID: statetest.Ptr[uint32](200)},
		{Destination: statetest.Ptr(prefix("203.0.113.128/25")), RouteType: statetest.Ptr(nmstate.RouteType("blackhole")), Metric: statetest.Ptr[int64](0), TableID: statetest.Ptr[uint32](200)},
		{Destination: statetest.Ptr(prefix("2001:db8:1::/64")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("2001:db8::fe")), Metric: statetest.Ptr[int64](300), TableID: statetest.Ptr[uint32](254)},
	}
	dhcp := nmstate.Route{Destination: statetest.Ptr(prefix("10.9.0.0/16")), NextHopInterface: dev, NextHopAddress: statetest.Ptr(addr("192.0.2.252")), Metric: statetest.Ptr[int64](0), TableID: statetest.Ptr[uint32](254)}
	sortRoutes := cmpopts.SortSlices(func(a, b nmstate.Route) bool { return a.Destination.String() < b.Destination.String() })
	if diff := cmp.Diff(cfg, st.Routes.Config, sortRoutes, ignoreVolatile); diff != "" {
		t.Errorf("routes.config (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(append(append([]nmstate.Route{}, cfg...), dhcp), st.Routes.Running, sortRoutes, ignoreVolatile); diff != "" {
		t.Errorf("routes.running (-want +got):\n%s", diff)
	}
	wantRules := []nmstate.RouteRule{
		{Family: statetest.Ptr(nmstate.Family("ipv4")), Priority: statetest.Ptr[int64](1000), RouteTable: statetest.Ptr[uint32](100), IPFrom: statetest.Ptr(prefix("192.0.2.0/24"))},
		{Family: statetest.Ptr(nmstate.Family("ipv4")), Priority: statetest.Ptr[int64](3000), Action: statetest.Ptr(nmstate.RouteRuleAction("prohibit")), IPTo: statetest.Ptr(prefix("203.0.113.0/24")), IIF: dev},
		{Family: statetest.Ptr(nmstate.Family("ipv6")), Priority: statetest.Ptr[int64](2000), RouteTable: statetest.Ptr[uint32](200),
			FWMark: statetest.Ptr(nmstate.Hex32(0x10)), FWMask: statetest.Ptr(nmstate.Hex32(0xff)), SuppressPrefixLength: statetest.Ptr[uint32](0)},
	}
	if diff := cmp.Diff(wantRules, st.RouteRules.Config, ignoreVolatile); diff != "" {
		t.Errorf("route-rules.config (-want +got):\n%s", diff)
	}
}

func ipnet(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

func TestShowDNS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	data := "# comment\nsearch example.com lab.example\nnameserver 192.0.2.53\nnameserver 2001:db8::53\noptions rotate ndots:2\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, b := openNS(t, Options{ResolvConf: path})
	cfg := &nmstate.DNSConfig{
		Server:  []netip.Addr{addr("192.0.2.53"), addr("2001:db8::53")},
		Search:  []string{"example.com", "lab.example"},
		Options: []string{"rotate", "ndots:2"},
	}
	if diff := cmp.Diff(&nmstate.DNSResolver{Config: cfg, Running: cfg}, show(t, b).DNSResolver, ignoreVolatile); diff != "" {
		t.Errorf("dns-resolver (-want +got):\n%s", diff)
	}
}

func TestShowHostname(t *testing.T) {
	uts := nstest.UTS(t, "node-a")
	_, b := openNS(t, Options{UTSNS: uts})
	want := &nmstate.Hostname{Running: statetest.Ptr("node-a"), Config: statetest.Ptr("node-a")}
	if diff := cmp.Diff(want, show(t, b).Hostname); diff != "" {
		t.Errorf("hostname (-want +got):\n%s", diff)
	}
	// No UTS namespace configured: no hostname section.
	_, b2 := openNS(t, Options{})
	if h := show(t, b2).Hostname; h != nil {
		t.Errorf("hostname without UTSNS = %+v, want nil", h)
	}
}

func TestShowMultipathRouteIsFlattened(t *testing.T) {
	ns, b := openNS(t, Options{})
	mustAdd(t, ns, &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0"}, PeerName: "veth1"})
	ns.LinkUp(t, "veth0")
	ns.LinkUp(t, "veth1")
	ns.AddrAdd(t, "veth0", "192.0.2.1/24")
	ns.AddrAdd(t, "veth1", "198.51.100.1/24")
	r := &netlink.Route{Dst: ipnet("203.0.113.0/24"), Protocol: unix.RTPROT_STATIC, MultiPath: []*netlink.NexthopInfo{
		{LinkIndex: link(t, ns, "veth0").Attrs().Index, Gw: net.ParseIP("192.0.2.254"), Hops: 0},
		{LinkIndex: link(t, ns, "veth1").Attrs().Index, Gw: net.ParseIP("198.51.100.254"), Hops: 4},
	}}
	if err := ns.Netlink.RouteAdd(r); err != nil {
		t.Fatal(err)
	}
	dst := statetest.Ptr(prefix("203.0.113.0/24"))
	want := []nmstate.Route{
		{Destination: dst, NextHopInterface: statetest.Ptr("veth0"), NextHopAddress: statetest.Ptr(addr("192.0.2.254")), Metric: statetest.Ptr[int64](0), TableID: statetest.Ptr[uint32](254), Weight: statetest.Ptr[uint16](1)},
		{Destination: dst, NextHopInterface: statetest.Ptr("veth1"), NextHopAddress: statetest.Ptr(addr("198.51.100.254")), Metric: statetest.Ptr[int64](0), TableID: statetest.Ptr[uint32](254), Weight: statetest.Ptr[uint16](5)},
	}
	if diff := cmp.Diff(want, show(t, b).Routes.Config, ignoreVolatile); diff != "" {
		t.Errorf("routes.config (-want +got):\n%s", diff)
	}
}
