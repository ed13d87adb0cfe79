//go:build linux && !qemu

// NetworkManager runs on this machine's kernel only: the qemu lane's guest
// has no D-Bus daemon.

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
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

func newNMNode(t *testing.T) *node {
	t.Helper()
	ns, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "sw-eth1")
	nstest.Veth(t, ns, "eth2", peer, "sw-eth2")
	dir := t.TempDir()
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: ns.Path, Dir: filepath.Join(dir, "nm")})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	uts := newUTSNS(t)
	b, err := nm.Open(context.Background(), nm.Options{NetNS: ns.Path, UTSNS: uts, Bus: in.Bus, ResolvConf: filepath.Join(in.RunDir, "resolv.conf"),
		OnTouchUp: func(p *nmstate.Plan) { t.Logf("kernel touch-up after NetworkManager:\n%s", p) }})
	if err != nil {
		t.Fatalf("opening the NetworkManager backend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return &node{ns: ns, peer: peer, backend: b, stateDir: filepath.Join(dir, "state"),
		resolv: filepath.Join(in.RunDir, "resolv.conf"), uts: uts, nmBus: in.Bus, nmKeyfileDir: in.KeyfileDir}
}

func TestHostExamplesNetworkManager(t *testing.T) {
	ran := 0
	for _, s := range Scenarios {
		// The NetworkManager backend does not make OVS.
		if s.Lane != HostLane || s.OVS || s.NoNM != "" {
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
		if s.Lane != HostLane || s.OVS || s.NoNM != "" || s.Name == "static-hostname" {
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
