package conformance

// The table of upstream nmstate's example files: which scenario applies
// each supported one, on which kernel, and why the others are not
// supported. The conformance tests, the support matrix and test/e2e (the
// same scenarios through the handler) read it.

// ExamplesDir holds the upstream nmstate example files, unmodified,
// relative to this package's directory.
const ExamplesDir = "testdata/nmstate-examples"

// Lane says which kernel a scenario needs.
type Lane int

const (
	// HostLane: the development VM's kernel (veth, bridge without VLAN
	// filtering, macvlan, macvtap, policy routing).
	HostLane Lane = iota
	// QemuLane: Debian's full kernel in the qemu lane (bond, 8021q, vrf,
	// ipvlan, bridge VLAN filtering), see hack/kernel-lane; through the
	// handler, in the lab's guest mode (lab up --kernel debian).
	QemuLane
)

func (l Lane) String() string {
	if l == QemuLane {
		return "qemu lane"
	}
	return "host"
}

// Scenario is one up/cleanup sequence: each step is an example file
// applied, verified and checked for the fixed point, in order, in one
// namespace. The first step sets something up; the later ones undo it.
// test/e2e runs the same steps as policies through the handler on a lab
// node (TestNmstateExamples): host scenarios in both lab modes, qemu lane
// scenarios in guest mode.
type Scenario struct {
	Name  string
	Steps []string
	Lane  Lane
	// Needs names the kernel features the scenario uses beyond veth.
	Needs string
	// NIC, when set, makes eth1 a NIC of that kind instead of a veth
	// (NICNetdevsim). test/e2e skips such scenarios: the lab's NICs are
	// veths.
	NIC string
	// NoNM, when set, says why the NetworkManager backend's tests
	// (nm_host_test.go, nm_qemu_test.go) do not run the scenario.
	NoNM string
	// NMKnown, when set, is why the scenario fails through the
	// NetworkManager backend today: its NetworkManager test then expects
	// the failure (and fails once it is gone), and the support matrix's
	// NetworkManager column says so.
	NMKnown string
	// NMBy, when set, names the test that runs the scenario through
	// the NetworkManager backend with what the generic runs lack (an
	// authenticator): those skip it, the matrix's column names the test.
	NMBy string
	// NoHandler, when set, says why test/e2e does not run the scenario
	// through the handler (the support matrix prints it).
	NoHandler string
	// Known, when set, is an engine issue that makes the scenario fail
	// today: the test then expects the failure (and fails once it is
	// gone), and the support matrix lists the files as not yet supported.
	Known string
	// OVS: the node needs its own Open vSwitch (ovsdb-server and
	// ovs-vswitchd). TestOVSExamples runs these scenarios: on the host
	// with the userspace datapath (this kernel has no openvswitch
	// module), in the qemu lane with the kernel datapath.
	OVS bool
	// NotThroughHandler, when set, says why test/e2e does not run the
	// scenario on a lab node (the example clashes with the lab's own
	// network); the support matrix shows it.
	NotThroughHandler string
}

// HandlerSkip is why test/e2e does not run s through the handler, or "":
// NoHandler, NotThroughHandler or a NIC the lab's nodes do not have.
func (s Scenario) HandlerSkip() string {
	switch {
	case s.NoHandler != "":
		return s.NoHandler
	case s.NotThroughHandler != "":
		return s.NotThroughHandler
	case s.NIC != "":
		return "eth1 is a " + s.NIC + " NIC, the lab's NICs are veths"
	}
	return ""
}

// NICNetdevsim is a Scenario's NIC: eth1 is a port of a netdevsim device
// (the qemu lane builds the module), which has SR-IOV virtual functions.
const NICNetdevsim = "netdevsim"

