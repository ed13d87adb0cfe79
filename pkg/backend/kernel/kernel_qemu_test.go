//go:build qemu

// Kernel-lane tests (make test-kernel): bonding, 8021q, dummy, vrf,
// ipvlan and bridge VLAN filtering, which the development VM's kernel
// lacks. Each builds with Execute and reads back with Show.

package kernel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

func TestQemuBondCreateOptionsPortsAndModeChange(t *testing.T) {
	_, b := openNS(t, Options{})
	execute(t, b,
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy1", Type: nmstate.TypeDummy}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy2", Type: nmstate.TypeDummy}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "bond0", Type: nmstate.TypeBond, LinkAggregation: &nmstate.Bond{
			Mode: statetest.Ptr(nmstate.BondMode8023AD),
			Options: &nmstate.BondOptions{
				MIIMon: u32(100), LACPRate: statetest.Ptr(nmstate.BondLACPRate("fast")),
				XmitHashPolicy: statetest.Ptr(nmstate.BondXmitHash("layer3+4")), ADActorSysPrio: u16(100), MinLinks: u32(1),
			},
		}}},
		nmstate.LinkSetController{Name: "dummy1", Controller: "bond0"},
		nmstate.LinkSetController{Name: "dummy2", Controller: "bond0"},
		nmstate.LinkSetState{Name: "bond0", Up: true},
		nmstate.LinkSetState{Name: "dummy1", Up: true},
		nmstate.LinkSetState{Name: "dummy2", Up: true},
	)
	st := show(t, b)
	bond := findIface(t, st, "bond0")
	if bond.Type != nmstate.TypeBond || bond.State != nmstate.StateUp {
		t.Fatalf("bond0 type %q state %q", bond.Type, bond.State)
	}
	la := bond.LinkAggregation
	if diff := cmp.Diff([]string{"dummy1", "dummy2"}, la.Port); diff != "" {
		t.Errorf("bond0 ports (-want +got):\n%s", diff)
	}
	got := nmstate.BondOptions{MIIMon: la.Options.MIIMon, LACPRate: la.Options.LACPRate, XmitHashPolicy: la.Options.XmitHashPolicy,
		ADActorSysPrio: la.Options.ADActorSysPrio, MinLinks: la.Options.MinLinks}
	want := nmstate.BondOptions{MIIMon: u32(100), LACPRate: statetest.Ptr(nmstate.BondLACPRate("fast")),
		XmitHashPolicy: statetest.Ptr(nmstate.BondXmitHash("layer3+4")), ADActorSysPrio: u16(100), MinLinks: u32(1)}
	if diff := cmp.Diff(want, got); diff != "" || la.Mode == nil || *la.Mode != nmstate.BondMode8023AD {
		t.Errorf("bond0 mode %v options (-want +got):\n%s", la.Mode, diff)
	}
	for _, port := range []string{"dummy1", "dummy2"} {
		p := findIface(t, st, port)
		if p.Controller == nil || *p.Controller != "bond0" || p.IPv4 == nil || *p.IPv4.Enabled {
			t.Errorf("%s: controller %v ipv4 %+v, want bond0 and IPv4 disabled", port, p.Controller, p.IPv4)
		}
	}

	// Mode change as planned: release ports, bond down, modify, re-attach.
	change := []nmstate.Op{
		nmstate.LinkSetController{Name: "dummy1", Controller: ""},
		nmstate.LinkSetController{Name: "dummy2", Controller: ""},
		nmstate.LinkSetState{Name: "bond0", Up: false},
		nmstate.LinkModify{Iface: nmstate.Interface{Name: "bond0", Type: nmstate.TypeBond, LinkAggregation: &nmstate.Bond{
			Mode: statetest.Ptr(nmstate.BondModeActiveBackup), Options: &nmstate.BondOptions{Primary: str("dummy2")}}}},
		nmstate.LinkSetController{Name: "dummy1", Controller: "bond0"},
		nmstate.LinkSetController{Name: "dummy2", Controller: "bond0"},
		nmstate.LinkSetState{Name: "bond0", Up: true},
	}
	execute(t, b, change...)
	execute(t, b, change...) // again: converges
	la = findIface(t, show(t, b), "bond0").LinkAggregation
	if la.Mode == nil || *la.Mode != nmstate.BondModeActiveBackup || la.Options.Primary == nil || *la.Options.Primary != "dummy2" {
		t.Errorf("after mode change: mode %v primary %v, want active-backup, dummy2", la.Mode, la.Options.Primary)
	}
	if la.Options.LACPRate != nil {
		t.Errorf("lacp_rate shown for active-backup: %v", *la.Options.LACPRate)
	}
	execute(t, b, nmstate.LinkDelete{Name: "bond0", Type: nmstate.TypeBond}, nmstate.LinkDelete{Name: "bond0", Type: nmstate.TypeBond})
	if i := show(t, b).FindTyped("bond0", ""); i != nil {
		t.Errorf("bond0 still shown after delete")
	}
}

