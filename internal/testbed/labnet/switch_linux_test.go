package labnet

import (
	"context"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite golden files")

// newTestSwitch starts a switch whose removal is registered before it
// exists, so a failing test still cleans up.
func newTestSwitch(t *testing.T, opts Options) *Switch {
	t.Helper()
	var sw *Switch
	t.Cleanup(func() {
		if sw == nil {
			return
		}
		if t.Failed() {
			if b, err := os.ReadFile(sw.LogPath()); err == nil {
				t.Logf("dnsmasq log:\n%s", b)
			}
		}
		if err := sw.Close(); err != nil {
			t.Errorf("closing switch: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	sw, err = NewSwitch(ctx, opts)
	if err != nil {
		t.Fatalf("NewSwitch: %v", err)
	}
	return sw
}

func TestDnsmasqConfigGolden(t *testing.T) {
	o, err := Options{DnsmasqExtra: []string{"dhcp-option=option:classless-static-route,198.51.100.0/24,192.0.2.1"},
		Records: map[string]netip.Addr{"api.lab.example": netip.MustParseAddr("192.0.2.10")},
		VLANs:   []VLAN{{ID: 102, Gateway4: netip.MustParsePrefix("10.102.0.1/24")}}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c := dnsmasqConfig{Bridge: BridgeName, Dir: "/DIR", Gateway4: o.Gateway4, Gateway6: o.Gateway6,
		Range4: o.Range4, Range6: o.Range6, Lease: o.LeaseTime, Domain: o.Domain, Records: o.Records, Extra: o.DnsmasqExtra, VLANs: o.VLANs}
	got := c.render()
	golden := filepath.Join("testdata", "dnsmasq.conf")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden (run with -update to create): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("dnsmasq.conf (-want +got):\n%s", diff)
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"short lease", Options{LeaseTime: time.Minute}, "leaseTime: 1m0s is below dnsmasq's minimum of 2m"},
		{"vlan id", Options{VLANs: []VLAN{{ID: 4095, Gateway4: netip.MustParsePrefix("10.1.0.1/24")}}}, "vlans[0]: id 4095 is out of 1..4094 or repeated"},
		{"vlan overlaps", Options{VLANs: []VLAN{{ID: 5, Gateway4: netip.MustParsePrefix("192.0.2.129/25")}}}, "vlans[0]: gateway4 192.0.2.129/25 is not an IPv4 prefix of /24 or shorter apart from 192.0.2.0/24"},
		{"v4 range outside", Options{Range4: [2]netip.Addr{netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.9")}}, "range4[0]: 198.51.100.1 is outside 192.0.2.0/24"},
		{"v6 gateway is v4", Options{Gateway6: netip.MustParsePrefix("192.0.2.1/24")}, "gateway6: 192.0.2.1/24 is not an IPv6 prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.o.withDefaults()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLeases(t *testing.T) {
	in := "1700000120 52:54:00:12:34:56 192.0.2.150 node1 01:52:54:00:12:34:56\n" +
		"duid 00:01:00:01:2c:00:00:00:aa:bb:cc:dd:ee:ff\n" +
		"1700000120 1234 2001:db8::150 * 00:03:00:01:52:54:00:12:34:56\n"
	recs, err := parseLeases(bufioScanner(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []LeaseRecord{
		{Expiry: time.Unix(1700000120, 0), HWAddr: "52:54:00:12:34:56", Addr: netip.MustParseAddr("192.0.2.150"), Hostname: "node1", ClientID: "01:52:54:00:12:34:56"},
		{Expiry: time.Unix(1700000120, 0), HWAddr: "1234", Addr: netip.MustParseAddr("2001:db8::150"), Hostname: "*", ClientID: "00:03:00:01:52:54:00:12:34:56"},
	}
	if diff := cmp.Diff(want, recs, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("leases (-want +got):\n%s", diff)
	}
	if _, err := parseLeases(bufioScanner("garbage\n")); err == nil || !strings.Contains(err.Error(), "leases line 1") {
		t.Errorf("garbage: error %v, want one naming line 1", err)
	}
}

func TestSwitchAndNode(t *testing.T) {
	sw := newTestSwitch(t, Options{})
	node, err := sw.AddNode("node1", "eth0", "eth1", "eth2")
	if err != nil {
		t.Fatalf("AddNode: %v", err)
	}
	for i, nic := range node.NICs {
		l, err := node.NS.Netlink.LinkByName(nic)
		if err != nil {
			t.Fatalf("node %s: %v", nic, err)
		}
		if l.Type() != "veth" || l.Attrs().Flags&unix.IFF_UP == 0 {
			t.Errorf("node %s: type %s flags %v, want veth up", nic, l.Type(), l.Attrs().Flags)
		}
		p, err := sw.NS.Netlink.LinkByName(node.Peers[i])
		if err != nil {
			t.Fatalf("switch %s: %v", node.Peers[i], err)
		}
		br, err := sw.NS.Netlink.LinkByName(BridgeName)
		if err != nil {
			t.Fatal(err)
		}
		if p.Attrs().MasterIndex != br.Attrs().Index {
			t.Errorf("switch %s: master %d, want %s (%d)", node.Peers[i], p.Attrs().MasterIndex, BridgeName, br.Attrs().Index)
		}
		// The node's NICs carry no address: configuring them is not ours.
		addrs, err := node.NS.Netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		if len(addrs) != 0 {
			t.Errorf("node %s: IPv4 addresses %v, want none", nic, addrs)
		}
	}
	b, err := os.ReadFile(node.ResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	if want := "nameserver 192.0.2.1\nnameserver 2001:db8::1\nsearch lab.example\n"; !strings.HasSuffix(string(b), want) {
		t.Errorf("resolv.conf = %q, want suffix %q", b, want)
	}
	// dnsmasq runs in the switch namespace: its network namespace is not ours.
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.Readlink("/proc/" + itoa(sw.dnsmasq.Process.Pid) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if theirs == self {
		t.Errorf("dnsmasq runs in the test's own network namespace %s", self)
	}
}

func TestCloseRemovesEverything(t *testing.T) {
	sw := newTestSwitch(t, Options{})
	node, err := sw.AddNode("node1", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	pid := sw.dnsmasq.Process.Pid
	paths := []string{sw.NS.Path, node.NS.Path, sw.Dir}
	if err := sw.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists after Close (stat error %v)", p, err)
		}
	}
	if err := unix.Kill(pid, 0); err == nil {
		t.Errorf("dnsmasq pid %d still alive after Close", pid)
	}
	if err := sw.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestRemoveNodeThenAddAgain: a removed node's NICs (both ends),
// namespace and mounts are gone, even while something still holds its
// namespace; adding it again gives a new namespace with fresh NICs.
func TestRemoveNodeThenAddAgain(t *testing.T) {
	sw := newTestSwitch(t, Options{NodeNamespaces: true})
	node, err := sw.AddNode("node1", "eth0", "eth1")
	if err != nil {
		t.Fatal(err)
	}
	var before unix.Stat_t
	if err := unix.Stat(node.NS.Path, &before); err != nil {
		t.Fatal(err)
	}
	// A process of the node keeps its namespace alive: its NICs must go
	// anyway.
	held, err := os.Open(node.NS.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	peers := node.Peers
	if err := sw.RemoveNode("node1"); err != nil {
		t.Fatalf("RemoveNode: %v", err)
	}
	for _, p := range peers {
		if _, err := sw.NS.Netlink.LinkByName(p); err == nil {
			t.Errorf("switch port %s still exists", p)
		}
	}
	if _, err := os.Stat(node.NS.Path); !os.IsNotExist(err) {
		t.Errorf("namespace file %s still exists (stat error %v)", node.NS.Path, err)
	}
	if err := sw.RemoveNode("node1"); err == nil {
		t.Error("removing a removed node succeeded")
	}
	again, err := sw.AddNode("node1", "eth0", "eth1")
	if err != nil {
		t.Fatalf("AddNode again: %v", err)
	}
	var after unix.Stat_t
	if err := unix.Stat(again.NS.Path, &after); err != nil {
		t.Fatal(err)
	}
	if after.Ino == before.Ino {
		t.Error("the node came back in the same namespace")
	}
	for _, nic := range again.NICs {
		l, err := again.NS.Netlink.LinkByName(nic)
		if err != nil {
			t.Fatal(err)
		}
		addrs, err := again.NS.Netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil || len(addrs) != 0 {
			t.Errorf("%s of the new namespace has addresses %v (%v)", nic, addrs, err)
		}
	}
	if _, err := os.Stat(again.ResolvConf); err != nil {
		t.Errorf("resolv.conf of the new node: %v", err)
	}
}

// TestSwitchCables: with Options.Cables the first NICs are the given links,
// moved and renamed (the node's end becomes the NIC, the other end the
// bridge port facing it); when the cables run out AddNode makes veths.
// Veth pairs stand in for a virtual machine's NICs here.
func TestSwitchCables(t *testing.T) {
	origin, err := newNS("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = origin.close() })
	cables := []Cable{{Node: "c0n", Switch: "c0s"}, {Node: "c1n", Switch: "c1s"}}
	// Moved links keep their MAC (their index may change).
	mac := map[string]string{}
	for _, c := range cables {
		if err := origin.Netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: c.Node}, PeerName: c.Switch}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{c.Node, c.Switch} {
			l, err := origin.Netlink.LinkByName(name)
			if err != nil {
				t.Fatal(err)
			}
			mac[name] = l.Attrs().HardwareAddr.String()
		}
	}
	// The switch takes the cables from the namespace it is made in.
	var sw *Switch
	if err := origin.Do(func() error {
		sw = newTestSwitch(t, Options{Cables: cables})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	node, err := sw.AddNode("node1", "eth0", "eth1", "eth2")
	if err != nil {
		t.Fatalf("AddNode: %v", err)
	}
	for i, want := range []struct{ nic, peer string }{{"c0n", "c0s"}, {"c1n", "c1s"}, {"", ""}} {
		l, err := node.NS.Netlink.LinkByName(node.NICs[i])
		if err != nil {
			t.Fatalf("node %s: %v", node.NICs[i], err)
		}
		p, err := sw.NS.Netlink.LinkByName(node.Peers[i])
		if err != nil {
			t.Fatalf("switch %s: %v", node.Peers[i], err)
		}
		if want.nic == "" {
			if peer, err := node.NS.Netlink.LinkByName(node.NICs[i]); err != nil || peer.Type() != "veth" {
				t.Errorf("node %s: %v, want a new veth", node.NICs[i], err)
			}
			continue
		}
		if got := l.Attrs().HardwareAddr.String(); got != mac[want.nic] {
			t.Errorf("node %s has MAC %s, want cable end %s's %s", node.NICs[i], got, want.nic, mac[want.nic])
		}
		if got := p.Attrs().HardwareAddr.String(); got != mac[want.peer] {
			t.Errorf("switch %s has MAC %s, want cable end %s's %s", node.Peers[i], got, want.peer, mac[want.peer])
		}
		if l.Attrs().Flags&unix.IFF_UP == 0 || p.Attrs().MasterIndex == 0 {
			t.Errorf("node %s up %v, switch %s master %d: want up and a bridge port", node.NICs[i], l.Attrs().Flags&unix.IFF_UP != 0, node.Peers[i], p.Attrs().MasterIndex)
		}
	}
	left, err := origin.Netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		if l.Attrs().Name != "lo" {
			t.Errorf("%s left in the cables' namespace", l.Attrs().Name)
		}
	}

	// Removing the node (a reboot) gives the cables back, reset: the
	// node made again takes the same ones.
	eth0, err := node.NS.Netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if err := node.NS.Netlink.LinkSetMTU(eth0, 1400); err != nil {
		t.Fatal(err)
	}
	if err := sw.RemoveNode("node1"); err != nil {
		t.Fatalf("RemoveNode: %v", err)
	}
	for _, c := range cables {
		for _, name := range []string{c.Node, c.Switch} {
			l, err := origin.Netlink.LinkByName(name)
			if err != nil {
				t.Fatalf("after RemoveNode: %s is not back: %v", name, err)
			}
			if a := l.Attrs(); a.MTU != 1500 || a.MasterIndex != 0 || a.Flags&unix.IFF_UP != 0 {
				t.Errorf("after RemoveNode: %s MTU %d, master %d, up %v; want 1500, none, down", name, a.MTU, a.MasterIndex, a.Flags&unix.IFF_UP != 0)
			}
		}
	}
	again, err := sw.AddNode("node1", "eth0", "eth1", "eth2")
	if err != nil {
		t.Fatalf("AddNode after RemoveNode: %v", err)
	}
	for i, want := range []string{"c0n", "c1n"} {
		l, err := again.NS.Netlink.LinkByName(again.NICs[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Attrs().HardwareAddr.String(); got != mac[want] {
			t.Errorf("made again: %s has MAC %s, want cable end %s's %s", again.NICs[i], got, want, mac[want])
		}
	}
}
