//go:build qemu

// These tests only build with -tags qemu: they need kernel features the
// development VM lacks and run under `make test-kernel` on Debian's kernel.
// They prove the guest has what the lane exists for.

package nstest

import (
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// addDummy creates a dummy link (the dummy module) in n, left down.
func addDummy(t *testing.T, n *NS, name string) netlink.Link {
	t.Helper()
	if err := n.Netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
		t.Fatalf("adding dummy %s: %v", name, err)
	}
	return linkByName(t, n, name)
}

func linkByName(t *testing.T, n *NS, name string) netlink.Link {
	t.Helper()
	l, err := n.Netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("reading link %s: %v", name, err)
	}
	return l
}

func setMaster(t *testing.T, n *NS, port, master netlink.Link) {
	t.Helper()
	if err := n.Netlink.LinkSetMaster(port, master); err != nil {
		t.Fatalf("setting %s as port of %s: %v", port.Attrs().Name, master.Attrs().Name, err)
	}
}

func TestBondActiveBackupWithTwoDummyPorts(t *testing.T) {
	n := New(t)
	bond := netlink.NewLinkBond(netlink.LinkAttrs{Name: "bond0"})
	bond.Mode = netlink.BOND_MODE_ACTIVE_BACKUP
	bond.Miimon = 100
	if err := n.Netlink.LinkAdd(bond); err != nil {
		t.Fatalf("adding bond0: %v", err)
	}
	master := linkByName(t, n, "bond0")
	for _, p := range []string{"d0", "d1"} {
		setMaster(t, n, addDummy(t, n, p), master)
	}

	got, ok := linkByName(t, n, "bond0").(*netlink.Bond)
	if !ok {
		t.Fatalf("bond0 read back as %T, want *netlink.Bond", linkByName(t, n, "bond0"))
	}
	if diff := cmp.Diff([]any{"active-backup", 100}, []any{got.Mode.String(), got.Miimon}); diff != "" {
		t.Errorf("bond0 [mode miimon] (-want +got):\n%s", diff)
	}
	for _, p := range []string{"d0", "d1"} {
		l := linkByName(t, n, p)
		if l.Attrs().MasterIndex != got.Index {
			t.Errorf("%s: master index %d, want bond0's %d", p, l.Attrs().MasterIndex, got.Index)
		}
		if _, ok := l.Attrs().Slave.(*netlink.BondSlave); !ok {
			t.Errorf("%s: port info %T, want *netlink.BondSlave", p, l.Attrs().Slave)
		}
	}
}

func TestVLANOnDummy(t *testing.T) {
	n := New(t)
	parent := addDummy(t, n, "d0")
	vlan := &netlink.Vlan{
		LinkAttrs:    netlink.LinkAttrs{Name: "d0.100", ParentIndex: parent.Attrs().Index},
		VlanId:       100,
		VlanProtocol: netlink.VLAN_PROTOCOL_8021Q,
	}
	if err := n.Netlink.LinkAdd(vlan); err != nil {
		t.Fatalf("adding d0.100: %v", err)
	}
	got, ok := linkByName(t, n, "d0.100").(*netlink.Vlan)
	if !ok {
		t.Fatalf("d0.100 read back as %T, want *netlink.Vlan", linkByName(t, n, "d0.100"))
	}
	type vlanAttrs struct {
		ID       int
		Protocol string
		Parent   int
	}
	want := vlanAttrs{ID: 100, Protocol: "802.1q", Parent: parent.Attrs().Index}
	if diff := cmp.Diff(want, vlanAttrs{got.VlanId, got.VlanProtocol.String(), got.ParentIndex}); diff != "" {
		t.Errorf("d0.100 (-want +got):\n%s", diff)
	}
}

func TestVRFWithPortAndTable(t *testing.T) {
	n := New(t)
	const table = 1010
	if err := n.Netlink.LinkAdd(&netlink.Vrf{LinkAttrs: netlink.LinkAttrs{Name: "vrf-blue"}, Table: table}); err != nil {
		t.Fatalf("adding vrf-blue: %v", err)
	}
	vrf := linkByName(t, n, "vrf-blue")
	setMaster(t, n, addDummy(t, n, "d0"), vrf)
	n.AddrAdd(t, "d0", "192.0.2.1/24")
	n.LinkUp(t, "vrf-blue")
	n.LinkUp(t, "d0")

	got, ok := vrf.(*netlink.Vrf)
	if !ok {
		t.Fatalf("vrf-blue read back as %T, want *netlink.Vrf", vrf)
	}
	if got.Table != table {
		t.Errorf("vrf-blue table %d, want %d", got.Table, table)
	}
	if m := linkByName(t, n, "d0").Attrs().MasterIndex; m != got.Index {
		t.Errorf("d0: master index %d, want vrf-blue's %d", m, got.Index)
	}
	// The port's connected route must land in the VRF's table, not main.
	routes, err := n.Netlink.RouteListFiltered(unix.AF_INET, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatalf("listing routes of table %d: %v", table, err)
	}
	var dsts []string
	for _, r := range routes {
		// Unicast only: the VRF table also holds the local and broadcast
		// routes the kernel adds for the address.
		if r.Dst != nil && r.Type == unix.RTN_UNICAST {
			dsts = append(dsts, r.Dst.String())
		}
	}
	if diff := cmp.Diff([]string{"192.0.2.0/24"}, dsts); diff != "" {
		t.Errorf("unicast routes in table %d (-want +got):\n%s", table, diff)
	}
}

