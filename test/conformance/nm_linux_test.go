package conformance

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/nmrun"
	"github.com/knmstate/knmstate/internal/nstest"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// newNMNode is newNode with a private NetworkManager managing the node's
// namespace, reached through the NetworkManager backend. Its resolv.conf
// is the one NetworkManager renders in its run directory, so the direct
// DNS check reads what NetworkManager would hand the resolver.
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
	b, err := nm.Open(context.Background(), nm.Options{NetNS: ns.Path, UTSNS: uts, Bus: in.Bus,
		OnTouchUp: func(p *nmstate.Plan) { t.Logf("kernel touch-up after NetworkManager:\n%s", p) }})
	if err != nil {
		t.Fatalf("opening the NetworkManager backend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return &node{ns: ns, peer: peer, backend: b, stateDir: filepath.Join(dir, "state"),
		resolv: filepath.Join(in.RunDir, "resolv.conf"), uts: uts, nmBus: in.Bus}
}

// TestHostExamplesNetworkManager runs the host lane's scenarios through
// the NetworkManager backend, with the same checks as the kernel backend.
func TestHostExamplesNetworkManager(t *testing.T) {
	ran := 0
	for _, s := range Scenarios {
		if s.Lane != HostLane {
			continue
		}
		ran++
		t.Run(s.Name, func(t *testing.T) { runScenarioOn(t, s, newNMNode) })
	}
	if ran == 0 {
		t.Fatal("no host scenario")
	}
}

// checkNM asks NetworkManager itself (nmcli, not the backend) whether
// each interface desired up is connected through a profile, so a pass
// cannot come from the kernel touch-up alone.
func (n *node) checkNM(ctx context.Context, desired *nmstate.State) error {
	var errs []error
	for _, ifc := range desired.Interfaces {
		if ifc.State != "" && ifc.State != nmstate.StateUp {
			continue
		}
		out, err := nmrun.Nmcli(ctx, n.nmBus, "-g", "GENERAL.STATE,GENERAL.CONNECTION", "device", "show", ifc.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: nmcli: %v: %s", ifc.Name, err, out))
			continue
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], "100") || lines[1] == "" {
			errs = append(errs, fmt.Errorf("%s: not connected by NetworkManager: %q", ifc.Name, lines))
		}
	}
	return errors.Join(errs...)
}
