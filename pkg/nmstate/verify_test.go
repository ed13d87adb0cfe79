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

// errLines splits a verification error into its lines (nil for success).
func errLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

func TestVerify(t *testing.T) {
	bridgeWith := func(f func(*nmstate.LinuxBridgeOptions)) st.IfaceOption {
		return st.With(func(i *nmstate.Interface) {
			if i.LinuxBridge.Options == nil {
				i.LinuxBridge.Options = &nmstate.LinuxBridgeOptions{}
			}
			f(i.LinuxBridge.Options)
		})
	}
	dynamic := func(ip string, plen uint8) nmstate.Address {
		a := nmstate.Address{IP: netip.MustParseAddr(ip), PrefixLength: plen, ValidLifetime: st.Ptr("3600sec"), PreferredLifetime: st.Ptr("3600sec")}
		return a
	}
	addAddr := func(fam string, a nmstate.Address) st.IfaceOption {
		return st.With(func(i *nmstate.Interface) {
			c := i.IPv4
			if fam == "ipv6" {
				c = i.IPv6
			}
			c.Address = append(c.Address, a)
		})
	}

	trunk := func(ids ...uint16) nmstate.BridgeVLAN {
		v := nmstate.BridgeVLAN{Mode: st.Ptr(nmstate.BridgeVLANMode("trunk"))}
		for _, id := range ids {
			v.TrunkTags = append(v.TrunkTags, nmstate.TrunkTag{ID: st.Ptr(id)})
		}
		return v
	}

	tests := []struct {
		name             string
		desired, current *nmstate.State
		want             []string
	}{
		{
			name:    "empty desired state verifies",
			desired: st.State(),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))),
		},
		{
			name:    "desired subset of current verifies",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400)))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400), st.MAC("02:00:00:00:00:01"), st.IPv4("192.0.2.1/24")))),
		},
		{
			name:    "differing scalar is reported with path desire and current",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400)))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))),
			want:    []string{"verification failure: eth1.interface.mtu desire '1400', current '1500'"},
		},
		{
			name:    "every mismatch is listed",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400)), st.Ethernet("eth2", st.MTU(9000)))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)), st.Ethernet("eth2", st.MTU(1500)))),
			want: []string{
				"verification failure: eth1.interface.mtu desire '1400', current '1500'",
				"verification failure: eth2.interface.mtu desire '9000', current '1500'",
			},
		},
		{
			name:    "desired key missing in current is a mismatch",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400)))),
			current: st.State(st.Interfaces(st.Ethernet("eth1"))),
			want:    []string{"verification failure: eth1.interface.mtu desire '1400', current 'null'"},
		},
		{
			name:    "desired up interface must exist",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0"))),
			current: st.State(st.Interfaces(st.Ethernet("eth1"))),
			want:    []string{"verification failure: br0.interface: failed to find desired interface br0"},
		},
		{
			name:    "desired absent interface must not exist",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Absent()))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0"))),
			want:    []string{"verification failure: br0.interface: absent interface br0 still found"},
		},
		{
			name:    "desired absent interface that is gone verifies",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Absent()))),
			current: st.State(st.Interfaces(st.Ethernet("eth1"))),
		},
		{
			name:    "untyped absent interface must not exist",
			desired: st.State(st.Interfaces(nmstate.Interface{Name: "veth1", State: nmstate.StateAbsent})),
			current: st.State(st.Interfaces(st.Veth("veth1", "veth1p"))),
			want:    []string{"verification failure: veth1.interface: absent interface veth1 still found"},
		},
		{
			name:    "virtual down interface must not exist",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Down()))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0", st.Down()))),
			want:    []string{"verification failure: br0.interface: down interface br0 still found"},
		},
		{
			name:    "physical absent or down interface may remain",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.Absent()), st.Ethernet("eth2", st.Down()))),
			current: st.State(st.Interfaces(st.Ethernet("eth1"), st.Ethernet("eth2"))),
		},
		{
			name:    "desired ignore interface is skipped",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400), st.StateOf(nmstate.StateIgnore)))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))),
		},
		{
			name:    "arrays compare element-wise and order matters",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1"), st.BridgePortVLAN("eth1", trunk(100, 200))))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1"), st.BridgePortVLAN("eth1", trunk(200, 100))))),
			want: []string{
				"verification failure: br0.interface.bridge.port[0].vlan.trunk-tags[0].id desire '100', current '200'",
				"verification failure: br0.interface.bridge.port[0].vlan.trunk-tags[1].id desire '200', current '100'",
			},
		},
		{
			name:    "array elements are compared as subsets",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1")))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1"), st.With(func(i *nmstate.Interface) {
				i.LinuxBridge.Port[0].STPPathCost = st.Ptr(uint32(100))
			})))),
		},
		{
			name:    "port lists compare as sets",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth2", "eth1")))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1", "eth2")))),
		},
		{
			name:    "missing port is reported",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1", "eth2")))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1")))),
			want:    []string{`verification failure: br0.interface.bridge.port desire '[{"name":"eth1"},{"name":"eth2"}]', current '[{"name":"eth1"}]'`},
		},
		{
			name:    "empty port list matches unreported ports",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports()))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0", st.With(func(i *nmstate.Interface) { i.LinuxBridge.Port = nil })))),
		},
		{
			name:    "mac address compares case-insensitively",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.With(func(i *nmstate.Interface) { i.MACAddress = st.Ptr(nmstate.MAC("02:aa:bb:cc:dd:ee")) })))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MAC("02:AA:BB:CC:DD:EE")))),
		},
		{
			name:    "different mac address is reported",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MAC("02:AA:BB:CC:DD:EE")))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MAC("02:AA:BB:CC:DD:EF")))),
			want:    []string{"verification failure: eth1.interface.mac-address desire '02:AA:BB:CC:DD:EE', current '02:AA:BB:CC:DD:EF'"},
		},
		{
			name: "bond options are ignored",
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Mode("802.3ad"), st.BondOptions(func(o *nmstate.BondOptions) {
				o.MIIMon = st.Ptr(uint32(100))
			})))),
			current: st.State(st.Interfaces(st.Bond("bond0", st.Mode("802.3ad"), st.BondOptions(func(o *nmstate.BondOptions) {
				o.MIIMon = st.Ptr(uint32(0))
			})))),
		},
		{
			name:    "bond mode is verified",
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Mode("802.3ad")))),
			current: st.State(st.Interfaces(st.Bond("bond0", st.Mode("active-backup")))),
			want:    []string{"verification failure: bond0.interface.link-aggregation.mode desire '802.3ad', current 'active-backup'"},
		},
		{
			name:    "extra current addresses are allowed",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24")))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24", "192.0.2.9/24")))),
		},
		{
			name: "extra current addresses fail with allow-extra-address false",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24"), st.With(func(i *nmstate.Interface) {
				i.IPv4.AllowExtraAddress = st.Ptr(false)
			})))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24", "192.0.2.9/24")))),
			want:    []string{`verification failure: eth1.interface.ipv4.address desire '[{"ip":"192.0.2.1","prefix-length":24}]', current '[{"ip":"192.0.2.1","prefix-length":24},{"ip":"192.0.2.9","prefix-length":24}]'`},
		},
		{
			name: "dynamic and link-local addresses are ignored",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv6("2001:db8::1/64"), st.With(func(i *nmstate.Interface) {
				i.IPv6.AllowExtraAddress = st.Ptr(false)
			})))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv6("2001:db8::1/64", "fe80::1/64"), addAddr("ipv6", dynamic("2001:db8:1::5", 64))))),
		},
		{
			// A shown state applied again (a policy's capture of a DHCP
			// NIC): its leases are dynamic on both sides, ignored as
			// merge ignores them, whatever their lifetimes by now.
			name:    "dynamic desired addresses are ignored",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4(), addAddr("ipv4", dynamic("192.0.2.12", 24))))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4()))),
		},
		{
			name:    "missing desired address is reported",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24", "192.0.2.2/24")))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24")))),
			want:    []string{`verification failure: eth1.interface.ipv4.address desire '[{"ip":"192.0.2.1","prefix-length":24},{"ip":"192.0.2.2","prefix-length":24}]', current '[{"ip":"192.0.2.1","prefix-length":24}]'`},
		},
		{
			name:    "address order does not matter",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv6("2001:db8::2/64", "2001:db8::1/64")))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv6("2001:db8::1/64", "2001:db8::2/64")))),
		},
		{
			name: "query-only keys are ignored",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500), st.With(func(i *nmstate.Interface) {
				i.MinMTU, i.MaxMTU = st.Ptr(uint64(68)), st.Ptr(uint64(9000))
				i.Driver = st.Ptr("virtio_net")
				i.PermanentMACAddress = st.Ptr(nmstate.MAC("02:00:00:00:00:01"))
			})))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))),
		},
		{
			name: "merge instructions are not verified",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500), st.With(func(i *nmstate.Interface) {
				i.CopyMACFrom = st.Ptr("eth2")
				i.ProfileName = st.Ptr("wan0")
			})))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))),
		},
		{
			name: "linux-bridge multicast intervals off by one are tolerated",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", bridgeWith(func(o *nmstate.LinuxBridgeOptions) {
				o.MulticastQueryInterval = st.Ptr(uint64(12500))
			})))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0", bridgeWith(func(o *nmstate.LinuxBridgeOptions) {
				o.MulticastQueryInterval = st.Ptr(uint64(12499))
			})))),
		},
		{
			name: "linux-bridge multicast intervals off by two are reported",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", bridgeWith(func(o *nmstate.LinuxBridgeOptions) {
				o.MulticastQueryInterval = st.Ptr(uint64(12500))
			})))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0", bridgeWith(func(o *nmstate.LinuxBridgeOptions) {
				o.MulticastQueryInterval = st.Ptr(uint64(12498))
			})))),
			want: []string{"verification failure: br0.interface.bridge.options.multicast-query-interval desire '12500', current '12498'"},
		},
		{
			name: "other bridge integers must be exact",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", bridgeWith(func(o *nmstate.LinuxBridgeOptions) {
				o.MACAgeingTime = st.Ptr(uint32(300))
			})))),
			current: st.State(st.Interfaces(st.LinuxBridge("br0", bridgeWith(func(o *nmstate.LinuxBridgeOptions) {
				o.MACAgeingTime = st.Ptr(uint32(299))
			})))),
			want: []string{"verification failure: br0.interface.bridge.options.mac-ageing-time desire '300', current '299'"},
		},
		{
			name:    "detached controller matches an unreported controller",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.Controller("")))),
			current: st.State(st.Interfaces(st.Ethernet("eth1"))),
		},
		{
			name:    "controller is verified",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.Controller("br0")))),
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.Controller("br1")))),
			want:    []string{"verification failure: eth1.interface.controller desire 'br0', current 'br1'"},
		},
		{
			name:    "ethernet desired matches a veth",
			desired: st.State(st.Interfaces(st.Ethernet("veth1", st.MTU(1400)))),
			current: st.State(st.Interfaces(st.Veth("veth1", "veth1p", st.MTU(1400)))),
		},
		{
			name:    "desired route must exist and metric is not compared",
			desired: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2", st.Metric(150)))),
			current: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2", st.Metric(100), st.Table(254)))),
		},
		{
			name:    "missing desired route is reported",
			desired: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2"))),
			current: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.3", st.Table(254)))),
			want:    []string{`verification failure: routes.config[0]: desired route {"destination":"198.51.100.0/24","next-hop-address":"192.0.2.2","next-hop-interface":"eth1","table-id":254} not found after apply`},
		},
		{
			name:    "route without table means the main table",
			desired: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2"))),
			current: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2", st.Table(100)))),
			want:    []string{`verification failure: routes.config[0]: desired route {"destination":"198.51.100.0/24","next-hop-address":"192.0.2.2","next-hop-interface":"eth1","table-id":254} not found after apply`},
		},
		{
			name:    "absent route pattern must match no current route",
			desired: st.State(st.Routes(st.AbsentRoute(st.NextHopIface("eth1")))),
			current: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2", st.Table(254)))),
			want:    []string{`verification failure: routes.config[0]: desired absent route {"next-hop-interface":"eth1"} still found after apply`},
		},
		{
			name: "empty value in absent route pattern matches an unset key",
			desired: st.State(st.Routes(st.AbsentRoute(st.NextHopIface("eth1"), func(r *nmstate.Route) {
				r.Source = st.Ptr(netip.Addr{})
			}))),
			current: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2", st.Table(254)))),
			want:    []string{`verification failure: routes.config[0]: desired absent route {"next-hop-interface":"eth1","source":""} still found after apply`},
		},
		{
			name: "absent route pattern ignores routes desired again",
			desired: st.State(st.Routes(
				st.AbsentRoute(st.NextHopIface("eth1")),
				st.Route("0.0.0.0/0", "eth1", "192.0.2.2", st.Metric(102)))),
			current: st.State(st.Routes(st.Route("0.0.0.0/0", "eth1", "192.0.2.2", st.Metric(102), st.Table(254)))),
		},
		{
			name:    "absent route pattern matching nothing verifies",
			desired: st.State(st.Routes(st.AbsentRoute(st.NextHopIface("eth2")))),
			current: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2", st.Table(254)))),
		},
		{
			name: "routes via ignored interfaces are skipped",
			desired: st.State(
				st.Interfaces(st.Ethernet("eth1", st.StateOf(nmstate.StateIgnore))),
				st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2"))),
			current: st.State(st.Interfaces(st.Ethernet("eth1"))),
		},
		{
			name:    "desired rule must exist",
			desired: st.State(st.Rules(st.Rule("192.0.2.0/24", "", 100))),
			current: st.State(st.Rules(st.Rule("192.0.2.0/24", "", 100), st.Rule("198.51.100.0/24", "", 200))),
		},
		{
			name:    "missing rule is reported",
			desired: st.State(st.Rules(st.Rule("192.0.2.0/24", "", 100))),
			current: st.State(st.Rules(st.Rule("192.0.2.0/24", "", 101))),
			want:    []string{`verification failure: route-rules.config[0]: desired route rule {"ip-from":"192.0.2.0/24","route-table":100} not found after apply`},
		},
		{
			name: "absent rule pattern must match no current rule",
			desired: st.State(st.Rules(func() nmstate.RouteRule {
				r := nmstate.RouteRule{State: st.Ptr(nmstate.RouteState("absent")), RouteTable: st.Ptr(uint32(100))}
				return r
			}())),
			current: st.State(st.Rules(st.Rule("192.0.2.0/24", "", 100))),
			want:    []string{`verification failure: route-rules.config[0]: desired absent route rule {"route-table":100} still found after apply`},
		},
		{
			name:    "dns servers are order-sensitive",
			desired: st.State(st.DNS([]string{"192.0.2.53", "2001:db8::53"}, nil, nil)),
			current: st.State(st.DNS([]string{"2001:db8::53", "192.0.2.53"}, []string{"example.com"}, nil)),
			want:    []string{`verification failure: dns-resolver.config.server desire '["192.0.2.53","2001:db8::53"]', current '["2001:db8::53","192.0.2.53"]'`},
		},
		{
			name:    "dns search is order-sensitive",
			desired: st.State(st.DNS(nil, []string{"a.example", "b.example"}, nil)),
			current: st.State(st.DNS(nil, []string{"b.example", "a.example"}, nil)),
			want:    []string{`verification failure: dns-resolver.config.search desire '["a.example","b.example"]', current '["b.example","a.example"]'`},
		},
		{
			name:    "dns options compare sorted",
			desired: st.State(st.DNS(nil, nil, []string{"rotate", "ndots:2"})),
			current: st.State(st.DNS([]string{"192.0.2.53"}, nil, []string{"ndots:2", "rotate"})),
		},
		{
			name:    "empty dns config requires an empty configuration",
			desired: st.State(st.DNS(nil, nil, nil)),
			current: st.State(st.DNS([]string{"192.0.2.53"}, nil, nil)),
			want:    []string{`verification failure: dns-resolver.config.server desire '[]', current '["192.0.2.53"]'`},
		},
		{
			name:    "hostname must be equal",
			desired: &nmstate.State{Hostname: &nmstate.Hostname{Running: st.Ptr("node-a")}},
			current: &nmstate.State{Hostname: &nmstate.Hostname{Running: st.Ptr("node-b")}},
			want:    []string{"verification failure: hostname.running desire 'node-a', current 'node-b'"},
		},
		{
			name:    "equal hostname verifies",
			desired: &nmstate.State{Hostname: &nmstate.Hostname{Running: st.Ptr("node-a")}},
			current: &nmstate.State{Hostname: &nmstate.Hostname{Running: st.Ptr("node-a"), Config: st.Ptr("node-a")}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := nmstate.Verify(tc.desired, tc.current)
			if diff := cmp.Diff(tc.want, errLines(err)); diff != "" {
				t.Errorf("Verify (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerifyErrorKindIsVerification(t *testing.T) {
	err := nmstate.Verify(st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1400)))), st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))))
	if got := nmstate.KindOf(err); got != nmstate.Verification {
		t.Errorf("KindOf = %v, want Verification", got)
	}
	if !errors.Is(err, &nmstate.Error{Kind: nmstate.Verification}) {
		t.Errorf("errors.Is(err, Verification) = false")
	}
	var l nmstate.Mismatches
	if !errors.As(err, &l) {
		t.Fatalf("error %T is not Mismatches", err)
	}
	want := nmstate.Mismatches{{Path: "eth1.interface.mtu", Want: "1400", Got: "1500"}}
	if diff := cmp.Diff(want, l); diff != "" {
		t.Errorf("mismatches (-want +got):\n%s", diff)
	}
}

// TestVerifyDoesNotModifyInputs guards the sort/filter steps, which work on
// trees, not on the caller's values.
func TestVerifyDoesNotModifyInputs(t *testing.T) {
	desired := st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth2", "eth1"), st.IPv6("2001:db8::2/64", "2001:db8::1/64"))))
	current := st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1", "eth2"), st.IPv6("2001:db8::1/64", "fe80::1/64", "2001:db8::2/64"))))
	d0, c0 := desired.Clone(), current.Clone()
	if err := nmstate.Verify(desired, current); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if diff := cmp.Diff(d0, desired, cmpOpts); diff != "" {
		t.Errorf("desired changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(c0, current, cmpOpts); diff != "" {
		t.Errorf("current changed (-before +after):\n%s", diff)
	}
}
