package nmstate_test

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// labState is the current state most merge tests start from: lo, eth1
// with static IPv4/IPv6 and a default route, eth2 without IP.
func mtLabState(extra ...nmstate.Interface) *nmstate.State {
	return st.State(
		st.Interfaces(
			st.Ethernet("eth1", st.MTU(1500), st.MAC("02:00:00:00:00:01"), st.IPv4("192.0.2.251/24"), st.IPv6("2001:db8:1::1/64"),
				st.With(func(i *nmstate.Interface) { i.PermanentMACAddress = st.Ptr(nmstate.MAC("02:00:00:00:00:aa")) })),
			st.Ethernet("eth2", st.MTU(1500), st.MAC("02:00:00:00:00:02"), st.IPv4Disabled(), st.IPv6Disabled()),
		),
		st.Interfaces(extra...),
		st.Routes(
			st.Route("0.0.0.0/0", "eth1", "192.0.2.1", st.Metric(101), st.Table(254)),
			st.Route("::/0", "eth1", "2001:db8:1::2", st.Metric(102), st.Table(254)),
		),
	)
}

func mtPort(ctrl string, i nmstate.Interface) nmstate.Interface {
	i.Controller = &ctrl
	i.IPv4 = &nmstate.IPConfig{Enabled: st.Ptr(false)}
	i.IPv6 = &nmstate.IPConfig{Enabled: st.Ptr(false)}
	return i
}

func mtAddrs(l ...string) []nmstate.Address {
	out := []nmstate.Address{}
	for _, a := range l {
		p := netip.MustParsePrefix(a)
		out = append(out, nmstate.Address{IP: p.Addr(), PrefixLength: uint8(p.Bits())})
	}
	return out
}

func mtNames(l []nmstate.Interface) []string {
	out := []string{}
	for _, i := range l {
		out = append(out, i.Name+":"+string(i.State))
	}
	return out
}

func mtCtrlOf(i *nmstate.Interface) string {
	if i == nil {
		return "<missing>"
	}
	if i.Controller == nil {
		return "<nil>"
	}
	return *i.Controller
}

func mtDynamic(a string) nmstate.Address {
	l := mtAddrs(a)[0]
	l.ValidLifetime, l.PreferredLifetime = st.Ptr("3600sec"), st.Ptr("3600sec")
	return l
}

type mtMergeCase struct {
	name             string
	current, desired *nmstate.State
	check            func(t *testing.T, m *nmstate.Merged)
	// wantErr is "Kind path: detail" of the first error, when the merge
	// must fail.
	wantErr string
}

func mtRunMergeCases(t *testing.T, cases []mtMergeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := tc.current
			if cur == nil {
				cur = mtLabState()
			}
			before, _ := nmstate.EncodeYAML(cur)
			beforeD, _ := nmstate.EncodeYAML(tc.desired)
			m, err := nmstate.Merge(tc.desired, cur)
			if after, _ := nmstate.EncodeYAML(cur); string(after) != string(before) {
				t.Errorf("Merge changed the current state")
			}
			if after, _ := nmstate.EncodeYAML(tc.desired); string(after) != string(beforeD) {
				t.Errorf("Merge changed the desired state")
			}
			if tc.wantErr != "" {
				var l nmstate.ErrorList
				if !errors.As(err, &l) || len(l) == 0 {
					t.Fatalf("want error %q, got %v", tc.wantErr, err)
				}
				if got := l[0].Kind.String() + " " + l[0].Error(); !strings.HasPrefix(got, tc.wantErr) {
					t.Fatalf("error:\n got %q\nwant %q", got, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			tc.check(t, m)
		})
	}
}

func mtDiff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got, cmpOpts); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

