//go:build linux && !qemu

// The host lane's scenarios through NetworkManager, on this machine's
// kernel; the qemu lane runs its own scenarios through NetworkManager
// (nm_qemu_test.go) and leaves these to make test's unit stage.

package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

func TestHostExamplesNetworkManager(t *testing.T) {
	ran := 0
	for _, s := range Scenarios {
		// OVS scenarios: TestOVSExamplesNetworkManager (NetworkManager with its OVS plugin).
		if s.Lane != HostLane || s.OVS || s.NoNM != "" || s.NMBy != "" {
			continue
		}
		ran++
		t.Run(s.Name, func(t *testing.T) { runScenarioOn(t, s, newNMNode) })
	}
	if ran == 0 {
		t.Fatal("no host scenario")
	}
}

func TestGCKeyfilesLoadAndVerify(t *testing.T) {
	for _, s := range Scenarios {
		if s.Lane != HostLane || s.OVS || s.NoNM != "" || s.NMBy != "" || s.Steps[0] == "static_hostname.yml" {
			// A hostname-only state is no profile: no keyfile to load.
			continue
		}
		file := s.Steps[0]
		t.Run(file, func(t *testing.T) {
			n := newNMNode(t)
			desired, err := nmstate.Decode(readExample(t, file))
			if err != nil {
				t.Fatal(err)
			}
			files, err := nm.GenerateKeyfiles(desired)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) == 0 {
				t.Fatal("no keyfile")
			}
			ctx := context.Background()
			dir := n.nmKeyfileDir
			for _, f := range files {
				path := filepath.Join(dir, f.Name)
				if err := os.WriteFile(path, f.Data, 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := nmrun.Nmcli(ctx, n.nmBus, "connection", "load", path); err != nil {
					t.Fatalf("nmcli connection load %s: %v\n%s\n%s", f.Name, err, out, f.Data)
				}
			}
			for _, f := range files {
				id := strings.TrimSuffix(f.Name, ".nmconnection")
				// A port NetworkManager activates with its controller
				// (autoconnect-slaves) is waited for, not activated again:
				// a second activation interrupts the first ("The base
				// network connection was interrupted", seen once in CI).
				if waitActivatedByController(t, n.nmBus, id) {
					continue
				}
				if out, err := nmrun.Nmcli(ctx, n.nmBus, "--wait", "30", "connection", "up", "id", id); err != nil {
					t.Fatalf("nmcli connection up %s: %v\n%s", id, err, out)
				}
			}
			var last error
			for i := 0; i < 20; i++ {
				cur, err := n.backend.Show(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if last = errors.Join(nmstate.Verify(desired, cur), n.checkKernel(desired)); last == nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if last != nil {
				last = fmt.Errorf("after activating the gc keyfiles:\n%w", last)
			}
			expect(t, gcKnown[file], last)
		})
	}
}

// newNMOVSNode is newNMNode with a private Open vSwitch (ovs-vswitchd in
// the node's namespace, userspace datapath) that NetworkManager drives
// through its OVS plugin; the backend reads OVSDB next to the kernel.
// After each step ovs-vsctl checks OVSDB as on the kernel backend's OVS
// nodes.
func newNMOVSNode(t *testing.T) *node {
	t.Helper()
	ns, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "sw-eth1")
	nstest.Veth(t, ns, "eth2", peer, "sw-eth2")
	o := ovsrun.ForTest(t, ns.Path)
	dir := t.TempDir()
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: ns.Path, Dir: filepath.Join(dir, "nm"), OVS: o.Dir})
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
	uts := newUTSNS(t)
	b, err := nm.Open(context.Background(), nm.Options{NetNS: ns.Path, UTSNS: uts, HostnameFile: filepath.Join(dir, "hostname"), Bus: in.Bus, ResolvConf: filepath.Join(in.RunDir, "resolv.conf"),
		OVSDB: o.Address, OVSDatapath: ovsDatapath,
		OnTouchUp: func(p *nmstate.Plan) { t.Logf("kernel touch-up after NetworkManager:\n%s", p) }})
	if err != nil {
		t.Fatalf("opening the NetworkManager backend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	n := &node{ns: ns, peer: peer, backend: b, stateDir: filepath.Join(dir, "state"), ovsdb: o.Address,
		resolv: filepath.Join(in.RunDir, "resolv.conf"), uts: uts, nmBus: in.Bus, nmKeyfileDir: in.KeyfileDir}
	n.checkMore = func(desired *nmstate.State) error { return checkOVS(o.Address, desired) }
	return n
}

