package nm_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/probe"
)

// brExNode is a node on a lab switch (dnsmasq answering DHCP, gateway
// 192.0.2.1) whose eth0 is NetworkManager's, with a private Open vSwitch
// (userspace datapath) that NetworkManager's OVS plugin drives.
type brExNode struct {
	sw       *labnet.Switch
	node     *labnet.Node
	ovs      *ovsrun.OVS
	nm       *nmrun.Instance
	b        *nm.Backend
	stateDir string
}

func newBrExNode(t *testing.T) *brExNode {
	t.Helper()
	sw, err := labnet.NewSwitch(context.Background(), labnet.Options{
		// No router advertisements: IPv6 stays out of what is compared.
		NodeSysctls: map[string]string{"net/ipv6/conf/default/accept_ra": "0"},
	})
	t.Cleanup(func() {
		if sw != nil {
			if t.Failed() {
				if b, err := os.ReadFile(sw.LogPath()); err == nil {
					t.Logf("dnsmasq log:\n%s", b)
				}
			}
			if err := sw.Close(); err != nil {
				t.Errorf("closing switch: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatalf("switch: %v", err)
	}
	ln, err := sw.AddNode("brex", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	// A UDP packet from dnsmasq leaves the switch with its checksum left
	// to the NIC (veths never fill it in); the userspace datapath copies
	// the frame from eth0 into br-ex's tap as it is, and NetworkManager's
	// DHCP client drops the offer for its bad checksum. A real NIC
	// computes it: so do the switch's ports here.
	for _, dev := range []string{labnet.BridgeName, ln.Peers[0]} {
		if err := txChecksumOff(sw.NS, dev); err != nil {
			t.Fatalf("switch %s: turning tx checksum offload off: %v", dev, err)
		}
	}
	o := ovsrun.ForTest(t, ln.NS.Path)
	dir := t.TempDir()
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: ln.NS.Path, Dir: filepath.Join(dir, "nm"), OVS: o.Dir})
	t.Cleanup(func() {
		in.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(in.Log); err == nil {
				t.Logf("NetworkManager log:\n%s", b)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := nm.Open(context.Background(), nm.Options{NetNS: ln.NS.Path, Bus: in.Bus, OVSDB: o.Address, OVSDatapath: "netdev",
		OnTouchUp: func(p *nmstate.Plan) { t.Logf("kernel touch-up after NetworkManager:\n%s", p) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &brExNode{sw: sw, node: ln, ovs: o, nm: in, b: b, stateDir: filepath.Join(dir, "state")}
}

// txChecksumOff turns transmit checksum offload off on dev in ns
// (SIOCETHTOOL ETHTOOL_STXCSUM 0).
func txChecksumOff(ns *labnet.NS, dev string) error {
	const ethtoolSTXCSUM = 0x17
	val := [2]uint32{ethtoolSTXCSUM, 0}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data uintptr
		_    [16]byte
	}
	copy(ifr.name[:], dev)
	ifr.data = uintptr(unsafe.Pointer(&val[0]))
	err := ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
			return e
		}
		return nil
	})
	runtime.KeepAlive(&val)
	return err
}

// lease is what identifies a DHCPv4 lease: the address dnsmasq gave, and
// the client it gave it to (MAC and client-id).
type lease struct {
	iface    string
	addr     netip.Addr
	hwaddr   string
	clientID string
}

func (l lease) String() string {
	return fmt.Sprintf("%s on %s (mac %s, client-id %s)", l.addr, l.iface, l.hwaddr, l.clientID)
}

// leaseOn waits until iface holds exactly one dynamic IPv4 address with
// the only default route through the switch, and returns it with
// dnsmasq's record of it.
func (n *brExNode) leaseOn(t *testing.T, iface string) lease {
	t.Helper()
	ctx := context.Background()
	var last error
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		var got lease
		got, last = func() (lease, error) {
			s, err := n.b.Show(ctx)
			if err != nil {
				return lease{}, err
			}
			var addrs []nmstate.Address
			for _, ifc := range s.Find(iface) {
				if ifc.Type != nmstate.TypeOVSBridge && ifc.IPv4 != nil {
					addrs = ifc.IPv4.Address
				}
			}
			if len(addrs) != 1 || addrs[0].ValidLifetime == nil || *addrs[0].ValidLifetime == "forever" {
				return lease{}, fmt.Errorf("%s has IPv4 %+v, want one DHCP address", iface, addrs)
			}
			gw, ok := probe.DefaultGateway(s)
			if !ok || gw.Iface != iface || gw.Addr != netip.MustParseAddr("192.0.2.1") {
				return lease{}, fmt.Errorf("default gateway %+v, want 192.0.2.1 on %s", gw, iface)
			}
			recs, err := n.sw.Leases()
			if err != nil {
				return lease{}, err
			}
			for _, r := range recs {
				if r.Addr == addrs[0].IP {
					return lease{iface: iface, addr: r.Addr, hwaddr: strings.ToLower(r.HWAddr), clientID: r.ClientID}, nil
				}
			}
			return lease{}, fmt.Errorf("dnsmasq has no lease of %s: %+v", addrs[0].IP, recs)
		}()
		if last == nil {
			return got
		}
	}
	t.Fatalf("waiting for a lease on %s: %v", iface, last)
	return lease{}
}

// sameClient says whether two leases are the same address given to the
// same client: dnsmasq keys a lease by the client-id when one is sent
// (NetworkManager sends "01" and the MAC), by the MAC otherwise. The MAC
// dnsmasq last saw is not compared: on the userspace datapath br-ex's
// tap may still carry its first MAC when the client starts (its MAC is
// checked on the link).
func sameClient(a, b lease) bool {
	if a.clientID == "*" || b.clientID == "*" {
		return a.addr == b.addr && a.hwaddr == b.hwaddr
	}
	return a.addr == b.addr && a.clientID == b.clientID
}

// applyProbed is the handler's transaction at the backend: apply without
// commit, ping the default gateway, commit when it answers, roll back
// through the checkpoint when it does not.
func (n *brExNode) applyProbed(t *testing.T, desired string) error {
	t.Helper()
	ctx := context.Background()
	if _, err := apply.Apply(ctx, n.b, decode(t, desired), apply.Options{StateDir: n.stateDir, NoCommit: true, VerifyInterval: 200 * time.Millisecond, Timeout: 120 * time.Second}); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	// As the handler's ping probe: the gateway of each attempt's state
	// (a DHCP lease may still be on its way).
	var gw probe.Gateway
	perr := probe.Poll(ctx, 20*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		s, err := n.b.Show(ctx)
		if err != nil {
			return err
		}
		var ok bool
		if gw, ok = probe.DefaultGateway(s); !ok {
			return fmt.Errorf("no default gateway")
		}
		return probe.Ping(ctx, n.node.NS.Path, gw.Addr, gw.Iface)
	})
	if perr == nil {
		if _, err := apply.CommitBackend(ctx, n.b, n.stateDir); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	if _, err := apply.Rollback(ctx, n.b, n.stateDir); err != nil {
		t.Fatalf("probe failed (%v), rollback failed: %v", perr, err)
	}
	return fmt.Errorf("probe ping %s: %w", gw.Addr, perr)
}

func (n *brExNode) vsctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ovs-vsctl", append([]string{"--db=" + n.ovs.Address, "--timeout=10"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-vsctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// eth0DHCP is the node's primary NIC as the lab leaves it: DHCPv4.
const eth0DHCP = `
interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: true, dhcp: true}
  ipv6: {enabled: false}
`

// brExMove is OpenShift's configure-ovs through NetworkManager: eth0 under
// OVS bridge br-ex, whose internal interface br-ex takes eth0's MAC and,
// from DHCP, its address and the default route.
const brExMove = `
interfaces:
- name: br-ex
  type: ovs-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth0
    - name: br-ex
- name: br-ex
  type: ovs-interface
  state: up
  copy-mac-from: eth0
  ipv4: {enabled: true, dhcp: true}
  ipv6: {enabled: false}
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
`

// TestPrimaryNICBrExKeepsLease: eth0's DHCP lease moves to br-ex (the same
// address for the same client: MAC and client-id), with the default
// route; OVSDB has br-ex with ports eth0 and br-ex (internal) made by
// NetworkManager; the state verifies and plans nothing more (fixed
// point); and the reverse move gives eth0 the same lease back.
func TestPrimaryNICBrExKeepsLease(t *testing.T) {
	n := newBrExNode(t)
	if err := n.applyProbed(t, eth0DHCP); err != nil {
		t.Fatal(err)
	}
	before := n.leaseOn(t, "eth0")
	t.Logf("before: %s", before)
	if err := n.applyProbed(t, brExMove); err != nil {
		t.Fatal(err)
	}
	moved := n.leaseOn(t, "br-ex")
	t.Logf("moved: %s", moved)
	if !sameClient(before, moved) {
		t.Errorf("br-ex has lease %s, want eth0's %s", moved, before)
	}
	eth0, err := n.node.NS.Netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		brex, err := n.node.NS.Netlink.LinkByName("br-ex")
		if err != nil {
			t.Fatal(err)
		}
		if got = brex.Attrs().HardwareAddr.String(); got == eth0.Attrs().HardwareAddr.String() {
			break
		}
	}
	if want := eth0.Attrs().HardwareAddr.String(); got != want {
		t.Errorf("br-ex MAC %s, want eth0's %s (copy-mac-from)", got, want)
	}
	if ports := strings.Fields(n.vsctl(t, "list-ports", "br-ex")); len(ports) != 1 || ports[0] != "eth0" {
		t.Errorf("br-ex ports (besides its local one) %v, want [eth0]", ports)
	}
	if typ := n.vsctl(t, "get", "Interface", "br-ex", "type"); typ != "internal" {
		t.Errorf("Interface br-ex type %s, want internal", typ)
	}
	if dp := n.vsctl(t, "get", "Bridge", "br-ex", "datapath_type"); dp != "netdev" {
		t.Errorf("br-ex datapath_type %s, want netdev", dp)
	}
	ctx := context.Background()
	cur, err := n.b.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := nmstate.Verify(decode(t, brExMove), cur); err != nil {
		t.Errorf("after the move: %v", err)
	}
	if m, err := nmstate.Merge(decode(t, brExMove), cur); err != nil {
		t.Errorf("merging again: %v", err)
	} else if p, err := nmstate.PlanChanges(m); err != nil || !p.Empty() {
		t.Errorf("planning again: %v\n%s", err, p)
	}
	for _, ifc := range cur.Interfaces {
		if ifc.OVSDB != nil {
			for k := range ifc.OVSDB.ExternalIDs {
				if strings.HasPrefix(k, "NM.") {
					t.Errorf("%s (%s) reports NetworkManager's external id %s", ifc.Name, ifc.Type, k)
				}
			}
		}
	}

	if err := n.applyProbed(t, `
interfaces:
- {name: br-ex, type: ovs-bridge, state: absent}
- {name: br-ex, type: ovs-interface, state: absent}
- {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}, ipv6: {enabled: false}}
`); err != nil {
		t.Fatal(err)
	}
	back := n.leaseOn(t, "eth0")
	if !sameClient(before, back) {
		t.Errorf("eth0 after the reverse move: %s, want %s", back, before)
	}
	if br := n.vsctl(t, "list-br"); br != "" {
		t.Errorf("OVS bridges left: %q", br)
	}
}

// TestPrimaryNICBrExBrokenGatewayRollsBack: the br-ex move with eth0's
// address written statically on br-ex and the default route through an
// address nobody answers: the gateway probe fails, NetworkManager's
// checkpoint rolls back, and eth0 is as before: its profile active, the
// same lease (address, MAC, client-id), the default route, no OVS bridge.
func TestPrimaryNICBrExBrokenGatewayRollsBack(t *testing.T) {
	n := newBrExNode(t)
	if err := n.applyProbed(t, eth0DHCP); err != nil {
		t.Fatal(err)
	}
	before := n.leaseOn(t, "eth0")
	ctx := context.Background()
	conn := func() string {
		out, err := nmrun.Nmcli(ctx, n.nm.Bus, "-g", "GENERAL.CONNECTION", "device", "show", "eth0")
		if err != nil {
			t.Fatalf("nmcli: %v: %s", err, out)
		}
		return strings.TrimSpace(out)
	}
	profileBefore := conn()
	err := n.applyProbed(t, fmt.Sprintf(`
interfaces:
- name: br-ex
  type: ovs-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth0
    - name: br-ex
- name: br-ex
  type: ovs-interface
  state: up
  copy-mac-from: eth0
  ipv4:
    enabled: true
    dhcp: false
    address: [{ip: %s, prefix-length: 24}]
  ipv6: {enabled: false}
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: br-ex}
`, before.addr))
	if err == nil || !strings.Contains(err.Error(), "probe ping 192.0.2.254") {
		t.Fatalf("apply with a dead gateway: %v, want the ping probe to fail", err)
	}
	after := n.leaseOn(t, "eth0")
	if !sameClient(before, after) {
		t.Errorf("eth0 after the rollback: %s, want %s", after, before)
	}
	if p := conn(); p != profileBefore {
		t.Errorf("eth0's profile after the rollback %q, want %q", p, profileBefore)
	}
	if br := n.vsctl(t, "list-br"); br != "" {
		t.Errorf("OVS bridges left after the rollback: %q", br)
	}
	if cps, err := nmrun.Checkpoints(n.nm.Bus); err != nil || cps != 0 {
		t.Errorf("NetworkManager checkpoints after the rollback: %d (%v)", cps, err)
	}
}

// ovsEnv is a namespace with eth1 and eth2 (veths to a peer) whose
// NetworkManager drives a private Open vSwitch.
func ovsEnv(t *testing.T) (*nm.Backend, *ovsrun.OVS, *nmrun.Instance, string) {
	t.Helper()
	ns, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "sw1")
	nstest.Veth(t, ns, "eth2", peer, "sw2")
	o := ovsrun.ForTest(t, ns.Path)
	dir := t.TempDir()
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: ns.Path, Dir: filepath.Join(dir, "nm"), OVS: o.Dir})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	b, err := nm.Open(context.Background(), nm.Options{NetNS: ns.Path, Bus: in.Bus, OVSDB: o.Address, OVSDatapath: "netdev"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, o, in, filepath.Join(dir, "state")
}

// TestOVSDBAndOVNThroughNetworkManager: ovs-db and a description on a bridge, a system
// port, an internal interface and a bond (LACP, delays) become
// NetworkManager's ovs-external-ids / ovs-other-config, which it writes
// to OVSDB (ovs-vsctl reads them back); the Open_vSwitch table (ovs-db
// and ovn bridge-mappings) is written directly; the state verifies and
// the backend reports none of NetworkManager's own external ids; then
// the bridges and the mapping go again.
func TestOVSDBAndOVNThroughNetworkManager(t *testing.T) {
	b, o, _, stateDir := ovsEnv(t)
	ctx := context.Background()
	vsctl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ovs-vsctl", append([]string{"--db=" + o.Address, "--timeout=10"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	desired := `
interfaces:
- name: br1
  type: ovs-bridge
  state: up
  description: ovs bridge with eth1 as a port
  ovs-db:
    external_ids: {owner: knmstate-test}
  bridge:
    port:
    - name: eth1
    - name: ovs1
      vlan: {mode: access, tag: 10}
- name: ovs1
  type: ovs-interface
  state: up
  ovs-db:
    other_config: {emc-insert-inv-prob: "90"}
  ipv4: {enabled: true, address: [{ip: 198.51.100.7, prefix-length: 24}]}
- name: eth1
  type: ethernet
  state: up
  ovs-db:
    external_ids: {role: uplink}
- name: br2
  type: ovs-bridge
  state: up
  bridge:
    port:
    - name: bond2
      link-aggregation:
        mode: balance-slb
        bond-updelay: 100
        bond-downdelay: 200
        port: [{name: eth2}]
ovs-db:
  external_ids: {hostname: node1}
ovn:
  bridge-mappings:
  - {localnet: physnet1, bridge: br1}
`
	if _, err := apply.Apply(ctx, b, decode(t, desired), apply.Options{StateDir: stateDir, VerifyInterval: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "Bridge", "br1", "external_ids:owner"}, `knmstate-test`},
		// The description has no kernel link: the Bridge row holds it.
		{[]string{"get", "Bridge", "br1", "external_ids:knmstate-description"}, `ovs bridge with eth1 as a port`},
		{[]string{"get", "Interface", "eth1", "external_ids:role"}, "uplink"},
		{[]string{"get", "Interface", "ovs1", "other_config:emc-insert-inv-prob"}, `"90"`},
		{[]string{"get", "Port", "ovs1", "tag"}, "10"},
		{[]string{"get", "Port", "bond2", "bond_mode"}, "balance-slb"},
		{[]string{"get", "Port", "bond2", "bond_updelay"}, "100"},
		{[]string{"get", "Port", "bond2", "bond_downdelay"}, "200"},
		{[]string{"get", "Open_vSwitch", ".", "external_ids:ovn-bridge-mappings"}, `"physnet1:br1"`},
		{[]string{"get", "Open_vSwitch", ".", "external_ids:hostname"}, "node1"},
	} {
		if got := strings.Trim(vsctl(c.args...), `"`); got != strings.Trim(c.want, `"`) {
			t.Errorf("ovs-vsctl %s = %s, want %s", strings.Join(c.args, " "), got, c.want)
		}
	}
	cur, err := b.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range cur.Interfaces {
		if ifc.OVSDB != nil {
			for k := range ifc.OVSDB.ExternalIDs {
				if strings.HasPrefix(k, "NM.") {
					t.Errorf("%s (%s) reports NetworkManager's external id %s", ifc.Name, ifc.Type, k)
				}
			}
		}
	}
	if m, err := nmstate.Merge(decode(t, desired), cur); err != nil {
		t.Errorf("merging again: %v", err)
	} else if p, err := nmstate.PlanChanges(m); err != nil || !p.Empty() {
		t.Errorf("planning again: %v\n%s", err, p)
	}
	if _, err := apply.Apply(ctx, b, decode(t, `
interfaces:
- {name: br1, type: ovs-bridge, state: absent}
- {name: ovs1, type: ovs-interface, state: absent}
- {name: br2, type: ovs-bridge, state: absent}
ovn:
  bridge-mappings:
  - {localnet: physnet1, state: absent}
`), apply.Options{StateDir: stateDir, VerifyInterval: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if br := vsctl("list-br"); br != "" {
		t.Errorf("bridges left: %q", br)
	}
	if m := vsctl("get", "Open_vSwitch", ".", "external_ids"); strings.Contains(m, "ovn-bridge-mappings") {
		t.Errorf("Open_vSwitch external_ids %s, want the mapping gone", m)
	}
}

// TestOVSApplyAgainReappliesBridge: applying an OVS state a second time
// (a policy re-enacted) verifies again and leaves the bridge and its
// ports active as they were (reapplied, not activated again: that would
// tear down the ports and their interfaces).
func TestOVSApplyAgainReappliesBridge(t *testing.T) {
	b, _, in, stateDir := ovsEnv(t)
	ctx := context.Background()
	desired := `
interfaces:
- name: br1
  type: ovs-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth1
    - name: ovs1
- name: ovs1
  type: ovs-interface
  state: up
  ipv4: {enabled: true, address: [{ip: 198.51.100.7, prefix-length: 24}]}
`
	active := func() string {
		t.Helper()
		out, err := nmrun.Nmcli(ctx, in.Bus, "-g", "NAME,TYPE,DEVICE", "connection", "show", "--active")
		if err != nil {
			t.Fatalf("nmcli: %v: %s", err, out)
		}
		// The active connection objects: a profile activated again gets
		// a new one.
		acs, err := nmrun.Nmcli(ctx, in.Bus, "-g", "GENERAL.NAME,GENERAL.DBUS-PATH", "connection", "show", "--active", "br1-br")
		if err != nil {
			t.Fatalf("nmcli: %v: %s", err, acs)
		}
		return sortLines(out) + acs
	}
	for i := 0; i < 2; i++ {
		if _, err := apply.Apply(ctx, b, decode(t, desired), apply.Options{StateDir: stateDir, VerifyInterval: 200 * time.Millisecond}); err != nil {
			t.Fatalf("apply %d: %v", i+1, err)
		}
		if i == 0 {
			before := active()
			t.Logf("active after the first apply:\n%s", before)
			defer func() {
				if after := active(); after != before {
					t.Errorf("active profiles after the second apply:\n%s\nwant as after the first:\n%s", after, before)
				}
			}()
		}
	}
}

// TestOVSRefusedWithoutOVSDB: on a node without an OVS database the
// backend refuses an OVS state before any change, saying so (what an
// enactment on such a node shows), before any refusal of a profile's
// (the description examples/ovs-bridge.yaml gives its bridge).
func TestOVSRefusedWithoutOVSDB(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, false)
	before := e.snapshot(t)
	_, err := apply.Apply(context.Background(), b, decode(t, `
interfaces:
- name: br1
  type: ovs-bridge
  state: up
  description: ovs bridge with eth1 as a port
  bridge: {port: [{name: eth1}]}
`), apply.Options{StateDir: e.stateDir})
	if err == nil || !strings.Contains(err.Error(), "the NetworkManager backend has no Open vSwitch database for this node") {
		t.Fatalf("apply: %v, want the refusal", err)
	}
	if after := e.snapshot(t); after != before {
		t.Errorf("the refused apply changed the node:\n%s\nwant\n%s", after, before)
	}
}