func TestQemuVLANDummyVRFIPVlan(t *testing.T) {
	_, b := openNS(t, Options{})
	ops := []nmstate.Op{
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy0", Type: nmstate.TypeDummy, MTU: statetest.Ptr[uint64](9000)}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy0.10", Type: nmstate.TypeVLAN, VLAN: &nmstate.VLAN{
			BaseIface: str("dummy0"), ID: u16(10), Protocol: statetest.Ptr(nmstate.VLANProto("802.1ad")),
			ReorderHeaders: p(false), LooseBinding: p(true), RegistrationProtocol: statetest.Ptr(nmstate.VLANRegistration("mvrp"))}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "vrf0", Type: nmstate.TypeVRF, VRF: &nmstate.VRF{RouteTableID: u32(100)}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "ipv0", Type: nmstate.TypeIPVlan, IPVlan: &nmstate.IPVlan{BaseIface: str("dummy0"), Mode: statetest.Ptr(nmstate.IPVlanMode("l2")), Private: p(true)}}},
		nmstate.LinkSetController{Name: "dummy0.10", Controller: "vrf0"},
		nmstate.LinkSetState{Name: "dummy0", Up: true},
		nmstate.LinkSetState{Name: "dummy0.10", Up: true},
		nmstate.LinkSetState{Name: "vrf0", Up: true},
		nmstate.AddrAdd{Iface: "dummy0.10", Address: staticAddr("192.0.2.1/24")},
		nmstate.RouteReplace{Route: nmstate.Route{Destination: statetest.Ptr(prefix("198.51.100.0/24")), NextHopInterface: str("dummy0.10"), NextHopAddress: statetest.Ptr(addr("192.0.2.254")), TableID: u32(100)}},
	}
	execute(t, b, ops...)
	execute(t, b, ops...)
	st := show(t, b)
	wantVLAN := &nmstate.VLAN{BaseIface: str("dummy0"), ID: u16(10), Protocol: statetest.Ptr(nmstate.VLANProto("802.1ad")),
		ReorderHeaders: p(false), LooseBinding: p(true), RegistrationProtocol: statetest.Ptr(nmstate.VLANRegistration("mvrp"))}
	if diff := cmp.Diff(wantVLAN, findIface(t, st, "dummy0.10").VLAN); diff != "" {
		t.Errorf("dummy0.10 vlan (-want +got):\n%s", diff)
	}
	if d := findIface(t, st, "dummy0"); d.Type != nmstate.TypeDummy || d.MTU == nil || *d.MTU != 9000 {
		t.Errorf("dummy0: type %q mtu %v", d.Type, d.MTU)
	}
	if diff := cmp.Diff(&nmstate.VRF{Port: []string{"dummy0.10"}, RouteTableID: u32(100)}, findIface(t, st, "vrf0").VRF); diff != "" {
		t.Errorf("vrf0 (-want +got):\n%s", diff)
	}
	// A VRF port keeps its IP configuration.
	if v4 := findIface(t, st, "dummy0.10").IPv4; v4 == nil || len(v4.Address) != 1 {
		t.Errorf("dummy0.10 ipv4 = %+v, want its address", v4)
	}
	if diff := cmp.Diff(&nmstate.IPVlan{BaseIface: str("dummy0"), Mode: statetest.Ptr(nmstate.IPVlanMode("l2")), Private: p(true), VEPA: p(false)}, findIface(t, st, "ipv0").IPVlan); diff != "" {
		t.Errorf("ipv0 (-want +got):\n%s", diff)
	}
	found := false
	for _, r := range st.Routes.Config {
		found = found || (r.TableID != nil && *r.TableID == 100 && r.Destination.String() == "198.51.100.0/24")
	}
	if !found {
		t.Errorf("route in the vrf table not shown: %+v", st.Routes.Config)
	}
}

