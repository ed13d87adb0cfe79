package nmstate_test

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

func TestOpString(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   nmstate.Op
		want string
	}{
		{"link delete", nmstate.LinkDelete{Name: "br0", Type: nmstate.TypeLinuxBridge}, "link delete br0 type linux-bridge"},
		{"link add vlan", nmstate.LinkCreate{Iface: st.VLAN("eth1.101", "eth1", 101, st.MTU(1500))}, "link add eth1.101 link eth1 type vlan mtu 1500 id 101"},
		{"link add bond", nmstate.LinkCreate{Iface: st.Bond("bond0", st.Mode("802.3ad"), st.Ports("eth1"),
			st.BondOptions(func(o *nmstate.BondOptions) { o.MIIMon = st.Ptr(uint32(100)) }))},
			"link add bond0 type bond mode 802.3ad options.miimon 100"},
		{"link add bridge", nmstate.LinkCreate{Iface: st.LinuxBridge("br0", st.Ports("eth1"), st.With(func(i *nmstate.Interface) {
			i.LinuxBridge.Options = &nmstate.LinuxBridgeOptions{STP: &nmstate.LinuxBridgeSTP{Enabled: st.Ptr(false)}}
		}))}, "link add br0 type linux-bridge options.stp.enabled false"},
		{"link add veth", nmstate.LinkCreate{Iface: st.Veth("veth1", "veth1-ep")}, "link add veth1 type veth peer veth1-ep"},
		{"link add vrf", nmstate.LinkCreate{Iface: st.VRF("vrf0", 100, st.With(func(i *nmstate.Interface) { i.VRF.Port = []string{"eth1"} }))}, "link add vrf0 type vrf route-table-id 100"},
		{"link set", nmstate.LinkModify{Iface: nmstate.Interface{Name: "eth1", Type: nmstate.TypeEthernet, MTU: st.Ptr(uint64(9000)), MACAddress: st.Ptr(nmstate.MAC("02:00:00:00:00:01")), AcceptAllMAC: st.Ptr(true), Description: st.Ptr("uplink a")}},
			`link set eth1 type ethernet mtu 9000 address 02:00:00:00:00:01 promisc on alias "uplink a"`},
		{"master", nmstate.LinkSetController{Name: "eth1", Controller: "bond0"}, "link set eth1 master bond0"},
		{"nomaster", nmstate.LinkSetController{Name: "eth1"}, "link set eth1 nomaster"},
		{"bridge port", nmstate.BridgePortSet{Bridge: "br0", Port: nmstate.LinuxBridgePort{Name: "eth1", STPPathCost: st.Ptr(uint32(100)), STPHairpinMode: st.Ptr(false)}},
			"bridge port set eth1 master br0 stp-hairpin-mode false stp-path-cost 100"},
		{"bridge vlan trunk", nmstate.BridgeVLANSet{Bridge: "br0", Name: "eth1", VLAN: &nmstate.BridgeVLAN{
			Mode: st.Ptr(nmstate.BridgeVLANMode("trunk")), Tag: st.Ptr(uint16(1)), EnableNative: st.Ptr(true),
			TrunkTags: []nmstate.TrunkTag{{ID: st.Ptr(uint16(100))}, {IDRange: &nmstate.VLANRange{Min: 200, Max: 299}}}}},
			"bridge vlan set eth1 master br0 enable-native true mode trunk tag 1 trunk-tags 100,200-299"},
		{"bridge vlan none", nmstate.BridgeVLANSet{Bridge: "br0", Name: "eth1"}, "bridge vlan set eth1 master br0 none"},
		{"bridge vlan filtering off", nmstate.BridgeVLANFiltering{Bridge: "br0"}, "bridge vlan-filtering br0 off"},
		{"bridge vlan filtering on", nmstate.BridgeVLANFiltering{Bridge: "br0", On: true}, "bridge vlan-filtering br0 on"},
		{"up", nmstate.LinkSetState{Name: "eth1", Up: true}, "link set eth1 up"},
		{"down", nmstate.LinkSetState{Name: "eth1"}, "link set eth1 down"},
		{"sysctl", nmstate.SysctlSet{Iface: "eth1", Key: "net.ipv6.conf.eth1.disable_ipv6", Value: "1"}, "sysctl set net.ipv6.conf.eth1.disable_ipv6 1"},
		{"addr add", nmstate.AddrAdd{Iface: "eth1", Address: nmstate.Address{IP: netip.MustParseAddr("192.0.2.1"), PrefixLength: 24}}, "addr add 192.0.2.1/24 dev eth1"},
		{"addr delete", nmstate.AddrDelete{Iface: "eth1", Address: nmstate.Address{IP: netip.MustParseAddr("2001:db8::1"), PrefixLength: 64}}, "addr delete 2001:db8::1/64 dev eth1"},
		{"route replace", nmstate.RouteReplace{Route: st.Route("198.51.100.0/24", "eth1", "192.0.2.2", st.Metric(150))}, "route replace 198.51.100.0/24 via 192.0.2.2 dev eth1 metric 150 table 254 proto static"},
		{"route delete", nmstate.RouteDelete{Route: st.Route("::/0", "eth1", "2001:db8::ff", st.Table(100))}, "route delete ::/0 via 2001:db8::ff dev eth1 table 100 proto static"},
		{"rule add", nmstate.RuleAdd{Rule: withPriority(st.Rule("192.0.2.0/24", "", 100), 1000)}, "rule add from 192.0.2.0/24 priority 1000 table 100"},
		{"rule delete v6", nmstate.RuleDelete{Rule: st.Rule("", "2001:db8::/64", 0)}, "rule delete -6 to 2001:db8::/64 table 254"},
		{"dns", nmstate.DNSWrite{Config: nmstate.DNSConfig{Server: []netip.Addr{netip.MustParseAddr("192.0.2.53")}, Search: []string{"a.example", "b.example"}, Options: []string{"rotate"}}},
			"dns write nameserver 192.0.2.53 search a.example b.example options rotate"},
		{"dns empty", nmstate.DNSWrite{}, "dns write empty"},
		{"hostname", nmstate.HostnameSet{Name: "node1"}, "hostname set node1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.op.String()); diff != "" {
				t.Errorf("String() (-want +got):\n%s", diff)
			}
		})
	}
}

func withPriority(r nmstate.RouteRule, p int64) nmstate.RouteRule {
	r.Priority = &p
	return r
}

func TestPlanString(t *testing.T) {
	var nilPlan *nmstate.Plan
	if !nilPlan.Empty() || nilPlan.String() != "" {
		t.Errorf("nil plan: Empty() = %v, String() = %q", nilPlan.Empty(), nilPlan.String())
	}
	p := &nmstate.Plan{Ops: []nmstate.Op{nmstate.LinkSetState{Name: "a", Up: true}, nmstate.HostnameSet{Name: "n"}}}
	if p.Empty() {
		t.Error("Empty() = true for a plan with ops")
	}
	if diff := cmp.Diff("link set a up\nhostname set n\n", p.String()); diff != "" {
		t.Errorf("String() (-want +got):\n%s", diff)
	}
}
