package nmstatectl

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/labnet/labnettest"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/probe"
)

// eth0DHCP is the node's state before its first boot's file: the primary
// NIC configured by DHCP, as the installer leaves it.
const eth0DHCP = `interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: true, dhcp: true}
  ipv6: {enabled: false}
`

// bridgeOverEth0 puts eth0 under br-ex, whose interface (ifaceOf) takes
// eth0's MAC and asks DHCP for the address eth0 had (the switch reserves
// by MAC). The OVS variant is OpenShift's: an ovs-bridge br-ex with eth0
// and its own internal ovs-interface br-ex.
var ifaceOf = map[string]string{"linux-bridge": "br-ex", "ovs-bridge": "br-ex"}

var bridgeOverEth0 = map[string]string{
	"linux-bridge": `interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
- name: br-ex
  type: linux-bridge
  state: up
  copy-mac-from: eth0
  bridge:
    options: {stp: {enabled: false}}
    port: [{name: eth0}]
  ipv4: {enabled: true, dhcp: true}
  ipv6: {enabled: false}
`,
	"ovs-bridge": `interfaces:
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
  ipv4: {enabled: true, dhcp: true}
  ipv6: {enabled: false}
`,
}

// firstBootNode is a lab node whose eth0 has its DHCP lease, with its
// node runtime (`nmstatectl service`) running and, for OVS, its own Open
// vSwitch.
type firstBootNode struct {
	sw        *labnet.Switch
	node      *labnet.Node
	ovsdb     string
	stateDir  string
	sourceDir string
	// mac and addr are eth0's before the first boot.
	mac  net.HardwareAddr
	addr netip.Prefix
}

func newFirstBootNode(t *testing.T, withOVS bool) *firstBootNode {
	t.Helper()
	sw, node := labnettest.New(t, labnet.Options{}, "eth0")
	n := &firstBootNode{sw: sw, node: node, ovsdb: "none", stateDir: t.TempDir(), sourceDir: t.TempDir()}
	if withOVS {
		o := ovsrun.ForTest(t, node.NS.Name)
		n.ovsdb = o.Address
	}
	configDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(configDir, "00-eth0.yml"), []byte(eth0DHCP), 0o644); err != nil {
		t.Fatal(err)
	}
	_, log := startServiceArgs(t, node, n.stateDir, configDir, "--ovsdb", n.ovsdb, "--ovs-datapath", "netdev")
	serviceWaitFor(t, time.Minute, log, func() string {
		if _, err := leasedIPv4(node, "eth0"); err != nil {
			return err.Error()
		}
		if err := hasDHCPDefaultRoute(node, "eth0"); err != nil {
			return err.Error()
		}
		return ""
	})
	n.addr, _ = leasedIPv4(node, "eth0")
	l, err := node.NS.Netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	n.mac = l.Attrs().HardwareAddr
	return n
}

// startServiceArgs is startService with extra global flags.
func startServiceArgs(t *testing.T, node *labnet.Node, stateDir, configDir string, global ...string) (func(), *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := &syncBuffer{}
	root := NewCommand()
	root.SetOut(log)
	root.SetErr(log)
	root.SetArgs(append(append([]string{"service", "--netns", node.NS.Path, "--resolv-conf", node.ResolvConf,
		"--state-dir", stateDir}, global...), "--config", configDir))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service: %v\nlog:\n%s", err, log)
		}
	}
	t.Cleanup(stop)
	return stop, log
}

// firstBoot runs `nmstatectl first-boot` on the node as host node1.
func (n *firstBootNode) firstBoot(t *testing.T) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := NewCommand()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"--netns", n.node.NS.Path, "--resolv-conf", n.node.ResolvConf, "--state-dir", n.stateDir,
		"--ovsdb", n.ovsdb, "--ovs-datapath", "netdev",
		"first-boot", "--source-dir", n.sourceDir, "--hostname", "node1.lab.example",
		"--probe-timeout", "10s", "--probe-dns-host", "node1"})
	start := time.Now()
	err := root.ExecuteContext(context.Background())
	t.Logf("first-boot took %v (err %v); output:\n%s", time.Since(start).Round(time.Millisecond), err, out.String())
	return out.String(), err
}

// show reads the node through nmstatectl show.
func (n *firstBootNode) show(t *testing.T) *nmstate.State {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewCommand()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"--netns", n.node.NS.Path, "--resolv-conf", n.node.ResolvConf, "--state-dir", n.stateDir,
		"--ovsdb", n.ovsdb, "show"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("show: %v\n%s", err, errOut.String())
	}
	s, err := nmstate.Decode(out.Bytes())
	if err != nil {
		t.Fatalf("show output: %v", err)
	}
	return s
}