// Scenarios lists every supported example file in at least one scenario.
var Scenarios = []Scenario{
	{Name: "veth", Steps: []string{"veth1_up.yml", "veth1_absent.yml"}, Lane: HostLane, Needs: "veth"},
	{Name: "mac-vlan", Steps: []string{"mac_vlan_create.yml", "mac_vlan_absent.yml"}, Lane: HostLane, Needs: "macvlan"},
	{Name: "mac-vtap", Steps: []string{"mac_vtap_create.yml", "mac_vtap_absent.yml"}, Lane: HostLane, Needs: "macvtap"},
	{Name: "linux-bridge", Steps: []string{"linuxbrige_eth1_up.yml", "linuxbrige_eth1_absent.yml"}, Lane: HostLane, Needs: "bridge, bridge STP"},
	{Name: "dns", Steps: []string{"dns_edit_eth1.yml", "dns_remove.yml"}, Lane: HostLane, Needs: "resolv.conf file"},
	{Name: "route", Steps: []string{"eth1_add_route.yml", "eth1_del_all_routes.yml"}, Lane: HostLane, Needs: "routes (source, locked cwnd, blackhole)"},
	{Name: "route-rule", Steps: []string{"eth1_add_route_rule.yml", "eth1_del_all_route_rules.yml"}, Lane: HostLane, Needs: "policy routing (FIB rules)"},
	{Name: "static-hostname", Steps: []string{"static_hostname.yml"}, Lane: HostLane, Needs: "UTS namespace"},
	// The hostname from DHCP: pkg/noded's TestDHCPHostnameWhenConfigEmpty.
	{Name: "dynamic-hostname", Steps: []string{"static_hostname.yml", "dynamic_hostname.yml"}, Lane: HostLane, Needs: "UTS namespace, static hostname file (the node runtime sets the DHCP hostname)"},
	// The supplicant runs without an authenticator here (the examples'
	// certificates do not exist); ieee8021x_linux_test.go authenticates
	// both against hostapd.
	{Name: "802.1x-tls", Steps: []string{"eth1_with_ieee_802_1x.yml"}, Lane: HostLane, Needs: "wpa_supplicant (wired driver)", NoHandler: why8021xLab, NMBy: "TestIEEE8021XGuardedPortNetworkManager"},
	{Name: "802.1x-peap", Steps: []string{"eth1_with_ieee_802_1x_peap.yml"}, Lane: HostLane, Needs: "wpa_supplicant (wired driver)", NoHandler: why8021xLab, NMBy: "TestIEEE8021XGuardedPortNetworkManager"},

	{Name: "ovs-bridge", Steps: []string{"ovsbridge_create.yml", "ovsbridge_delete.yml"}, Lane: HostLane, OVS: true, Needs: ovsNeeds,
		NotThroughHandler: "it puts 192.0.2.1/24 on ovs0, the lab gateway's address: the handler's gateway probe fails and the apply is rolled back, as it must be (TestExamples applies upstream's ovs-bridge-iface.yaml instead)"},
	{Name: "ovs-bond", Steps: []string{"ovsbridge_bond_create.yml", "ovsbridge_delete.yml"}, Lane: HostLane, OVS: true, Needs: ovsNeeds + " (balance-slb bond)"},
	{Name: "ovs-vlan-port", Steps: []string{"ovsbridge_vlan_port.yml", "ovsbridge_delete.yml"}, Lane: HostLane, OVS: true, Needs: ovsNeeds + " (access and trunk ports)"},
	{Name: "ovs-patch", Steps: []string{"ovsbridge_patch_create.yml", "ovsbridge_patch_delete.yml"}, Lane: HostLane, OVS: true, Needs: ovsNeeds + " (patch ports)"},

	{Name: "linux-bridge-port-vlan", Steps: []string{"linuxbrige_eth1_up_port_vlan.yml", "linuxbrige_eth1_absent.yml"}, Lane: QemuLane, Needs: "bridge VLAN filtering"},
	{Name: "ipvlan", Steps: []string{"ipvlan_create.yml", "ipvlan_absent.yml"}, Lane: QemuLane, Needs: "ipvlan", NoNM: whyIPVLANNM},
	{Name: "vlan", Steps: []string{"vlan101_eth1_up.yml", "vlan101_eth1_absent.yml"}, Lane: QemuLane, Needs: "8021q"},
	{Name: "vlan-down", Steps: []string{"vlan101_eth1_up.yml", "vlan101_eth1_down.yml", "vlan101_eth1_absent.yml"}, Lane: QemuLane, Needs: "8021q"},
	{Name: "vrf", Steps: []string{"vrf0_with_eth1.yml", "vrf0_absent.yml"}, Lane: QemuLane, Needs: "vrf"},
	{Name: "bond", Steps: []string{"bond_port_up.yml", "bond_port_absent.yml"}, Lane: QemuLane, Needs: "bonding (per-port queue_id, prio)",
		NMKnown: "its ports-config priority is NetworkManager's bond-port.prio, added in 1.44 (backported to 1.42.8); 1.42.4 answers 'bond-port.prio: unknown property' and the checkpoint rolls back"},
	{Name: "hsr", Steps: []string{"hsr0_up.yml", "hsr0_absent.yml"}, Lane: QemuLane, Needs: "hsr (PRP; module built by hack/kernel-lane/extmod.sh)", NoNM: whyHSRNM},
	{Name: "sr-iov", Steps: []string{"eth1_with_sriov.yml"}, Lane: QemuLane, NIC: NICNetdevsim, Needs: "SR-IOV VFs (netdevsim, built by hack/kernel-lane/extmod.sh)"},
	// MKA runs (wpa_supplicant, driver macsec_linux) without a peer here;
	// macsec_qemu_test.go secures traffic with one.
	{Name: "macsec", Steps: []string{"macsec0_up.yml", "macsec0_absent.yml"}, Lane: QemuLane, Needs: "macsec; MKA by wpa_supplicant (macsec_linux driver)", NoHandler: whyMKALab,
		NMKnown: "its port 0 is outside NetworkManager's macsec.port range 1..65534 (nmcli 1.42: '0' is out of range [1, 65534]); the profile leaves NetworkManager's default, 1, so verification finds port 1 (MKA itself runs through NetworkManager's wpa_supplicant)"},
	{Name: "bond-bridge-vlan", Steps: []string{"bond_linuxbridge_vlan_up.yml", "bond_linuxbridge_vlan_absent.yml"}, Lane: QemuLane, Needs: "bonding, bridge, 8021q"},
}