func TestQemuBridgeVLANFiltering(t *testing.T) {
	_, b := openNS(t, Options{})
	access := &nmstate.BridgeVLAN{Mode: statetest.Ptr(nmstate.BridgeVLANMode("access")), Tag: u16(10)}
	trunk := &nmstate.BridgeVLAN{Mode: statetest.Ptr(nmstate.BridgeVLANMode("trunk")), EnableNative: p(true), Tag: u16(5),
		TrunkTags: []nmstate.TrunkTag{{ID: u16(100)}, {IDRange: &nmstate.VLANRange{Min: 200, Max: 202}}}}
	ops := []nmstate.Op{
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "br0", Type: nmstate.TypeLinuxBridge, LinuxBridge: &nmstate.LinuxBridge{
			Options: &nmstate.LinuxBridgeOptions{VlanProtocol: statetest.Ptr(nmstate.VLANProto("802.1q")), VlanDefaultPVID: u16(1)},
			Port:    []nmstate.LinuxBridgePort{{Name: "dummy1", VLAN: access}},
		}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy1", Type: nmstate.TypeDummy}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy2", Type: nmstate.TypeDummy}},
		nmstate.LinkSetController{Name: "dummy1", Controller: "br0"},
		nmstate.LinkSetController{Name: "dummy2", Controller: "br0"},
		nmstate.BridgeVLANSet{Bridge: "br0", Name: "dummy1", VLAN: access},
		nmstate.BridgeVLANSet{Bridge: "br0", Name: "dummy2", VLAN: trunk},
	}
	execute(t, b, ops...)
	execute(t, b, ops...)
	br := findIface(t, show(t, b), "br0").LinuxBridge
	if o := br.Options; o.VlanProtocol == nil || *o.VlanProtocol != "802.1q" || o.VlanDefaultPVID == nil || *o.VlanDefaultPVID != 1 {
		t.Errorf("br0 vlan-protocol %v vlan-default-pvid %v", o.VlanProtocol, o.VlanDefaultPVID)
	}
	want := []nmstate.LinuxBridgePort{
		{Name: "dummy1", VLAN: access},
		{Name: "dummy2", VLAN: &nmstate.BridgeVLAN{Mode: trunk.Mode, EnableNative: p(true), Tag: u16(5),
			TrunkTags: []nmstate.TrunkTag{{ID: u16(100)}, {IDRange: &nmstate.VLANRange{Min: 200, Max: 202}}}}},
	}
	got := make([]nmstate.LinuxBridgePort, len(br.Port))
	for i, p := range br.Port {
		got[i] = nmstate.LinuxBridgePort{Name: p.Name, VLAN: p.VLAN}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("br0 port vlans (-want +got):\n%s", diff)
	}
	// nil: back to the default PVID, untagged (an access port on 1).
	execute(t, b, nmstate.BridgeVLANSet{Bridge: "br0", Name: "dummy2", VLAN: nil})
	for _, p := range findIface(t, show(t, b), "br0").LinuxBridge.Port {
		if p.Name == "dummy2" {
			if diff := cmp.Diff(&nmstate.BridgeVLAN{Mode: access.Mode, Tag: u16(1)}, p.VLAN); diff != "" {
				t.Errorf("dummy2 vlan after reset (-want +got):\n%s", diff)
			}
		}
	}
}

// kubernetes-nmstate's default trunk (no enable-native): the bridge's
// default PVID stays on the port, untagged, as NetworkManager keeps it;
// an explicit enable-native false gets none; and filtering goes off.
func TestQemuBridgeDefaultTrunkAndReset(t *testing.T) {
	_, b := openNS(t, Options{})
	trunk := func(native *bool) *nmstate.BridgeVLAN {
		return &nmstate.BridgeVLAN{Mode: statetest.Ptr(nmstate.BridgeVLANMode("trunk")), EnableNative: native,
			TrunkTags: []nmstate.TrunkTag{{IDRange: &nmstate.VLANRange{Min: 2, Max: 4094}}}}
	}
	execute(t, b,
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "br0", Type: nmstate.TypeLinuxBridge, LinuxBridge: &nmstate.LinuxBridge{}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy1", Type: nmstate.TypeDummy}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy2", Type: nmstate.TypeDummy}},
		nmstate.LinkSetController{Name: "dummy1", Controller: "br0"},
		nmstate.LinkSetController{Name: "dummy2", Controller: "br0"},
		nmstate.BridgeVLANSet{Bridge: "br0", Name: "dummy1", VLAN: trunk(nil)},
		nmstate.BridgeVLANSet{Bridge: "br0", Name: "dummy2", VLAN: trunk(p(false))},
	)
	tags := []nmstate.TrunkTag{{IDRange: &nmstate.VLANRange{Min: 2, Max: 4094}}}
	want := []nmstate.LinuxBridgePort{
		{Name: "dummy1", VLAN: &nmstate.BridgeVLAN{Mode: statetest.Ptr(nmstate.BridgeVLANMode("trunk")), EnableNative: p(true), Tag: u16(1), TrunkTags: tags}},
		{Name: "dummy2", VLAN: &nmstate.BridgeVLAN{Mode: statetest.Ptr(nmstate.BridgeVLANMode("trunk")), EnableNative: p(false), TrunkTags: tags}},
	}
	ports := func() []nmstate.LinuxBridgePort {
		var out []nmstate.LinuxBridgePort
		for _, p := range findIface(t, show(t, b), "br0").LinuxBridge.Port {
			out = append(out, nmstate.LinuxBridgePort{Name: p.Name, VLAN: p.VLAN})
		}
		return out
	}
	if diff := cmp.Diff(want, ports()); diff != "" {
		t.Errorf("port vlans (-want +got):\n%s", diff)
	}
	// The reset: both ports leave VLAN filtering, the bridge stops
	// filtering, and no port reports a VLAN configuration any more.
	execute(t, b,
		nmstate.BridgeVLANSet{Bridge: "br0", Name: "dummy1", VLAN: nil},
		nmstate.BridgeVLANSet{Bridge: "br0", Name: "dummy2", VLAN: nil},
		nmstate.BridgeVLANFiltering{Bridge: "br0"},
	)
	want = []nmstate.LinuxBridgePort{{Name: "dummy1"}, {Name: "dummy2"}}
	if diff := cmp.Diff(want, ports()); diff != "" {
		t.Errorf("port vlans after the reset (-want +got):\n%s", diff)
	}
}

