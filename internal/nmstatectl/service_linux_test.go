package nmstatectl

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"

	"github.com/knmstate/knmstate/internal/testbed/labnet/labnettest"
)

// syncBuffer collects the service's log from its goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exampleDesiredState extracts spec.desiredState of a documentation
// example policy.
func exampleDesiredState(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "pkg", "nmstate", "testdata", "knmstate-examples", name))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Spec struct {
			DesiredState any `json:"desiredState"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &policy); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// Unmodified: the lab's NICs are veths, and `type: ethernet` applies
	// to a veth as ethernet settings, as upstream does.
	out, err := yaml.Marshal(policy.Spec.DesiredState)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func serviceLab(t *testing.T) (*labnet.Switch, *labnet.Node) {
	t.Helper()
	return newServiceLab(t, "eth0", "eth1")
}

func benchLab(b *testing.B, nics ...string) *labnet.Node {
	b.Helper()
	_, node := newServiceLab(b, nics...)
	return node
}

func newServiceLab(t testing.TB, nics ...string) (*labnet.Switch, *labnet.Node) {
	t.Helper()
	return labnettest.New(t, labnet.Options{}, nics...)
}

// startService runs `nmstatectl service` in-process on the lab node until
// the returned stop is called (also at cleanup).
func startService(t *testing.T, node *labnet.Node, stateDir, configDir string) (stop func(), log *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log = &syncBuffer{}
	root := NewCommand()
	root.SetOut(log)
	root.SetErr(log)
	root.SetArgs([]string{"service", "--netns", node.NS.Path, "--resolv-conf", node.ResolvConf,
		"--state-dir", stateDir, "--config", configDir})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	stopped := false
	stop = func() {
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

func serviceWaitFor(t *testing.T, within time.Duration, log *syncBuffer, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Logf("goroutines:\n%s", buf)
			t.Fatalf("not within %s: %s\nservice log:\n%s", within, msg, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leasedIPv4 returns the dynamic (finite lifetime) IPv4 address of ifname.
func leasedIPv4(node *labnet.Node, ifname string) (netip.Prefix, error) {
	link, err := node.NS.Netlink.LinkByName(ifname)
	if err != nil {
		return netip.Prefix{}, err
	}
	addrs, err := node.NS.Netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return netip.Prefix{}, err
	}
	for _, a := range addrs {
		if a.Flags&unix.IFA_F_PERMANENT == 0 && uint32(a.ValidLft) != 0xffffffff {
			ip, _ := netip.AddrFromSlice(a.IP)
			ones, _ := a.Mask.Size()
			return netip.PrefixFrom(ip.Unmap(), ones), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("%s has no leased IPv4 address (addresses %v)", ifname, addrs)
}

func hasDHCPDefaultRoute(node *labnet.Node, ifname string) error {
	link, err := node.NS.Netlink.LinkByName(ifname)
	if err != nil {
		return err
	}
	rs, err := node.NS.Netlink.RouteListFiltered(netlink.FAMILY_V4,
		&netlink.Route{LinkIndex: link.Attrs().Index, Protocol: unix.RTPROT_DHCP}, netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() {
			return nil
		}
	}
	return fmt.Errorf("no dhcp default route on %s (dhcp routes %v)", ifname, rs)
}

// TestServiceAppliesDocExamples: the service applies the dhcp.yaml example
// at start and renames it; after a restart with linux-bridge.yaml added,
// the bridge over eth1 gets the lease and eth1 stops being dynamic.
func TestServiceAppliesDocExamples(t *testing.T) {
	sw, node := serviceLab(t)
	stateDir, configDir := t.TempDir(), t.TempDir()
	dhcpFile := filepath.Join(configDir, "01-dhcp.yml")
	if err := os.WriteFile(dhcpFile, exampleDesiredState(t, "dhcp.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop, log := startService(t, node, stateDir, configDir)
	serviceWaitFor(t, 90*time.Second, log, func() string {
		if _, err := os.Stat(filepath.Join(configDir, "01-dhcp.applied")); err != nil {
			return "01-dhcp.yml not renamed to 01-dhcp.applied"
		}
		if _, err := os.Stat(dhcpFile); err == nil {
			return "01-dhcp.yml still there"
		}
		if _, err := leasedIPv4(node, "eth1"); err != nil {
			return err.Error()
		}
		if err := hasDHCPDefaultRoute(node, "eth1"); err != nil {
			return err.Error()
		}
		return ""
	})
	addr, _ := leasedIPv4(node, "eth1")
	if !addr.Contains(sw.Options.Range4[0]) {
		t.Errorf("eth1 leased %s, want an address of the lab subnet", addr)
	}
	stop()

	bridgeFile := filepath.Join(configDir, "02-linux-bridge.yml")
	if err := os.WriteFile(bridgeFile, exampleDesiredState(t, "linux-bridge.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, log = startService(t, node, stateDir, configDir)
	serviceWaitFor(t, 90*time.Second, log, func() string {
		if _, err := os.Stat(filepath.Join(configDir, "02-linux-bridge.applied")); err != nil {
			return "02-linux-bridge.yml not renamed"
		}
		if _, err := leasedIPv4(node, "br1"); err != nil {
			return err.Error()
		}
		if err := hasDHCPDefaultRoute(node, "br1"); err != nil {
			return err.Error()
		}
		if a, err := leasedIPv4(node, "eth1"); err == nil {
			return fmt.Sprintf("eth1, now a bridge port, still holds the lease %s", a)
		}
		return ""
	})
	if _, err := os.Stat(filepath.Join(configDir, "01-dhcp.applied")); err != nil {
		t.Errorf("the applied dhcp file is gone: %v", err)
	}
}

// TestServiceKeepsStateFileWithNmstateConf: with nmstate.conf's
// keep_state_file_after_apply (OpenShift's setting) the service applies
// the file, leaves it where the machine configuration put it and records
// the applied content in 01-dhcp.applied.
func TestServiceKeepsStateFileWithNmstateConf(t *testing.T) {
	_, node := serviceLab(t)
	stateDir, configDir := t.TempDir(), t.TempDir()
	conf := "[service]\nkeep_state_file_after_apply = true\n"
	if err := os.WriteFile(filepath.Join(configDir, "nmstate.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	dhcp := exampleDesiredState(t, "dhcp.yaml")
	dhcpFile := filepath.Join(configDir, "01-dhcp.yml")
	if err := os.WriteFile(dhcpFile, dhcp, 0o644); err != nil {
		t.Fatal(err)
	}
	_, log := startService(t, node, stateDir, configDir)
	serviceWaitFor(t, 90*time.Second, log, func() string {
		applied, err := os.ReadFile(filepath.Join(configDir, "01-dhcp.applied"))
		if err != nil {
			return "no 01-dhcp.applied"
		}
		if string(applied) != string(dhcp) {
			return "01-dhcp.applied differs from 01-dhcp.yml"
		}
		if kept, err := os.ReadFile(dhcpFile); err != nil || string(kept) != string(dhcp) {
			return fmt.Sprintf("01-dhcp.yml not kept as it was: %v", err)
		}
		if _, err := leasedIPv4(node, "eth1"); err != nil {
			return err.Error()
		}
		return ""
	})
}

// TestOneOffApplyFollowedByRuntime: the wiring nmstatectl apply uses
// without a running service: the lease is acquired once and installed, a
// warning says nothing renews it, and show reports dhcp: true with the
// auto-* flags as applied.
func TestOneOffApplyFollowedByRuntime(t *testing.T) {
	_, node := serviceLab(t)
	stateDir := t.TempDir()
	n := nodeAddr{netns: node.NS.Path, resolvConf: node.ResolvConf}
	ctx := context.Background()
	kb, err := openKernel(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	var warn syncBuffer
	ab, closeFn, err := runtimeFollower(kb, kb, n, stateDir, &warn)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	desired, err := nmstate.Decode([]byte("interfaces:\n- name: eth1\n  ipv4: {enabled: true, dhcp: true, auto-gateway: false}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Apply(ctx, ab, desired, apply.Options{StateDir: stateDir, NetNS: n.netns, ResolvConf: n.resolvConf,
		OnCheckpoint: ab.OnCheckpoint}); err != nil {
		t.Fatalf("apply: %v\nwarnings: %s", err, warn.String())
	}
	if _, err := leasedIPv4(node, "eth1"); err != nil {
		t.Error(err)
	}
	if err := hasDHCPDefaultRoute(node, "eth1"); err == nil {
		t.Error("a default route was installed despite auto-gateway: false")
	}
	if !strings.Contains(warn.String(), "eth1: dhcpv4 lease") || !strings.Contains(warn.String(), "nmstatectl service") {
		t.Errorf("warning %q does not say that the eth1 lease is not renewed", warn.String())
	}
	st, err := kb.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := annotateShow(stateDir, st); err != nil {
		t.Fatal(err)
	}
	for _, ifc := range st.Interfaces {
		if ifc.Name == "eth1" {
			if got := fmt.Sprint(*ifc.IPv4.DHCP, *ifc.IPv4.AutoGateway); got != "true false" {
				t.Errorf("show eth1 dhcp, auto-gateway = %s, want true false", got)
			}
		}
	}
}

// TestServiceRollsBackCheckpointFromBeforeBoot: a checkpoint pending since
// before the machine booted is rolled back when the service starts, long
// before its deadline; the apply's address on eth1 goes.
func TestServiceRollsBackCheckpointFromBeforeBoot(t *testing.T) {
	_, node := serviceLab(t)
	stateDir, configDir := t.TempDir(), t.TempDir()
	n := nodeAddr{netns: node.NS.Path, resolvConf: node.ResolvConf}
	ctx := t.Context()
	kb, err := openKernel(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	desired, err := nmstate.Decode([]byte("interfaces:\n- name: eth1\n  ipv4: {enabled: true, address: [{ip: 198.51.100.7, prefix-length: 24}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Made in 2000 with a deadline a century later: only its age can
	// explain a rollback within the test.
	made := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	res, err := apply.Apply(ctx, kb, desired, apply.Options{StateDir: stateDir, NetNS: n.netns, ResolvConf: n.resolvConf,
		NoCommit: true, Timeout: 100 * 365 * 24 * time.Hour, Now: func() time.Time { return made }})
	if err != nil {
		t.Fatal(err)
	}
	if got := ipv4Of(t, node, "eth1"); !slices.Contains(got, "198.51.100.7/24") {
		t.Fatalf("eth1 IPv4 %v after the apply, want 198.51.100.7/24", got)
	}
	_, log := startService(t, node, stateDir, configDir)
	serviceWaitFor(t, 20*time.Second, log, func() string {
		if _, err := apply.ReadCheckpoint(stateDir); err == nil {
			return "checkpoint " + res.Checkpoint + " still pending"
		}
		if got := ipv4Of(t, node, "eth1"); slices.Contains(got, "198.51.100.7/24") {
			return fmt.Sprintf("eth1 IPv4 %v still has the apply's address", got)
		}
		return ""
	})
	if !strings.Contains(log.String(), "checkpoint from before boot rolled back") {
		t.Errorf("service log does not say why the checkpoint was rolled back:\n%s", log)
	}
}

func ipv4Of(t *testing.T, node *labnet.Node, ifname string) []string {
	t.Helper()
	link, err := node.NS.Netlink.LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := node.NS.Netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		out = append(out, a.IPNet.String())
	}
	return out
}