// summary is what a first boot changes: interfaces (name, type, MAC,
// controller, static and leased IPv4 addresses) and the default routes.
func (n *firstBootNode) summary(t *testing.T) string {
	t.Helper()
	s := n.show(t)
	var lines []string
	for _, i := range s.Interfaces {
		if i.Type == nmstate.TypeLoopback {
			continue
		}
		line := fmt.Sprintf("%s %s %s", i.Name, i.Type, i.EffectiveState())
		if i.MACAddress != nil {
			line += " mac=" + string(*i.MACAddress)
		}
		if i.Controller != nil {
			line += " controller=" + *i.Controller
		}
		if i.IPv4 != nil {
			for _, a := range i.IPv4.Address {
				line += fmt.Sprintf(" %s/%d", a.IP, a.PrefixLength)
			}
		}
		if ports, ok := i.Ports(); ok && len(ports) > 0 {
			line += " ports=" + strings.Join(ports, ",")
		}
		lines = append(lines, line)
	}
	if s.Routes != nil {
		for _, r := range s.Routes.Running {
			if r.Destination != nil && r.Destination.String() == "0.0.0.0/0" {
				lines = append(lines, fmt.Sprintf("default via %v dev %v", deref(r.NextHopAddress), deref(r.NextHopInterface)))
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func deref[T any](p *T) any {
	if p == nil {
		return "-"
	}
	return *p
}

// reachable checks what the node must keep: its gateway answers pings
// and a TCP service behind it (the switch's DNS server, standing in for
// the API server) accepts connections.
func (n *firstBootNode) reachable(t *testing.T, iface string) {
	t.Helper()
	gw, _ := n.sw.Gateways()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := probe.Poll(ctx, 20*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		return probe.Ping(ctx, n.node.NS.Path, gw, iface)
	}); err != nil {
		t.Errorf("gateway %s not reachable over %s: %v", gw, iface, err)
	}
	err := n.node.NS.Do(func() error {
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(gw, 53).String(), 5*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	if err != nil {
		t.Errorf("TCP to %s:53 from the node: %v", gw, err)
	}
}

func (n *firstBootNode) writeSource(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(n.sourceDir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFirstBootBridgeTakesOverEth0: the host's file puts eth0 under br-ex;
// br-ex gets eth0's MAC and, by DHCP, eth0's address and the default
// route; the gateway and a TCP service stay reachable; the applied record
// is the file; a second run changes nothing. The linux-bridge variant runs
// on any kernel; the ovs-bridge one on the node's own userspace OVS.
func TestFirstBootBridgeTakesOverEth0(t *testing.T) {
	for _, kind := range []string{"linux-bridge", "ovs-bridge"} {
		t.Run(kind, func(t *testing.T) {
			n := newFirstBootNode(t, kind == "ovs-bridge")
			file, iface := bridgeOverEth0[kind], ifaceOf[kind]
			n.writeSource(t, "node1.yml", file)
			n.writeSource(t, "cluster.yml", eth0DHCP) // the host's own file wins

			if _, err := n.firstBoot(t); err != nil {
				t.Fatalf("first-boot: %v", err)
			}
			var addr netip.Prefix
			serviceWaitFor(t, time.Minute, &syncBuffer{}, func() string {
				var err error
				if addr, err = leasedIPv4(n.node, iface); err != nil {
					return err.Error()
				}
				return ""
			})
			if addr != n.addr {
				t.Errorf("%s leased %s, eth0 had %s", iface, addr, n.addr)
			}
			l, err := n.node.NS.Netlink.LinkByName(iface)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Attrs().HardwareAddr.String(); got != n.mac.String() {
				t.Errorf("%s MAC %s, eth0's was %s", iface, got, n.mac)
			}
			if err := hasDHCPDefaultRoute(n.node, iface); err != nil {
				t.Error(err)
			}
			eth0, err := n.node.NS.Netlink.LinkByName("eth0")
			if err != nil {
				t.Fatal(err)
			}
			if a, _ := n.node.NS.Netlink.AddrList(eth0, netlink.FAMILY_V4); len(a) != 0 {
				t.Errorf("eth0 kept IPv4 addresses %v", a)
			}
			n.reachable(t, iface)
			applied, err := os.ReadFile(filepath.Join(n.sourceDir, "applied"))
			if err != nil || string(applied) != file {
				t.Errorf("applied record = %q, %v; want the host's file", applied, err)
			}
			state := n.show(t)
			bridge := -1
			for i, in := range state.Interfaces {
				if in.Name == "br-ex" && (in.Type == nmstate.TypeLinuxBridge || in.Type == nmstate.TypeOVSBridge) {
					bridge = i
				}
			}
			if bridge < 0 {
				t.Fatalf("no bridge br-ex in the node's state")
			}
			if ports, _ := state.Interfaces[bridge].Ports(); !slices.Contains(ports, "eth0") {
				t.Errorf("br-ex ports %v lack eth0", ports)
			}

			before := n.summary(t)
			out, err := n.firstBoot(t)
			if err != nil {
				t.Fatalf("second first-boot: %v", err)
			}
			if !strings.Contains(out, "already applied") {
				t.Errorf("second run did not say it had nothing to do:\n%s", out)
			}
			if after := n.summary(t); after != before {
				t.Errorf("second run changed the node:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			t.Logf("node after first boot:\n%s", before)

			if kind != "linux-bridge" {
				return
			}
			// A reboot on the kernel backend: br-ex is gone, eth0 bare.
			// The record still matches the file, but the node does not
			// show it: the next boot applies it again.
			if err := n.node.NS.Netlink.LinkDel(l); err != nil {
				t.Fatal(err)
			}
			out, err = n.firstBoot(t)
			if err != nil {
				t.Fatalf("first-boot after the bridge vanished: %v", err)
			}
			if !strings.Contains(out, "applying it again") {
				t.Errorf("did not say it applies the file again:\n%s", out)
			}
			serviceWaitFor(t, time.Minute, &syncBuffer{}, func() string {
				if after := n.summary(t); after != before {
					return fmt.Sprintf("node not back as after the first boot:\nwant:\n%s\nnow:\n%s", before, after)
				}
				return ""
			})
		})
	}
}

// cutOff is a file that applies but leaves the node without its gateway:
// br-ex takes eth0 with a static address in another subnet.
var cutOff = map[string]string{
	"linux-bridge": `interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
- name: br-ex
  type: linux-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port: [{name: eth0}]
  ipv4:
    enabled: true
    address: [{ip: 10.99.0.5, prefix-length: 24}]
  ipv6: {enabled: false}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 10.99.0.1, next-hop-interface: br-ex}
`,
	"ovs-bridge": `interfaces:
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
`,
}

// TestFirstBootFailureRollsBack: a file that cuts the node off its gateway
// is rolled back once the probes fail; the command fails naming the host
// and the file; no record (hence no configure-ovs skip flag) is written;
// the node (kernel and OVS database) is as it was. A file that does not
// decode changes nothing.
func TestFirstBootFailureRollsBack(t *testing.T) {
	for _, kind := range []string{"linux-bridge", "ovs-bridge"} {
		t.Run(kind, func(t *testing.T) {
			n := newFirstBootNode(t, kind == "ovs-bridge")
			before := n.summary(t)

			n.writeSource(t, "node1.yml", `interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: true, dhcp: true, bogus: 1}
`)
			_, err := n.firstBoot(t)
			if err == nil || !strings.Contains(err.Error(), "first boot of node1") || !strings.Contains(err.Error(), "interfaces[0].ipv4.bogus") {
				t.Errorf("undecodable file: error %v, want one naming the host and the path", err)
			}

			n.writeSource(t, "node1.yml", cutOff[kind])
			_, err = n.firstBoot(t)
			if err == nil {
				t.Fatal("first-boot of a file that cuts the node off succeeded")
			}
			for _, want := range []string{"first boot of node1", "node1.yml", "probe ping", "rolled back"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if _, err := os.Stat(filepath.Join(n.sourceDir, "applied")); !os.IsNotExist(err) {
				t.Errorf("applied record after a failure: %v", err)
			}
			if _, err := os.Stat(filepath.Join(n.stateDir, "checkpoint")); err == nil {
				t.Errorf("checkpoint left pending")
			}
			var after string
			serviceWaitFor(t, time.Minute, &syncBuffer{}, func() string {
				if after = n.summary(t); after != before {
					return fmt.Sprintf("node not as before:\nbefore:\n%s\nnow:\n%s", before, after)
				}
				return ""
			})
			n.reachable(t, "eth0")
		})
	}
}
