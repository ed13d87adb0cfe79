package lab

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// brExOverEth0 is OpenShift's br-ex for a lab node: eth0 (DHCP before)
// becomes br-ex's port, br-ex's internal interface takes eth0's MAC and
// its addresses by DHCP and autoconf, as eth0 had them.
const brExOverEth0 = `interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
- name: br-ex
  type: ovs-bridge
  state: up
  bridge:
    options: {mcast-snooping-enable: true}
    port: [{name: eth0}, {name: br-ex}]
- name: br-ex
  type: ovs-interface
  state: up
  copy-mac-from: eth0
  ipv4: {enabled: true, dhcp: true, auto-route-metric: 48}
  ipv6: {enabled: true, dhcp: true, autoconf: true}
`

// brExCutOff is br-ex with a static address in a subnet nobody routes.
const brExCutOff = `interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
- name: br-ex
  type: ovs-bridge
  state: up
  bridge:
    port: [{name: eth0}, {name: br-ex}]
- name: br-ex
  type: ovs-interface
  state: up
  copy-mac-from: eth0
  ipv4:
    enabled: true
    address: [{ip: 10.99.0.5, prefix-length: 24}]
  ipv6: {enabled: false}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 10.99.0.1, next-hop-interface: br-ex}
`

// runErr runs knmstate and returns its combined output and error.
func runErr(args ...string) (string, error) {
	out, err := exec.Command(knmstate, args...).CombinedOutput()
	return string(out), err
}