func TestMergeInterfaceRules(t *testing.T) {
	mtRunMergeCases(t, []mtMergeCase{
		{
			name:    "unmentioned interface untouched",
			desired: st.State(st.Interfaces(st.Ethernet("eth2", st.MTU(9000)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"eth2:up"}, mtNames(m.Interfaces))
				if m.Routes != nil || m.RouteRules != nil || m.DNS != nil || m.Hostname != nil {
					t.Errorf("routes/rules/dns/hostname changed: %+v", m)
				}
			},
		},
		{
			name:    "unset properties kept from current",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				want := mtLabState().Interfaces[0]
				want.MTU = st.Ptr(uint64(9000))
				mtDiff(t, "eth1", want, *m.Interface("eth1", ""))
			},
		},
		{
			name: "lists replace",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.With(func(i *nmstate.Interface) {
				i.IPv4 = &nmstate.IPConfig{Address: mtAddrs("192.0.2.9/24")}
			})))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ipv4", &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(false), Address: mtAddrs("192.0.2.9/24")},
					m.Interface("eth1", "").IPv4)
			},
		},
		{
			name: "empty address list removes all addresses",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.With(func(i *nmstate.Interface) {
				i.IPv6 = &nmstate.IPConfig{Address: []nmstate.Address{}}
			})))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ipv6", &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(false), Autoconf: st.Ptr(false), Address: []nmstate.Address{}},
					m.Interface("eth1", "").IPv6)
			},
		},
		{
			name: "ip enabled dhcp and autoconf inherited",
			current: mtLabState(st.Dummy("dummy0", st.With(func(i *nmstate.Interface) {
				i.IPv6 = &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(true), Autoconf: st.Ptr(true), AutoDNS: st.Ptr(false),
					Address: []nmstate.Address{mtDynamic("2001:db8:9::5/64")}}
			}))),
			desired: st.State(st.Interfaces(st.Dummy("dummy0", st.With(func(i *nmstate.Interface) {
				i.IPv6 = &nmstate.IPConfig{Address: mtAddrs("2001:db8:2::1/64")}
			})))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ipv6", &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(true), Autoconf: st.Ptr(true),
					AutoDNS: st.Ptr(false), AutoGateway: st.Ptr(true), AutoRoutes: st.Ptr(true), Address: mtAddrs("2001:db8:2::1/64")},
					m.Interface("dummy0", "").IPv6)
			},
		},
		{
			name: "ip not auto drops auto keys",
			current: mtLabState(st.Dummy("dummy0", st.With(func(i *nmstate.Interface) {
				i.IPv4 = &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(true), AutoDNS: st.Ptr(true), AutoGateway: st.Ptr(true),
					AutoRoutes: st.Ptr(true), AutoRouteMetric: st.Ptr(uint32(50)), DHCPClientID: st.Ptr("ll"), Address: []nmstate.Address{}}
			}))),
			desired: st.State(st.Interfaces(st.Dummy("dummy0", st.With(func(i *nmstate.Interface) {
				i.IPv4 = &nmstate.IPConfig{DHCP: st.Ptr(false), Address: mtAddrs("198.51.100.1/24")}
			})))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ipv4", &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(false), Address: mtAddrs("198.51.100.1/24")},
					m.Interface("dummy0", "").IPv4)
			},
		},
		{
			name: "dhcp on to off converts dynamic addresses to static",
			current: mtLabState(st.Dummy("dummy0", st.With(func(i *nmstate.Interface) {
				i.IPv4 = &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(true), AutoDNS: st.Ptr(true),
					Address: []nmstate.Address{mtDynamic("198.51.100.7/24")}}
			}))),
			desired: st.State(st.Interfaces(st.Dummy("dummy0", st.With(func(i *nmstate.Interface) {
				i.IPv4 = &nmstate.IPConfig{DHCP: st.Ptr(false)}
			})))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ipv4", &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(false), Address: mtAddrs("198.51.100.7/24")},
					m.Interface("dummy0", "").IPv4)
			},
		},
		{
			name: "dynamic addresses not given are dropped while auto",
			current: mtLabState(st.Dummy("dummy0", st.With(func(i *nmstate.Interface) {
				i.IPv4 = &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(true),
					Address: append(mtAddrs("198.51.100.1/24"), mtDynamic("198.51.100.7/24"))}
			}))),
			desired: st.State(st.Interfaces(st.Dummy("dummy0", st.With(func(i *nmstate.Interface) {
				i.IPv4 = &nmstate.IPConfig{AutoDNS: st.Ptr(false)}
			})))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ipv4", &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(true), AutoDNS: st.Ptr(false),
					AutoGateway: st.Ptr(true), AutoRoutes: st.Ptr(true), Address: mtAddrs("198.51.100.1/24")},
					m.Interface("dummy0", "").IPv4)
			},
		},
		{
			name:    "ip enabled false removes addresses",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4Disabled()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ipv4", &nmstate.IPConfig{Enabled: st.Ptr(false)}, m.Interface("eth1", "").IPv4)
			},
		},
		{
			name: "dynamic and link-local addresses in desired ignored",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.With(func(i *nmstate.Interface) {
				i.IPv6 = &nmstate.IPConfig{Address: append(mtAddrs("fe80::1/64", "2001:db8:1::9/64"), mtDynamic("2001:db8:1::77/64"))}
			})))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ipv6 addresses", mtAddrs("2001:db8:1::9/64"), m.Interface("eth1", "").IPv6.Address)
			},
		},
		{
			name: "bond mode change drops options",
			current: mtLabState(st.Bond("bond0", st.Mode("balance-rr"), st.Ports(),
				st.BondOptions(func(o *nmstate.BondOptions) { o.MIIMon = st.Ptr(uint32(100)) }))),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Mode("active-backup")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "link-aggregation", &nmstate.Bond{Mode: st.Ptr(nmstate.BondModeActiveBackup), Port: []string{}},
					m.Interface("bond0", "").LinkAggregation)
			},
		},
		{
			name: "bond options merged when mode unchanged",
			current: mtLabState(st.Bond("bond0", st.Mode("balance-rr"), st.Ports(),
				st.BondOptions(func(o *nmstate.BondOptions) { o.MIIMon = st.Ptr(uint32(100)); o.UpDelay = st.Ptr(uint32(0)) }))),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Mode("balance-rr"),
				st.BondOptions(func(o *nmstate.BondOptions) { o.MIIMon = st.Ptr(uint32(200)) })))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "options", &nmstate.BondOptions{MIIMon: st.Ptr(uint32(200)), UpDelay: st.Ptr(uint32(0))},
					m.Interface("bond0", "").LinkAggregation.Options)
			},
		},
		{
			name: "linux bridge port vlan inherited",
			current: mtLabState(st.LinuxBridge("br0", st.Ports("eth2"),
				st.BridgePortVLAN("eth2", nmstate.BridgeVLAN{Mode: st.Ptr(nmstate.BridgeVLANMode("access")), Tag: st.Ptr(uint16(100))}))),
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth2", "eth1")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ports", []nmstate.LinuxBridgePort{
					{Name: "eth2", VLAN: &nmstate.BridgeVLAN{Mode: st.Ptr(nmstate.BridgeVLANMode("access")), Tag: st.Ptr(uint16(100))}},
					{Name: "eth1"},
				}, m.Interface("br0", "").LinuxBridge.Port)
			},
		},
		{
			name:    "copy-mac-from uses the permanent mac",
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Mode("active-backup"), st.Ports(), st.With(func(i *nmstate.Interface) { i.CopyMACFrom = st.Ptr("eth1") })))),
			check: func(t *testing.T, m *nmstate.Merged) {
				b := m.Interface("bond0", "")
				mtDiff(t, "mac", st.Ptr(nmstate.MAC("02:00:00:00:00:AA")), b.MACAddress)
				mtDiff(t, "copy-mac-from", (*string)(nil), b.CopyMACFrom)
			},
		},
		{
			name:    "copy-mac-from falls back to the current mac",
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Mode("active-backup"), st.Ports(), st.With(func(i *nmstate.Interface) { i.CopyMACFrom = st.Ptr("eth2") })))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "mac", st.Ptr(nmstate.MAC("02:00:00:00:00:02")), m.Interface("bond0", "").MACAddress)
			},
		},
		{
			name:    "attached port pulled in",
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth2")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"bond0:up", "eth2:up"}, mtNames(m.Interfaces))
				want := mtPort("bond0", mtLabState().Interfaces[1])
				mtDiff(t, "eth2", want, *m.Interface("eth2", ""))
			},
		},
		{
			name:    "ports lose ip",
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				e := m.Interface("eth1", "")
				mtDiff(t, "eth1 ip", []*nmstate.IPConfig{{Enabled: st.Ptr(false)}, {Enabled: st.Ptr(false)}}, []*nmstate.IPConfig{e.IPv4, e.IPv6})
				if m.Routes == nil || len(m.Routes) != 0 {
					t.Errorf("routes via eth1 should be dropped, got %v", m.Routes)
				}
			},
		},
		{
			name:    "vrf ports keep ip",
			desired: st.State(st.Interfaces(st.VRF("vrf0", 100, st.Ports("eth1")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "eth1 ipv4", mtLabState().Interfaces[0].IPv4, m.Interface("eth1", "").IPv4)
				mtDiff(t, "controller", "vrf0", mtCtrlOf(m.Interface("eth1", "")))
			},
		},
		{
			name:    "detached port pulled in with empty controller",
			current: mtLabState(st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth2")), mtPort("bond0", st.Ethernet("eth3"))),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Ports()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"bond0:up", "eth2:up", "eth3:up"}, mtNames(m.Interfaces))
				mtDiff(t, "eth2 controller", "", mtCtrlOf(m.Interface("eth2", "")))
				mtDiff(t, "eth3 controller", "", mtCtrlOf(m.Interface("eth3", "")))
			},
		},
		{
			name:    "ports of a deleted controller are detached",
			current: mtLabState(st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth3")), mtPort("bond0", st.Ethernet("eth3"))),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Absent()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"bond0:absent", "eth3:up"}, mtNames(m.Interfaces))
				mtDiff(t, "eth3 controller", "", mtCtrlOf(m.Interface("eth3", "")))
			},
		},
		{
			name:    "port-side controller pulls the controller in",
			current: mtLabState(st.LinuxBridge("br0", st.Ports())),
			desired: st.State(st.Interfaces(st.Ethernet("eth2", st.Controller("br0")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"eth2:up", "br0:up"}, mtNames(m.Interfaces))
				mtDiff(t, "br0 ports", []nmstate.LinuxBridgePort{{Name: "eth2"}}, m.Interface("br0", "").LinuxBridge.Port)
				mtDiff(t, "controller", "br0", mtCtrlOf(m.Interface("eth2", "")))
			},
		},
		{
			name:    "port-side empty controller detaches",
			current: mtLabState(st.VRF("vrf0", 100, st.Ports("eth3")), mtPort("vrf0", st.Ethernet("eth3"))),
			desired: st.State(st.Interfaces(st.Ethernet("eth3", st.Controller("")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"eth3:up", "vrf0:up"}, mtNames(m.Interfaces))
				mtDiff(t, "vrf0 ports", []string{}, m.Interface("vrf0", "").VRF.Port)
				mtDiff(t, "controller", "", mtCtrlOf(m.Interface("eth3", "")))
			},
		},
		{
			name:    "port-side empty controller of a non-port changes nothing",
			desired: st.State(st.Interfaces(st.Ethernet("eth2", st.Controller("")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{}, mtNames(m.Interfaces))
			},
		},
		{
			name: "port moved between controllers",
			current: mtLabState(st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth3")), mtPort("bond0", st.Ethernet("eth3")),
				st.Bond("bond1", st.Mode("active-backup"), st.Ports())),
			desired: st.State(st.Interfaces(st.Bond("bond1", st.Ports("eth3")), st.Bond("bond0", st.Ports()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"bond1:up", "bond0:up", "eth3:up"}, mtNames(m.Interfaces))
				mtDiff(t, "controller", "bond1", mtCtrlOf(m.Interface("eth3", "")))
			},
		},
		{
			name:    "port-side controller disagreeing with the port list is an error",
			current: mtLabState(st.LinuxBridge("br0", st.Ports())),
			desired: st.State(st.Interfaces(st.LinuxBridge("br0", st.Ports("eth1")), st.Ethernet("eth1", st.Controller("")))),
			wantErr: "InvalidArgument interfaces[1].controller: is empty (detach) but br0 lists eth1 as a port",
		},
		{
			name:    "port-side controller naming a missing controller is an error",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.Controller("br9")))),
			wantErr: "Dependency interfaces[0].controller: controller br9 does not exist",
		},
		{
			name:    "children of an absent parent marked absent",
			current: mtLabState(st.Bond("bond0", st.Mode("active-backup"), st.Ports()), st.VLAN("bond0.10", "bond0", 10), st.VLAN("v2", "bond0.10", 2)),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Absent()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"bond0:absent", "bond0.10:absent", "v2:absent"}, mtNames(m.Interfaces))
				mtDiff(t, "only name type state", nmstate.Interface{Name: "bond0.10", Type: nmstate.TypeVLAN, State: nmstate.StateAbsent}, *m.Interface("bond0.10", ""))
			},
		},
		{
			name:    "children of an absent ethernet are kept",
			current: mtLabState(st.VLAN("eth1.10", "eth1", 10)),
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.Absent()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"eth1:absent"}, mtNames(m.Interfaces))
			},
		},
		{
			name:    "child of an absent parent desired up is an error",
			current: mtLabState(st.Bond("bond0", st.Mode("active-backup"), st.Ports()), st.VLAN("bond0.10", "bond0", 10)),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Absent()), st.Iface("bond0.10", nmstate.TypeVLAN, st.MTU(1400)))),
			wantErr: "InvalidArgument interfaces[1]: bond0.10 cannot be up: its parent bond0 is removed",
		},
		{
			name:    "child of an absent parent naming it is a validation error",
			current: mtLabState(st.Bond("bond0", st.Mode("active-backup"), st.Ports()), st.VLAN("bond0.10", "bond0", 10)),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Absent()), st.VLAN("bond0.10", "bond0", 10, st.MTU(1400)))),
			wantErr: "InvalidArgument interfaces[1].vlan.base-iface: interface bond0.10 cannot be up as its parent bond0 is marked absent",
		},
		{
			name:    "veth peer removed with its pair",
			current: mtLabState(st.Veth("v0", "v0p"), st.Veth("v0p", "v0")),
			desired: st.State(st.Interfaces(st.Veth("v0", "v0p", st.Absent()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"v0:absent", "v0p:absent"}, mtNames(m.Interfaces))
			},
		},
		{
			name:    "ignored port listed by a controller promoted",
			current: mtLabState(st.Ethernet("eth3", st.StateOf(nmstate.StateIgnore))),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth3")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				e := m.Interface("eth3", "")
				mtDiff(t, "eth3", "up bond0", string(e.State)+" "+mtCtrlOf(e))
			},
		},
		{
			name:    "ignored port already in the controller stays ignored",
			current: mtLabState(st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth3")), mtPort("bond0", st.Ethernet("eth3", st.StateOf(nmstate.StateIgnore)))),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Ports("eth3"), st.MTU(9000)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"bond0:up"}, mtNames(m.Interfaces))
			},
		},
		{
			name:    "state ignore excluded",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.StateOf(nmstate.StateIgnore), st.MTU(9000)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{}, mtNames(m.Interfaces))
				mtDiff(t, "routes", []nmstate.Route(nil), m.Routes)
			},
		},
		{
			name:    "virtual down deletes",
			current: mtLabState(st.Dummy("dummy0", st.MTU(1500))),
			desired: st.State(st.Interfaces(st.Dummy("dummy0", st.Down(), st.MTU(1400)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "entry", nmstate.Interface{Name: "dummy0", Type: nmstate.TypeDummy, State: nmstate.StateDown}, *m.Interface("dummy0", ""))
			},
		},
		{
			name:    "physical down keeps the configuration",
			desired: st.State(st.Interfaces(st.Ethernet("eth2", st.Down()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				want := mtLabState().Interfaces[1]
				want.State = nmstate.StateDown
				mtDiff(t, "eth2", want, *m.Interface("eth2", ""))
			},
		},
		{
			name:    "absent of a missing interface changes nothing",
			desired: st.State(st.Interfaces(st.Dummy("dummy9", st.Absent()), st.Iface("ghost", "", st.Absent()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{}, mtNames(m.Interfaces))
			},
		},
		{
			name:    "unchanged interface left out",
			desired: st.State(st.Interfaces(mtLabState().Interfaces[0])),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{}, mtNames(m.Interfaces))
			},
		},
		{
			name:    "new interface holds the desired configuration",
			desired: st.State(st.Interfaces(st.Dummy("dummy0", st.StateOf(""), st.IPv4("198.51.100.1/24")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "dummy0", st.Dummy("dummy0", st.IPv4("198.51.100.1/24")), *m.Interface("dummy0", ""))
			},
		},
		{
			name:    "untyped interface resolved by name",
			desired: st.State(st.Interfaces(st.Iface("eth2", "", st.MTU(9000)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "type", nmstate.TypeEthernet, m.Interface("eth2", "").Type)
				mtDiff(t, "desired type", nmstate.TypeEthernet, m.Desired.Interfaces[0].Type)
			},
		},
		{
			name:    "untyped interface not in the current state is an error",
			desired: st.State(st.Interfaces(st.Iface("eth9", "", st.MTU(9000)))),
			wantErr: "InvalidArgument interfaces[0]: interface eth9 has no type and is not in the current state",
		},
		{
			name:    "untyped interface matching two interfaces is an error",
			current: mtLabState(st.OVSBridge("eth1", st.Ports())),
			desired: st.State(st.Interfaces(st.Iface("eth1", "", st.MTU(9000)))),
			wantErr: "InvalidArgument interfaces[0]: interface eth1 has no type and matches 2 current interfaces",
		},
		{
			name:    "untyped absent matches every interface of that name",
			current: mtLabState(st.Dummy("br1"), st.OVSBridge("br1", st.Ports())),
			desired: st.State(st.Interfaces(st.Iface("br1", "", st.Absent()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				got := []string{}
				for _, i := range m.Interfaces {
					got = append(got, i.Name+":"+string(i.Type)+":"+string(i.State))
				}
				mtDiff(t, "change set", []string{"br1:dummy:absent", "br1:ovs-bridge:absent"}, got)
			},
		},
		{
			name: "mac-address identifier resolved to the interface name",
			desired: st.State(st.Interfaces(st.Ethernet("wan0", st.MAC("02:00:00:00:00:02"), st.MTU(9000),
				st.With(func(i *nmstate.Interface) { i.Identifier = st.Ptr(nmstate.Identifier("mac-address")) })))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"eth2:up"}, mtNames(m.Interfaces))
				mtDiff(t, "profile name", st.Ptr("wan0"), m.Desired.Interfaces[0].ProfileName)
			},
		},
		{
			name: "mac-address identifier prefers the permanent mac",
			desired: st.State(st.Interfaces(st.Ethernet("wan0", st.MAC("02:00:00:00:00:aa"), st.MTU(9000),
				st.With(func(i *nmstate.Interface) { i.Identifier = st.Ptr(nmstate.Identifier("mac-address")) })))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"eth1:up"}, mtNames(m.Interfaces))
			},
		},
		{
			name: "mac-address identifier without a match is an error",
			desired: st.State(st.Interfaces(st.Ethernet("wan0", st.MAC("02:00:00:00:00:99"),
				st.With(func(i *nmstate.Interface) { i.Identifier = st.Ptr(nmstate.Identifier("mac-address")) })))),
			wantErr: "InvalidArgument interfaces[0].mac-address: no interface has MAC address 02:00:00:00:00:99",
		},
		{
			name:    "validation errors returned unchanged",
			desired: st.State(st.Interfaces(st.VLAN("eth1.5000", "eth1", 4095))),
			wantErr: "InvalidArgument interfaces[0].vlan.id: 4095 is out of range 0..4094",
		},
		{
			name:    "changing the type of an interface is not supported",
			current: mtLabState(st.Dummy("x0")),
			desired: st.State(st.Interfaces(st.Bond("x0", st.Mode("active-backup"), st.Ports()))),
			wantErr: "NotSupported interfaces[0].type: x0 exists as a dummy",
		},
		{
			name:    "unknown ovs bridge port becomes an internal interface",
			desired: st.State(st.Interfaces(st.OVSBridge("ovs-br0", st.Ports("ovs0")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "ovs0", st.OVSInterface("ovs0", st.Controller("ovs-br0")), *m.Interface("ovs0", ""))
			},
		},
		{
			name:    "detached ovs internal interface removed",
			current: mtLabState(st.OVSBridge("ovs-br0", st.Ports("ovs0")), st.OVSInterface("ovs0", st.Controller("ovs-br0"))),
			desired: st.State(st.Interfaces(st.OVSBridge("ovs-br0", st.Ports()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"ovs-br0:up", "ovs0:absent"}, mtNames(m.Interfaces))
			},
		},
		{
			name:    "nil current means nothing exists",
			current: &nmstate.State{},
			desired: st.State(st.Interfaces(st.Dummy("dummy0"))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "change set", []string{"dummy0:up"}, mtNames(m.Interfaces))
			},
		},
	})
}

