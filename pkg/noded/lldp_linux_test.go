package noded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// lldpSwitch runs Debian's lldpd on iface of ns as the switch
// "knm-switch", sending every second, its control socket and pid file in
// a temporary directory; stopped on cleanup.
func lldpSwitch(t *testing.T, ns *nstest.NS, iface string) {
	t.Helper()
	if _, err := exec.LookPath("lldpd"); err != nil {
		t.Fatalf("lldpd is missing (make setup installs Debian's lldpd): %v", err)
	}
	// Not t.TempDir (0700): lldpcli talks to the socket as lldpd's
	// unprivileged user.
	dir, err := os.MkdirTemp("", "knm-lldpd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "lldpd.socket")
	var cmd *exec.Cmd
	err = ns.Do(func() error {
		cmd = exec.Command("lldpd", "-d", "-u", sock, "-I", iface)
		log, err := os.Create(filepath.Join(dir, "lldpd.log"))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = log, log
		return cmd.Start()
	})
	if err != nil {
		t.Fatalf("starting lldpd: %v", err)
	}
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("stopping lldpd: %v", err)
		}
		_ = cmd.Wait()
	})
	lldpcli := func(args ...string) error {
		return ns.Do(func() error {
			out, err := exec.Command("lldpcli", append([]string{"-u", sock}, args...)...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("lldpcli %v: %w: %s", args, err, out)
			}
			return nil
		})
	}
	// lldpd creates its socket once it runs.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := lldpcli("configure", "system", "hostname", "knm-switch")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "lldpd.log"))
			t.Fatalf("%v\nlldpd log:\n%s", err, log)
		}
	}
	if err := lldpcli("configure", "lldp", "tx-interval", "1"); err != nil {
		t.Fatal(err)
	}
}

// TestLLDPNeighborsReported: with lldp enabled on eth1 the node runtime
// hears the peer's lldpd and Show reports it as eth1's neighbour, in
// nmstate's TLV form (chassis ID, port, system name); disabling LLDP
// forgets it. eth2, never enabled, reports lldp disabled and no
// neighbours although the same switch talks on it.
func TestLLDPNeighborsReported(t *testing.T) {
	ns, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "sw-eth1")
	nstest.Veth(t, ns, "eth2", peer, "sw-eth2")
	for _, n := range []string{"eth1", "eth2"} {
		ns.LinkUp(t, n)
		peer.LinkUp(t, "sw-"+n)
	}
	lldpSwitch(t, peer, "sw-eth1,sw-eth2")
	b, err := kernel.Open(context.Background(), kernel.Options{NetNS: ns.Path, LLDPDir: filepath.Join(t.TempDir(), "lldp")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	rt, err := New(Options{Namespace: ns.Handle, Installer: KernelInstaller{B: b}, StateDir: t.TempDir(),
		PollInterval: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(tbWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runtime: %v", err)
		}
	})

	lldpOf := func(name string) *nmstate.LLDP {
		t.Helper()
		st, err := b.Show(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		i := st.FindTyped(name, "")
		if i == nil || i.LLDP == nil || i.LLDP.Enabled == nil {
			t.Fatalf("%s has no lldp section: %+v", name, i)
		}
		return i.LLDP
	}
	setLLDP := func(on bool) {
		t.Helper()
		op := nmstate.LinkModify{Iface: nmstate.Interface{Name: "eth1", Type: nmstate.TypeEthernet, LLDP: &nmstate.LLDP{Enabled: &on}}}
		if err := b.Execute(context.Background(), &nmstate.Plan{Ops: []nmstate.Op{op}}); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	setLLDP(true)
	var text string
	// lldpd's first frame comes within its tx interval, late on a
	// loaded machine (30 s was not enough once with make test's lanes).
	eventually(t, 90*time.Second, func() string {
		l := lldpOf("eth1")
		if !*l.Enabled || len(l.Neighbors) != 1 {
			return fmt.Sprintf("eth1 lldp enabled %v with %d neighbours, want 1", *l.Enabled, len(l.Neighbors))
		}
		y, err := nmstate.EncodeYAML(&nmstate.State{Interfaces: []nmstate.Interface{{Name: "eth1", Type: nmstate.TypeEthernet, LLDP: l}}})
		if err != nil {
			t.Fatal(err)
		}
		text = string(y)
		return ""
	})
	t.Logf("eth1 as shown:\n%s", text)
	for _, want := range []string{"system-name: knm-switch", "chassis-id-type: 4", "_description: MAC address", "type: 2", "port-id"} {
		if !strings.Contains(text, want) {
			t.Errorf("eth1's neighbour lacks %q", want)
		}
	}
	if l := lldpOf("eth2"); *l.Enabled || len(l.Neighbors) != 0 {
		t.Errorf("eth2 (lldp never enabled): enabled %v, %d neighbours", *l.Enabled, len(l.Neighbors))
	}

	setLLDP(false)
	if l := lldpOf("eth1"); *l.Enabled || len(l.Neighbors) != 0 {
		t.Errorf("after disabling: eth1 lldp enabled %v, %d neighbours", *l.Enabled, len(l.Neighbors))
	}
}
