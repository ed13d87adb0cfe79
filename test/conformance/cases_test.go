package conformance

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// examplesDir holds the upstream nmstate example files, unmodified.
const examplesDir = "testdata/nmstate-examples"

// lane says which kernel a scenario needs.
type lane int

const (
	// hostLane: the development VM's kernel (veth, bridge without VLAN
	// filtering, macvlan, macvtap, policy routing).
	hostLane lane = iota
	// qemuLane: Debian's full kernel in the qemu lane (bond, 8021q, vrf,
	// ipvlan, bridge VLAN filtering), see hack/kernel-lane.
	qemuLane
)

func (l lane) String() string {
	if l == qemuLane {
		return "qemu lane"
	}
	return "host"
}

// scenario is one up/cleanup sequence: each step is an example file
// applied, verified and checked for the fixed point, in order, in one
// namespace. The first step sets something up; the later ones undo it.
type scenario struct {
	name  string
	steps []string
	lane  lane
	// needs names the kernel features the scenario uses beyond veth.
	needs string
	// known, when set, is an engine issue that makes the scenario fail
	// today: the test then expects the failure (and fails once it is
	// gone), and the support matrix lists the files as not yet supported.
	known string
}

// scenarios lists every supported example file in at least one scenario.
var scenarios = []scenario{
	{name: "veth", steps: []string{"veth1_up.yml", "veth1_absent.yml"}, lane: hostLane, needs: "veth"},
	{name: "mac-vlan", steps: []string{"mac_vlan_create.yml", "mac_vlan_absent.yml"}, lane: hostLane, needs: "macvlan"},
	{name: "mac-vtap", steps: []string{"mac_vtap_create.yml", "mac_vtap_absent.yml"}, lane: hostLane, needs: "macvtap"},
	{name: "linux-bridge", steps: []string{"linuxbrige_eth1_up.yml", "linuxbrige_eth1_absent.yml"}, lane: hostLane, needs: "bridge, bridge STP"},
	{name: "dns", steps: []string{"dns_edit_eth1.yml", "dns_remove.yml"}, lane: hostLane, needs: "resolv.conf file"},
	{name: "route", steps: []string{"eth1_add_route.yml", "eth1_del_all_routes.yml"}, lane: hostLane, needs: "routes (source, locked cwnd, blackhole)"},
	{name: "route-rule", steps: []string{"eth1_add_route_rule.yml", "eth1_del_all_route_rules.yml"}, lane: hostLane, needs: "policy routing (FIB rules)"},
	{name: "static-hostname", steps: []string{"static_hostname.yml"}, lane: hostLane, needs: "UTS namespace"},

	{name: "linux-bridge-port-vlan", steps: []string{"linuxbrige_eth1_up_port_vlan.yml", "linuxbrige_eth1_absent.yml"}, lane: qemuLane, needs: "bridge VLAN filtering"},
	{name: "ipvlan", steps: []string{"ipvlan_create.yml", "ipvlan_absent.yml"}, lane: qemuLane, needs: "ipvlan"},
	{name: "vlan", steps: []string{"vlan101_eth1_up.yml", "vlan101_eth1_absent.yml"}, lane: qemuLane, needs: "8021q"},
	{name: "vlan-down", steps: []string{"vlan101_eth1_up.yml", "vlan101_eth1_down.yml", "vlan101_eth1_absent.yml"}, lane: qemuLane, needs: "8021q"},
	{name: "vrf", steps: []string{"vrf0_with_eth1.yml", "vrf0_absent.yml"}, lane: qemuLane, needs: "vrf"},
	{name: "bond", steps: []string{"bond_port_up.yml", "bond_port_absent.yml"}, lane: qemuLane, needs: "bonding (per-port queue_id, prio)"},
	{name: "bond-bridge-vlan", steps: []string{"bond_linuxbridge_vlan_up.yml", "bond_linuxbridge_vlan_absent.yml"}, lane: qemuLane, needs: "bonding, bridge, 8021q"},
}

// Reasons an example is not supported yet, shared by several files.
const (
	whyOVS        = "Open vSwitch: the kernel engine has no OVS database client (ovs-bridge, ovs-interface, ovs-db are NetworkManager/OVSDB features)"
	why8021x      = "802.1X authentication needs a supplicant (wpa_supplicant) and an authenticator peer; the kernel engine configures no supplicant"
	whySRIOV      = "SR-IOV needs a physical NIC with virtual functions; ethernet sr-iov settings are refused by the kernel backend"
	whyInfiniBand = "InfiniBand IPoIB pkey children need InfiniBand hardware (base mlx5_ib0)"
	whyIPsec      = "IPsec connections are Libreswan (pluto) configuration, not kernel links; the kernel engine has no IKE daemon"
	whyMACsec     = "MACsec with MKA needs an MKA daemon (wpa_supplicant) and a peer with the same CAK/CKN; the kernel backend does not create macsec links"
	whyHSR        = "the kernel backend reports hsr links but does not create them yet (and the development kernel has no hsr module)"
	whyDynHost    = "hostname config \"\" means a hostname from DHCP or the hostname daemon; kernel mode has no dynamic hostname source"
)

// unsupported gives, per example file not covered by a scenario, why.
var unsupported = map[string]string{
	"eth1_with_ieee_802_1x.yml":        why8021x,
	"eth1_with_ieee_802_1x_peap.yml":   why8021x,
	"eth1_with_sriov.yml":              whySRIOV,
	"hsr0_up.yml":                      whyHSR,
	"hsr0_absent.yml":                  whyHSR,
	"infiniband_pkey_ipoib_create.yml": whyInfiniBand,
	"infiniband_pkey_ipoib_delete.yml": whyInfiniBand,
	"ipsec_psk.yml":                    whyIPsec,
	"ipsec_x509.yml":                   whyIPsec,
	"macsec0_up.yml":                   whyMACsec,
	"macsec0_absent.yml":               whyMACsec,
	"ovsbridge_bond_create.yml":        whyOVS,
	"ovsbridge_create.yml":             whyOVS,
	"ovsbridge_delete.yml":             whyOVS,
	"ovsbridge_dpdk_absent.yml":        whyOVS + "; DPDK also needs a DPDK-capable NIC",
	"ovsbridge_dpdk_create.yml":        whyOVS + "; DPDK also needs a DPDK-capable NIC",
	"ovsbridge_patch_create.yml":       whyOVS,
	"ovsbridge_patch_delete.yml":       whyOVS,
	"ovsbridge_vlan_port.yml":          whyOVS,
	"dynamic_hostname.yml":             whyDynHost,
}

// TestTableCoversEveryExample keeps the table honest: every example file
// is either in a scenario or listed as unsupported (never both), and the
// table names no file that does not exist.
func TestTableCoversEveryExample(t *testing.T) {
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	inScenario := map[string]bool{}
	for _, s := range scenarios {
		for _, f := range s.steps {
			inScenario[f] = true
		}
	}
	var listed []string
	for f := range inScenario {
		listed = append(listed, f)
		if _, ok := unsupported[f]; ok {
			t.Errorf("%s is both in a scenario and listed as unsupported", f)
		}
	}
	for f, why := range unsupported {
		listed = append(listed, f)
		if strings.TrimSpace(why) == "" {
			t.Errorf("%s: unsupported without a reason", f)
		}
	}
	sort.Strings(listed)
	if diff := cmp.Diff(files, listed); diff != "" {
		t.Errorf("table vs %s (-files +table):\n%s", examplesDir, diff)
	}
}

// readExample reads one example file from testdata.
func readExample(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