func TestMergeRoutes(t *testing.T) {
	withRoutes := func(r ...nmstate.Route) *nmstate.State {
		s := mtLabState(st.Dummy("dummy0", st.IPv4("198.51.100.1/24")))
		s.Routes.Config = append(s.Routes.Config, r...)
		return s
	}
	dsts := func(l []nmstate.Route) []string {
		out := []string{}
		for _, r := range l {
			s := r.Destination.String() + " " + *r.NextHopInterface
			if r.Metric != nil {
				s += " " + strconv.FormatInt(*r.Metric, 10)
			}
			out = append(out, s)
		}
		return out
	}
	mtRunMergeCases(t, []mtMergeCase{
		{
			name:    "routes untouched when not given",
			desired: st.State(st.Interfaces(st.Ethernet("eth2", st.MTU(9000)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []nmstate.Route(nil), m.Routes)
			},
		},
		{
			name:    "desired routes added to current",
			desired: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.2"))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{"0.0.0.0/0 eth1 101", "::/0 eth1 102", "198.51.100.0/24 eth1"}, dsts(m.Routes))
			},
		},
		{
			name:    "identical route is no change",
			desired: st.State(st.Routes(st.Route("0.0.0.0/0", "eth1", "192.0.2.1", st.Metric(101), st.Table(254)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []nmstate.Route(nil), m.Routes)
			},
		},
		{
			name:    "route identity ignores metric",
			desired: st.State(st.Routes(st.Route("0.0.0.0/0", "eth1", "192.0.2.1", st.Metric(50)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{"0.0.0.0/0 eth1 50", "::/0 eth1 102"}, dsts(m.Routes))
			},
		},
		{
			name:    "table-id 0 is the main table",
			desired: st.State(st.Routes(st.Route("0.0.0.0/0", "eth1", "192.0.2.1", st.Metric(7), st.Table(0)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{"0.0.0.0/0 eth1 7", "::/0 eth1 102"}, dsts(m.Routes))
			},
		},
		{
			name:    "absent route pattern wildcards",
			current: withRoutes(st.Route("198.51.100.0/24", "eth2", "", st.Table(100))),
			desired: st.State(st.Routes(st.AbsentRoute(st.NextHopIface("eth1")))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{"198.51.100.0/24 eth2"}, dsts(m.Routes))
			},
		},
		{
			name:    "absent route with nothing given removes every route",
			desired: st.State(st.Routes(st.AbsentRoute())),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{}, dsts(m.Routes))
			},
		},
		{
			name:    "absent route table-id 0 matches any table",
			current: withRoutes(st.Route("198.51.100.0/24", "eth1", "192.0.2.9", st.Table(100))),
			desired: st.State(st.Routes(st.AbsentRoute(st.Table(0), func(r *nmstate.Route) { r.Destination = st.Ptr(netip.MustParsePrefix("198.51.100.0/24")) }))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{"0.0.0.0/0 eth1 101", "::/0 eth1 102"}, dsts(m.Routes))
			},
		},
		{
			name:    "absent route given table only matches that table",
			current: withRoutes(st.Route("198.51.100.0/24", "eth1", "192.0.2.9", st.Table(100))),
			desired: st.State(st.Routes(st.AbsentRoute(st.Table(254)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{"198.51.100.0/24 eth1"}, dsts(m.Routes))
			},
		},
		{
			name: "absent route empty next-hop-address must be unset",
			current: withRoutes(st.Route("198.51.100.0/24", "eth1", ""),
				st.Route("203.0.113.0/24", "eth1", "192.0.2.9")),
			desired: st.State(st.Routes(st.AbsentRoute(st.NextHopIface("eth1"), func(r *nmstate.Route) { r.NextHopAddress = &netip.Addr{} }))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{"0.0.0.0/0 eth1 101", "::/0 eth1 102", "203.0.113.0/24 eth1"}, dsts(m.Routes))
			},
		},
		{
			name:    "routes via an absent interface dropped",
			current: withRoutes(st.Route("198.51.100.0/24", "dummy0", "")),
			desired: st.State(st.Interfaces(st.Dummy("dummy0", st.Absent()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{"0.0.0.0/0 eth1 101", "::/0 eth1 102"}, dsts(m.Routes))
			},
		},
		{
			name:    "routes dropped when their family is disabled",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv6Disabled()))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "routes", []string{"0.0.0.0/0 eth1 101"}, dsts(m.Routes))
			},
		},
		{
			name: "route via an interface removed by the state is an error",
			current: mtLabState(st.Bond("bond0", st.Mode("active-backup"), st.Ports()),
				st.VLAN("bond0.10", "bond0", 10, st.IPv4("198.51.100.1/24"))),
			desired: st.State(st.Interfaces(st.Bond("bond0", st.Absent())), st.Routes(st.Route("203.0.113.0/24", "bond0.10", "198.51.100.2"))),
			wantErr: "InvalidArgument routes.config[0].next-hop-interface: next hop interface bond0.10 is removed by this state",
		},
		{
			name:    "route via a disabled family is an error",
			desired: st.State(st.Routes(st.Route("203.0.113.0/24", "eth2", "198.51.100.2"))),
			wantErr: "InvalidArgument routes.config[0].next-hop-interface: next hop interface eth2 has IPv4 disabled",
		},
		{
			name:    "route via an absent interface is an error",
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.Absent())), st.Routes(st.Route("203.0.113.0/24", "eth1", "192.0.2.3"))),
			wantErr: "InvalidArgument routes.config[0].next-hop-interface: next hop interface eth1 is marked absent",
		},
	})
}