// ovsNeeds is what the OVS scenarios need of the node.
const ovsNeeds = "Open vSwitch over OVSDB (userspace datapath; kernel datapath in the qemu lane)"

// Reasons an example is not supported yet, shared by several files.
const (
	why8021xLab   = "the lab's handlers run without a supplicant directory (a wpa_supplicant they start would outlive lab down)"
	whyMKALab     = why8021xLab
	whyIPVLANNM   = "NetworkManager 1.42 has no ipvlan setting (added in 1.52): the NetworkManager backend cannot make an ipvlan interface"
	whyHSRNM      = "NetworkManager 1.42 has no hsr setting (added in 1.46): the NetworkManager backend cannot make an hsr interface"
	whyDPDK       = "DPDK: needs a DPDK-capable NIC and an Open vSwitch built with DPDK; the OVS backend refuses `dpdk` settings with an error naming DPDK (TestOVSDPDKRefused)"
	whyInfiniBand = "InfiniBand IPoIB pkey children need InfiniBand hardware (base mlx5_ib0)"
	whyIPsec      = "IPsec connections are Libreswan (pluto) configuration, not kernel links: an external daemon we chose not to run yet (per node a pluto with its own NSS database, plus an IKEv2 responder peer handing out the address these examples take by DHCP over IKE)"
)

// Unsupported gives, per example file not covered by a scenario, why.
var Unsupported = map[string]string{
	"infiniband_pkey_ipoib_create.yml": whyInfiniBand,
	"infiniband_pkey_ipoib_delete.yml": whyInfiniBand,
	"ipsec_psk.yml":                    whyIPsec,
	"ipsec_x509.yml":                   whyIPsec,
	"ovsbridge_dpdk_absent.yml":        "the cleanup of ovsbridge_dpdk_create.yml; " + whyDPDK,
	"ovsbridge_dpdk_create.yml":        whyDPDK,
}