// TestLabFirstBootBrEx: OpenShift's first boot on a lab worker with its own
// userspace Open vSwitch. The node's file is chosen by the node's own host
// name (its UTS namespace); eth0 becomes br-ex's port; br-ex has eth0's MAC,
// its address and the default route; the API server stays reachable from
// the node, and the handler reports br-ex in the NodeNetworkState; a second
// run changes nothing. Before that, a file that cuts the node off is rolled
// back: non-zero exit, no flag, eth0 and the API as before.
func TestLabFirstBootBrEx(t *testing.T) {
	name, dir := testLab(t, "fboot")
	run(t, "lab", "up", "--name", name, "--dir", dir, "--nodes", "2")
	st, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	node, err := st.Node("node02")
	if err != nil {
		t.Fatal(err)
	}
	if node.OVSDB == "" {
		t.Fatal("the lab's nodes have no Open vSwitch (Debian's openvswitch-switch is part of make setup)")
	}
	eth0MAC := linkMAC(t, node.NetNS, "eth0")
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "node02.yml"), []byte(brExOverEth0), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "cluster.yml"), []byte("interfaces: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	api, err := url.Parse(st.APIServer)
	if err != nil {
		t.Fatal(err)
	}
	firstBoot := []string{"nmstatectl", "--netns", node.NetNS, "--resolv-conf", node.ResolvConf, "--uts-ns", node.UTSNS,
		"--ovsdb", node.OVSDB, "--ovs-datapath", "netdev", "--state-dir", node.RuntimeStateDir,
		"first-boot", "--source-dir", src, "--probe-dns-host", apiHost, "--probe-tcp", apiHost + ":" + api.Port(), "--probe-timeout", "10s"}

	// A file that cuts the node off (br-ex with an address nobody
	// routes): rolled back, non-zero exit, no flag, eth0 as before, the
	// API still reachable.
	if err := os.WriteFile(filepath.Join(src, "node02.yml"), []byte(brExCutOff), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := runErr(firstBoot...)
	t.Logf("failing first boot took %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	if err == nil || !strings.Contains(out, "rolled back checkpoint") || !strings.Contains(out, "no flag written") {
		t.Errorf("a cut-off file: %v, want a non-zero exit saying it rolled back and wrote no flag", err)
	}
	if _, err := os.Stat(filepath.Join(src, "applied")); !os.IsNotExist(err) {
		t.Errorf("applied record after a failed first boot (%v)", err)
	}
	waitFor(t, time.Minute, func() string { return addrMissing(node.NetNS, "eth0", node.Address+"/24") })
	if local, err := dialFrom(node.NetNS, api.Host); err != nil || local != node.Address {
		t.Errorf("API server from node02 after the rollback: local %q, %v", local, err)
	}

	if err := os.WriteFile(filepath.Join(src, "node02.yml"), []byte(brExOverEth0), 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	out = run(t, firstBoot...)
	t.Logf("first boot took %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	if !strings.Contains(out, "probes=\"[ping dns tcp]\"") {
		t.Errorf("first boot did not guard with the ping, dns and tcp probes:\n%s", out)
	}
	if !strings.Contains(out, "node02.yml") {
		t.Errorf("first boot did not pick node02.yml by the node's host name:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(src, "applied"))
	if err != nil || string(b) != brExOverEth0 {
		t.Errorf("applied record %q, %v", b, err)
	}
	waitFor(t, time.Minute, func() string {
		return addrMissing(node.NetNS, "br-ex", node.Address+"/24")
	})
	if got := linkMAC(t, node.NetNS, "br-ex"); got != eth0MAC {
		t.Errorf("br-ex MAC %s, eth0's %s", got, eth0MAC)
	}
	if msg := defaultRouteMissing(node.NetNS, "br-ex"); msg != "" {
		t.Error(msg)
	}
	local, err := dialFrom(node.NetNS, api.Host)
	if err != nil || local != node.Address {
		t.Errorf("API server %s from node02: local address %q, %v; want %s through br-ex", api.Host, local, err, node.Address)
	}
	// The handler, still running, sees eth0 under br-ex.
	dyn, err := dynamicFor(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, func() string {
		nns, err := dyn.Resource(nnsResource).Get(context.Background(), "node02", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		ifaces, _, _ := unstructured.NestedSlice(nns.Object, "status", "currentState", "interfaces")
		for _, i := range ifaces {
			m, _ := i.(map[string]any)
			if m["name"] == "eth0" && m["controller"] == "br-ex" {
				return ""
			}
		}
		return "NodeNetworkState of node02 does not show eth0 under br-ex"
	})

	out = run(t, firstBoot...)
	if !strings.Contains(out, "already applied, nothing to do") {
		t.Errorf("second first boot did something:\n%s", out)
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func nodeNetlink(nsName string) (*netlink.Handle, func(), error) {
	h, err := netns.GetFromName(nsName)
	if err != nil {
		return nil, nil, err
	}
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
	if err != nil {
		h.Close()
		return nil, nil, err
	}
	return nl, func() { nl.Close(); h.Close() }, nil
}

func linkMAC(t *testing.T, nsName, ifname string) string {
	t.Helper()
	nl, done, err := nodeNetlink(nsName)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	l, err := nl.LinkByName(ifname)
	if err != nil {
		t.Fatalf("%s: %v", ifname, err)
	}
	return l.Attrs().HardwareAddr.String()
}

// addrMissing says why ifname lacks addr ("" when it has it).
func addrMissing(nsName, ifname, addr string) string {
	nl, done, err := nodeNetlink(nsName)
	if err != nil {
		return err.Error()
	}
	defer done()
	l, err := nl.LinkByName(ifname)
	if err != nil {
		return ifname + ": " + err.Error()
	}
	addrs, err := nl.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return err.Error()
	}
	var have []string
	for _, a := range addrs {
		if a.IPNet.String() == addr {
			return ""
		}
		have = append(have, a.IPNet.String())
	}
	return ifname + " has " + strings.Join(have, ", ") + ", not " + addr
}

func defaultRouteMissing(nsName, ifname string) string {
	nl, done, err := nodeNetlink(nsName)
	if err != nil {
		return err.Error()
	}
	defer done()
	l, err := nl.LinkByName(ifname)
	if err != nil {
		return err.Error()
	}
	rs, err := nl.RouteList(l, netlink.FAMILY_V4)
	if err != nil {
		return err.Error()
	}
	for _, r := range rs {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() {
			return ""
		}
	}
	return "no IPv4 default route through " + ifname
}

// ovsPolicy is a second OVS bridge for node02, over eth2.
const ovsPolicy = `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata: {name: br-int}
spec:
  nodeSelector: {kubernetes.io/hostname: node02}
  desiredState:
    interfaces:
    - name: br-int
      type: ovs-bridge
      state: up
      bridge:
        port: [{name: eth2}]
`

// TestLabFirstBootDirAndReboot: both OpenShift flows on one worker. Day 1:
// with --first-boot-dir, node02 applies its node02.yml (eth0 under br-ex)
// at boot, before its handler starts; node01, with no file, is left alone.
// Day 2: two policies on node02 (an address on eth1, an OVS bridge) are
// Available. After lab reboot, which wipes the node's kernel state and its
// OVS database, the machine configuration (the first boot's file) is back
// first, then the handler puts both policies back.
func TestLabFirstBootDirAndReboot(t *testing.T) {
	name, dir := testLab(t, "fbdir")
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "node02.yml"), []byte(brExOverEth0), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "lab", "up", "--name", name, "--dir", dir, "--nodes", "2", "--first-boot-dir", src)
	st, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	node, err := st.Node("node02")
	if err != nil {
		t.Fatal(err)
	}
	if node.OVSDB == "" {
		t.Fatal("the lab's nodes have no Open vSwitch (Debian's openvswitch-switch is part of make setup)")
	}
	node01, err := st.Node("node01")
	if err != nil {
		t.Fatal(err)
	}
	onBrEx := func() string {
		if msg := addrMissing(node.NetNS, "br-ex", node.Address+"/24"); msg != "" {
			return msg
		}
		return defaultRouteMissing(node.NetNS, "br-ex")
	}
	waitFor(t, time.Minute, onBrEx)
	if msg := addrMissing(node01.NetNS, "eth0", node01.Address+"/24"); msg != "" {
		t.Errorf("node01 (no file): %s", msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "nodes", "node02", "etc", "nmstate", "openshift", "applied")); err != nil {
		t.Errorf("node02's applied record: %v", err)
	}

	dyn, err := dynamicFor(st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// Day 2: an address on eth1, and a second OVS bridge on the node's
	// Open vSwitch (whose database the reboot wipes).
	for _, doc := range []string{rebootPolicies["eth1-static"], ovsPolicy} {
		var policy unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &policy.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(nncpGVR).Create(context.Background(), &policy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := WaitAvailableAgain(context.Background(), st.Kubeconfig, "node02",
		map[string]Enactment{"node02.eth1-static": {}, "node02.br-int": {}}, time.Time{}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	out := run(t, "lab", "reboot", "node02", "--name", name, "--dir", dir)
	t.Logf("lab reboot:\n%s", out)
	if !strings.Contains(out, "2 enactments Available again") {
		t.Errorf("lab reboot did not report both policies Available again:\n%s", out)
	}
	if msg := onBrEx(); msg != "" {
		t.Errorf("after the reboot: %s", msg)
	}
	checkAddr(t, node.NetNS, "eth1", "10.10.0.2/24")
	ovsctl := exec.Command("ovs-vsctl", "--db="+node.OVSDB, "list-ports", "br-int")
	if b, err := ovsctl.CombinedOutput(); err != nil || strings.TrimSpace(string(b)) != "eth2" {
		t.Errorf("ovs-vsctl list-ports br-int after the reboot: %q, %v; want eth2", b, err)
	}
	log, err := os.ReadFile(filepath.Join(dir, "nodes", "node02", "first-boot.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), `msg="applying state file"`); n != 2 {
		t.Errorf("node02's file applied %d times (boot and reboot), want 2:\n%s", n, log)
	}
	if !strings.Contains(string(log), "applying it again") {
		t.Errorf("the reboot's first boot did not say it applies the file again:\n%s", log)
	}
}