func TestMergeRouteRulesAndDNS(t *testing.T) {
	rules := func(l ...nmstate.RouteRule) *nmstate.State {
		s := mtLabState()
		s.RouteRules = &nmstate.RouteRules{Config: l}
		return s
	}
	withPrio := func(r nmstate.RouteRule, p int64) nmstate.RouteRule {
		r.Priority = &p
		if r.IPFrom != nil && r.IPFrom.Addr().Is6() || r.IPTo != nil && r.IPTo.Addr().Is6() {
			r.Family = st.Ptr(nmstate.Family("ipv6"))
		} else {
			r.Family = st.Ptr(nmstate.Family("ipv4"))
		}
		return r
	}
	absentRule := func(f func(*nmstate.RouteRule)) nmstate.RouteRule {
		r := nmstate.RouteRule{State: st.Ptr(nmstate.RouteState("absent"))}
		f(&r)
		return r
	}
	cur3 := func() *nmstate.State {
		return rules(
			withPrio(st.Rule("192.0.2.0/24", "", 254), 1000),
			withPrio(st.Rule("", "198.51.100.0/24", 100), 1001),
			withPrio(st.Rule("2001:db8:1::/64", "", 254), 1002),
		)
	}
	dns := func(servers, search, options []string) *nmstate.State {
		s := mtLabState()
		st.DNS(servers, search, options)(s)
		return s
	}
	runMergeCases := mtRunMergeCases
	runMergeCases(t, []mtMergeCase{
		{
			name:    "absent rule pattern wildcards",
			current: cur3(),
			desired: st.State(st.Rules(absentRule(func(r *nmstate.RouteRule) { r.RouteTable = st.Ptr(uint32(254)) }))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "rules", []nmstate.RouteRule{withPrio(st.Rule("", "198.51.100.0/24", 100), 1001)}, m.RouteRules)
			},
		},
		{
			name:    "absent rule family matches",
			current: cur3(),
			desired: st.State(st.Rules(absentRule(func(r *nmstate.RouteRule) { r.Family = st.Ptr(nmstate.Family("ipv6")) }))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "rules", cur3().RouteRules.Config[:2], m.RouteRules)
			},
		},
		{
			name:    "absent rule empty ip-to must be unset",
			current: cur3(),
			desired: st.State(st.Rules(absentRule(func(r *nmstate.RouteRule) {
				r.IPTo = &netip.Prefix{}
				r.Family = st.Ptr(nmstate.Family("ipv4"))
			}))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "rules", cur3().RouteRules.Config[1:], m.RouteRules)
			},
		},
		{
			name:    "rule auto priority",
			current: cur3(),
			desired: st.State(st.Rules(st.Rule("203.0.113.0/24", "", 300), st.Rule("", "203.0.113.0/24", 300))),
			check: func(t *testing.T, m *nmstate.Merged) {
				want := append(cur3().RouteRules.Config,
					withPrio(st.Rule("203.0.113.0/24", "", 300), 30000), withPrio(st.Rule("", "203.0.113.0/24", 300), 30001))
				mtDiff(t, "rules", want, m.RouteRules)
			},
		},
		{
			name:    "rule auto priority above the highest existing one",
			current: rules(withPrio(st.Rule("192.0.2.0/24", "", 254), 30010)),
			desired: st.State(st.Rules(st.Rule("203.0.113.0/24", "", 300), withPrio(st.Rule("198.51.100.0/24", "", 300), 30020))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "priorities", []int64{30010, 30021, 30020}, []int64{*m.RouteRules[0].Priority, *m.RouteRules[1].Priority, *m.RouteRules[2].Priority})
			},
		},
		{
			name:    "rule without priority matching an existing rule is no change",
			current: cur3(),
			desired: st.State(st.Rules(st.Rule("192.0.2.0/24", "", 254))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "rules", []nmstate.RouteRule(nil), m.RouteRules)
			},
		},
		{
			name:    "rules untouched when not given",
			current: cur3(),
			desired: st.State(st.Interfaces(st.Ethernet("eth2", st.MTU(9000)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "rules", []nmstate.RouteRule(nil), m.RouteRules)
			},
		},
		{
			name:    "dns omitted untouched",
			current: dns([]string{"192.0.2.53"}, []string{"example.com"}, nil),
			desired: st.State(st.Interfaces(st.Ethernet("eth2", st.MTU(9000)))),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "dns", (*nmstate.DNSConfig)(nil), m.DNS)
			},
		},
		{
			name:    "dns empty config purges",
			current: dns([]string{"192.0.2.53"}, []string{"example.com"}, []string{"rotate"}),
			desired: &nmstate.State{DNSResolver: &nmstate.DNSResolver{Config: &nmstate.DNSConfig{}}},
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "dns", &nmstate.DNSConfig{Server: []netip.Addr{}, Search: []string{}, Options: []string{}}, m.DNS)
			},
		},
		{
			name:    "dns given list replaces, omitted lists kept",
			current: dns([]string{"192.0.2.53"}, []string{"example.com"}, []string{"rotate"}),
			desired: st.State(st.DNS([]string{"2001:db8::53", "192.0.2.54"}, nil, nil)),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "dns", &nmstate.DNSConfig{Server: []netip.Addr{netip.MustParseAddr("2001:db8::53"), netip.MustParseAddr("192.0.2.54")},
					Search: []string{"example.com"}, Options: []string{"rotate"}}, m.DNS)
			},
		},
		{
			name:    "dns unchanged is no change",
			current: dns([]string{"192.0.2.53"}, nil, nil),
			desired: st.State(st.DNS([]string{"192.0.2.53"}, []string{}, nil)),
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "dns", (*nmstate.DNSConfig)(nil), m.DNS)
			},
		},
		{
			name:    "hostname config also sets the running hostname",
			current: &nmstate.State{Hostname: &nmstate.Hostname{Running: st.Ptr("a"), Config: st.Ptr("a")}},
			desired: &nmstate.State{Hostname: &nmstate.Hostname{Config: st.Ptr("b")}},
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "hostname", &nmstate.Hostname{Running: st.Ptr("b"), Config: st.Ptr("b")}, m.Hostname)
			},
		},
		{
			name:    "hostname running only keeps the static one",
			current: &nmstate.State{Hostname: &nmstate.Hostname{Running: st.Ptr("a"), Config: st.Ptr("a")}},
			desired: &nmstate.State{Hostname: &nmstate.Hostname{Running: st.Ptr("tmp")}},
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "hostname", &nmstate.Hostname{Running: st.Ptr("tmp"), Config: st.Ptr("a")}, m.Hostname)
			},
		},
		{
			name:    "hostname unchanged is no change",
			current: &nmstate.State{Hostname: &nmstate.Hostname{Running: st.Ptr("a"), Config: st.Ptr("a")}},
			desired: &nmstate.State{Hostname: &nmstate.Hostname{Config: st.Ptr("a")}},
			check: func(t *testing.T, m *nmstate.Merged) {
				mtDiff(t, "hostname", (*nmstate.Hostname)(nil), m.Hostname)
			},
		},
		{
			name:    "empty state is a no-op",
			current: dns([]string{"192.0.2.53"}, nil, nil),
			desired: &nmstate.State{Interfaces: []nmstate.Interface{}},
			check: func(t *testing.T, m *nmstate.Merged) {
				if len(m.Interfaces) != 0 || m.Routes != nil || m.RouteRules != nil || m.DNS != nil || m.Hostname != nil {
					t.Errorf("empty state changed something: %+v", m)
				}
			},
		},
	})
}