func TestBridgeVLANFilteringWithPortVLAN(t *testing.T) {
	n := New(t)
	on := true
	if err := n.Netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}, VlanFiltering: &on}); err != nil {
		t.Fatalf("adding br0: %v", err)
	}
	br := linkByName(t, n, "br0")
	port := addDummy(t, n, "d0")
	setMaster(t, n, port, br)
	if err := n.Netlink.BridgeVlanAdd(port, 20, true, true, false, true); err != nil {
		t.Fatalf("adding vlan 20 to d0: %v", err)
	}

	got, ok := linkByName(t, n, "br0").(*netlink.Bridge)
	if !ok {
		t.Fatalf("br0 read back as %T, want *netlink.Bridge", br)
	}
	if got.VlanFiltering == nil || !*got.VlanFiltering {
		t.Errorf("br0 vlan_filtering = %v, want true", got.VlanFiltering)
	}
	vlans, err := n.Netlink.BridgeVlanList()
	if err != nil {
		t.Fatalf("listing bridge vlans: %v", err)
	}
	type portVLAN struct {
		VID            uint16
		PVID, Untagged bool
	}
	var gotVLANs []portVLAN
	for _, v := range vlans[int32(port.Attrs().Index)] {
		gotVLANs = append(gotVLANs, portVLAN{v.Vid, v.PortVID(), v.EngressUntag()})
	}
	// Joining gives the port the default VLAN 1 (pvid, untagged); adding 20
	// as pvid moves the pvid flag to it.
	want := []portVLAN{{1, false, true}, {20, true, true}}
	if diff := cmp.Diff(want, gotVLANs); diff != "" {
		t.Errorf("d0 bridge vlans (-want +got):\n%s", diff)
	}
}

// Every link kind the backend may create, and the OVS datapath family, must
// be available in the guest: a missing module in the initramfs fails here
// with its name rather than deep inside a backend test.
func TestGuestKernelLinkKinds(t *testing.T) {
	n := New(t)
	parent := addDummy(t, n, "parent0")
	pa := netlink.LinkAttrs{ParentIndex: parent.Attrs().Index}
	// A device carries macvlan or ipvlan children, never both.
	ipvlanParent := addDummy(t, n, "parent1")
	pb := netlink.LinkAttrs{ParentIndex: ipvlanParent.Attrs().Index}
	with := func(name string, a netlink.LinkAttrs) netlink.LinkAttrs { a.Name = name; return a }
	for _, tc := range []struct {
		kind string
		link netlink.Link
	}{
		{"dummy", &netlink.Dummy{LinkAttrs: with("k-dummy", netlink.LinkAttrs{})}},
		{"bond", netlink.NewLinkBond(with("k-bond", netlink.LinkAttrs{}))},
		{"vlan", &netlink.Vlan{LinkAttrs: with("k-vlan", pa), VlanId: 7}},
		{"vrf", &netlink.Vrf{LinkAttrs: with("k-vrf", netlink.LinkAttrs{}), Table: 77}},
		{"bridge", &netlink.Bridge{LinkAttrs: with("k-bridge", netlink.LinkAttrs{})}},
		{"team", &netlink.GenericLink{LinkAttrs: with("k-team", netlink.LinkAttrs{}), LinkType: "team"}},
		{"veth", &netlink.Veth{LinkAttrs: with("k-veth", netlink.LinkAttrs{}), PeerName: "k-veth-p"}},
		{"macvlan", &netlink.Macvlan{LinkAttrs: with("k-macvlan", pa), Mode: netlink.MACVLAN_MODE_BRIDGE}},
		{"macvtap", &netlink.Macvtap{Macvlan: netlink.Macvlan{LinkAttrs: with("k-macvtap", pa), Mode: netlink.MACVLAN_MODE_BRIDGE}}},
		{"ipvlan", &netlink.IPVlan{LinkAttrs: with("k-ipvlan", pb), Mode: netlink.IPVLAN_MODE_L2}},
		{"vxlan", &netlink.Vxlan{LinkAttrs: with("k-vxlan", netlink.LinkAttrs{}), VxlanId: 4242, Port: 4789, Group: net.ParseIP("192.0.2.9")}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if err := n.Netlink.LinkAdd(tc.link); err != nil {
				t.Fatalf("adding %s link: %v", tc.kind, err)
			}
			got := linkByName(t, n, tc.link.Attrs().Name)
			if got.Type() != tc.kind {
				t.Errorf("%s read back with type %q, want %q", tc.link.Attrs().Name, got.Type(), tc.kind)
			}
		})
	}
	t.Run("openvswitch", func(t *testing.T) {
		if _, err := n.Netlink.GenlFamilyGet("ovs_datapath"); err != nil {
			t.Fatalf("generic netlink family ovs_datapath (openvswitch module): %v", err)
		}
	})
}