// TestOVSExamplesNetworkManager runs the OVS scenarios through the
// NetworkManager backend, with the checks of TestOVSExamples (Verify,
// netlink, ovs-vsctl, the fixed point) plus nmcli showing each interface
// connected.
func TestOVSExamplesNetworkManager(t *testing.T) {
	runLane(t, HostLane, true, newNMOVSNode)
}

// TestGCKeyfilesLoadAndVerifyOVS is TestGCKeyfilesLoadAndVerify for the
// OVS scenarios, on a node whose NetworkManager drives its Open vSwitch:
// the ovs-bridge, ovs-port and ovs-interface keyfiles (and those of the
// system ports) load, activate, and the node verifies, with ovs-vsctl's
// look at OVSDB as well.
func TestGCKeyfilesLoadAndVerifyOVS(t *testing.T) {
	ran := 0
	for _, s := range Scenarios {
		if s.Lane != HostLane || !s.OVS {
			continue
		}
		ran++
		file := s.Steps[0]
		t.Run(file, func(t *testing.T) {
			n := newNMOVSNode(t)
			desired, err := nmstate.Decode(readExample(t, file))
			if err != nil {
				t.Fatal(err)
			}
			// gc knows no node: the state names the datapath, as one
			// rendered for a node without the openvswitch module must.
			rendered := desired.Clone()
			for i := range rendered.Interfaces {
				if ifc := &rendered.Interfaces[i]; ifc.Type == nmstate.TypeOVSBridge {
					if ifc.OVSBridge == nil {
						ifc.OVSBridge = &nmstate.OVSBridge{}
					}
					if ifc.OVSBridge.Options == nil {
						ifc.OVSBridge.Options = &nmstate.OVSBridgeOptions{}
					}
					dp := ovsDatapath
					ifc.OVSBridge.Options.Datapath = &dp
				}
			}
			files, err := nm.GenerateKeyfiles(rendered)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, f := range files {
				path := filepath.Join(n.nmKeyfileDir, f.Name)
				if err := os.WriteFile(path, f.Data, 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := nmrun.Nmcli(ctx, n.nmBus, "connection", "load", path); err != nil {
					t.Fatalf("nmcli connection load %s: %v\n%s\n%s", f.Name, err, out, f.Data)
				}
			}
			for _, f := range files {
				id := strings.TrimSuffix(f.Name, ".nmconnection")
				// A port NetworkManager activates with its controller
				// (autoconnect-slaves) is waited for, not activated again:
				// a second activation interrupts the first ("The base
				// network connection was interrupted", seen once in CI).
				if waitActivatedByController(t, n.nmBus, id) {
					continue
				}
				if out, err := nmrun.Nmcli(ctx, n.nmBus, "--wait", "30", "connection", "up", "id", id); err != nil {
					t.Fatalf("nmcli connection up %s: %v\n%s", id, err, out)
				}
			}
			// NetworkManager's activation of an OVS internal interface
			// (a tap on the userspace datapath) returns before the tap is
			// up; on a loaded machine that took more than 5 s once.
			var last error
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
				cur, err := n.backend.Show(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if last = errors.Join(nmstate.Verify(desired, cur), n.checkKernel(desired), n.checkMore(desired)); last == nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if last != nil {
				t.Errorf("after activating the gc keyfiles:\n%v", last)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no OVS scenario")
	}
}

// waitActivatedByController reports whether profile id is active or being
// activated already (by its controller's activation), and waits until it
// is activated.
func waitActivatedByController(t *testing.T, bus, id string) bool {
	t.Helper()
	state := func() string {
		out, _ := nmrun.Nmcli(context.Background(), bus, "-g", "GENERAL.STATE", "connection", "show", "id", id)
		return strings.TrimSpace(string(out))
	}
	if s := state(); s != "activating" && s != "activated" {
		return false
	}
	s := ""
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if s = state(); s == "activated" {
			return true
		}
	}
	t.Fatalf("profile %s, activated with its controller, not activated after 30 s: state %q", id, s)
	return true
}