func TestMergeIPEnabledImplied(t *testing.T) {
	mtRunMergeCases(t, []mtMergeCase{{
		name: "giving addresses enables a disabled stack",
		desired: st.State(st.Interfaces(st.Ethernet("eth2", st.With(func(i *nmstate.Interface) {
			i.IPv4 = &nmstate.IPConfig{Address: mtAddrs("198.51.100.1/24")}
		})))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "ipv4", &nmstate.IPConfig{Enabled: st.Ptr(true), DHCP: st.Ptr(false), Address: mtAddrs("198.51.100.1/24")},
				m.Interface("eth2", "").IPv4)
		},
	}, {
		name: "a disabled stack stays disabled when only other keys are given",
		desired: st.State(st.Interfaces(st.Ethernet("eth2", st.With(func(i *nmstate.Interface) {
			i.IPv6 = &nmstate.IPConfig{AddrGenMode: st.Ptr("eui64")}
		})))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{}, mtNames(m.Interfaces))
		},
	}})
}

func TestMergeKernelAddressesAreNoChange(t *testing.T) {
	cur := mtLabState()
	cur.Interfaces[0].IPv6.Address = append(cur.Interfaces[0].IPv6.Address, mtAddrs("fe80::1/64")...)
	mtRunMergeCases(t, []mtMergeCase{{
		name:    "link-local addresses the kernel added are no change",
		current: cur,
		desired: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv6("2001:db8:1::1/64")))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{}, mtNames(m.Interfaces))
		},
	}})
}

func TestMergeMovesAndReleases(t *testing.T) {
	mtRunMergeCases(t, []mtMergeCase{{
		name:    "port taken from a controller not desired leaves its list",
		current: mtLabState(st.LinuxBridge("br0", st.Ports("eth3")), mtPort("br0", st.Ethernet("eth3"))),
		desired: st.State(st.Interfaces(st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth3")))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{"bond0:up", "eth3:up", "br0:up"}, mtNames(m.Interfaces))
			mtDiff(t, "br0 ports", []nmstate.LinuxBridgePort{}, m.Interface("br0", "").LinuxBridge.Port)
			mtDiff(t, "controller", "bond0", mtCtrlOf(m.Interface("eth3", "")))
		},
	}, {
		name:    "absent of an already released physical interface changes nothing",
		current: mtLabState(st.Ethernet("eth3", st.Down(), st.IPv4Disabled(), st.IPv6Disabled())),
		desired: st.State(st.Interfaces(st.Ethernet("eth3", st.Absent()))),
		check: func(t *testing.T, m *nmstate.Merged) {
			mtDiff(t, "change set", []string{}, mtNames(m.Interfaces))
		},
	}})
}
