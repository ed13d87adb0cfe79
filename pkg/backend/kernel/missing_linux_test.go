//go:build !qemu

// The development VM's kernel lacks bonding, 8021q, dummy, vrf, ipvlan, team,
// hsr and bridge VLAN filtering; these tests assert the clear errors the backend
// gives for them. The qemu lane, whose kernel has them all, excludes this
// file and tests the features themselves (*_qemu_test.go).

package kernel

import (
	"context"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

func TestExecuteMissingKernelFeature(t *testing.T) {
	_, b := openNS(t, Options{})
	execute(t, b,
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "veth0", Type: nmstate.TypeVeth, Veth: &nmstate.Veth{Peer: "veth1"}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "br0", Type: nmstate.TypeLinuxBridge, LinuxBridge: &nmstate.LinuxBridge{}}},
		nmstate.LinkSetController{Name: "veth0", Controller: "br0"},
	)
	tests := []struct {
		name string
		op   nmstate.Op
		want string
	}{
		{"bonding", nmstate.LinkCreate{Iface: nmstate.Interface{Name: "bond0", Type: nmstate.TypeBond,
			LinkAggregation: &nmstate.Bond{Mode: statetest.Ptr(nmstate.BondMode8023AD)}}},
			"bond0: kernel has no bonding support (module bonding)"},
		{"8021q", nmstate.LinkCreate{Iface: nmstate.Interface{Name: "veth1.10", Type: nmstate.TypeVLAN,
			VLAN: &nmstate.VLAN{BaseIface: str("veth1"), ID: u16(10)}}},
			"veth1.10: kernel has no 802.1q vlan support (module 8021q)"},
		{"dummy", nmstate.LinkCreate{Iface: nmstate.Interface{Name: "dummy0", Type: nmstate.TypeDummy}},
			"dummy0: kernel has no dummy support (module dummy)"},
		{"vrf", nmstate.LinkCreate{Iface: nmstate.Interface{Name: "vrf0", Type: nmstate.TypeVRF, VRF: &nmstate.VRF{RouteTableID: u32(100)}}},
			"vrf0: kernel has no vrf support (module vrf)"},
		{"ipvlan", nmstate.LinkCreate{Iface: nmstate.Interface{Name: "ipv0", Type: nmstate.TypeIPVlan, IPVlan: &nmstate.IPVlan{BaseIface: str("veth1")}}},
			"ipv0: kernel has no ipvlan support (module ipvlan)"},
		{"team", nmstate.LinkCreate{Iface: nmstate.Interface{Name: "team0", Type: nmstate.TypeTeam}},
			"team0: kernel has no team support (module team)"},
		{"hsr", nmstate.LinkCreate{Iface: nmstate.Interface{Name: "hsr0", Type: nmstate.TypeHSR, HSR: &nmstate.HSR{Port1: str("veth0"), Port2: str("veth1")}}},
			"hsr0: kernel has no hsr support (module hsr)"},
		{"bridge vlan filtering", nmstate.BridgeVLANSet{Bridge: "br0", Name: "veth0", VLAN: &nmstate.BridgeVLAN{
			Mode: statetest.Ptr(nmstate.BridgeVLANMode("access")), Tag: u16(10)}},
			"br0: kernel has no bridge vlan filtering support (CONFIG_BRIDGE_VLAN_FILTERING)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := b.Execute(context.Background(), &nmstate.Plan{Ops: []nmstate.Op{tc.op}})
			if err == nil {
				t.Fatalf("%s: no error; this kernel has the feature, the test belongs to the qemu lane", tc.op)
			}
			t.Logf("%v", err)
			got := err.Error()
			// The operation's text, the message, then the kernel's own text.
			want := tc.op.String() + ": " + tc.want
			if len(got) < len(want) || got[:len(want)] != want {
				t.Errorf("error = %q\nwant prefix %q", got, want)
			}
			if k := nmstate.KindOf(err); k != nmstate.Dependency {
				t.Errorf("kind = %v, want Dependency", k)
			}
		})
	}
}

// The question is asked in a private namespace: this kernel says no, as
// TestExecuteMissingKernelFeature's bridge vlan filtering case shows it
// really cannot (the qemu lane checks the yes).
func TestBridgeVLANFilteringMissing(t *testing.T) {
	ok, err := BridgeVLANFiltering()
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Error("BridgeVLANFiltering() = true on a kernel without CONFIG_BRIDGE_VLAN_FILTERING")
	}
}