func TestQemuTeamDevice(t *testing.T) {
	_, b := openNS(t, Options{})
	ops := []nmstate.Op{
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "team0", Type: nmstate.TypeTeam}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy1", Type: nmstate.TypeDummy}},
		nmstate.LinkSetController{Name: "dummy1", Controller: "team0"},
	}
	execute(t, b, ops...)
	execute(t, b, ops...)
	st := show(t, b)
	want := &nmstate.Team{Port: []nmstate.TeamPort{{Name: "dummy1"}}}
	if diff := cmp.Diff(want, findIface(t, st, "team0").Team); diff != "" {
		t.Errorf("team0 (-want +got):\n%s", diff)
	}
	if c := findIface(t, st, "dummy1").Controller; c == nil || *c != "team0" {
		t.Errorf("dummy1 controller = %v, want team0", c)
	}
}

// The bond's ports-config is set as the plan orders it: on the bond's
// create, before its ports are attached (kept until each port joins), and
// by a later modify of ports already attached; Show reads it back from the
// ports' IFLA_BOND_SLAVE_QUEUE_ID and IFLA_BOND_SLAVE_PRIO.
func TestQemuBondPortsConfig(t *testing.T) {
	_, b := openNS(t, Options{})
	i32 := func(v int32) *int32 { return &v }
	execute(t, b,
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy1", Type: nmstate.TypeDummy}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy2", Type: nmstate.TypeDummy}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "bond0", Type: nmstate.TypeBond, LinkAggregation: &nmstate.Bond{
			Mode:    statetest.Ptr(nmstate.BondModeActiveBackup),
			Options: &nmstate.BondOptions{MIIMon: u32(140)},
			PortsConfig: []nmstate.BondPortConfig{
				{Name: "dummy1", QueueID: u16(0), Priority: i32(-1)},
				{Name: "dummy2", QueueID: u16(1), Priority: i32(2)},
			},
		}}},
		nmstate.LinkSetController{Name: "dummy1", Controller: "bond0"},
		nmstate.LinkSetController{Name: "dummy2", Controller: "bond0"},
		nmstate.LinkSetState{Name: "bond0", Up: true},
	)
	want := []nmstate.BondPortConfig{
		{Name: "dummy1", QueueID: u16(0), Priority: i32(-1)},
		{Name: "dummy2", QueueID: u16(1), Priority: i32(2)},
	}
	if diff := cmp.Diff(want, findIface(t, show(t, b), "bond0").LinkAggregation.PortsConfig); diff != "" {
		t.Errorf("ports-config after create (-want +got):\n%s", diff)
	}

	modify := nmstate.LinkModify{Iface: nmstate.Interface{Name: "bond0", Type: nmstate.TypeBond, LinkAggregation: &nmstate.Bond{
		PortsConfig: []nmstate.BondPortConfig{{Name: "dummy2", QueueID: u16(3), Priority: i32(5)}},
	}}}
	execute(t, b, modify)
	execute(t, b, modify) // again: converges
	want[1] = nmstate.BondPortConfig{Name: "dummy2", QueueID: u16(3), Priority: i32(5)}
	if diff := cmp.Diff(want, findIface(t, show(t, b), "bond0").LinkAggregation.PortsConfig); diff != "" {
		t.Errorf("ports-config after modify (-want +got):\n%s", diff)
	}
}

func TestQemuBridgeVLANFilteringSupported(t *testing.T) {
	ok, err := BridgeVLANFiltering()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Error("BridgeVLANFiltering() = false on a kernel with CONFIG_BRIDGE_VLAN_FILTERING")
	}
}
