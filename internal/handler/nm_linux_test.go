package handler

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestRunWithNetworkManager: a handler with --backend networkmanager
// reports NetworkManager's version as hostNetworkManagerVersion and
// applies a policy as a NetworkManager profile (its checkpoint destroyed
// on commit).
func TestRunWithNetworkManager(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: ns.Path, Dir: filepath.Join(t.TempDir(), "nm")})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	n := newPolNode(t, "pol-nm", ns.Path, map[string]string{"pol-nm": "yes"})
	t.Cleanup(func() {
		_ = n.c.Delete(context.Background(), &nmstatev1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: n.name}})
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Node: n.name, Config: env.Config, NetNS: n.nsPath, StateDir: n.stateDir,
			Backend: "networkmanager", DBusAddress: in.Bus,
			Log: testr.NewWithOptions(t, testr.Options{}), Policy: PolicySettings{NoProbes: true}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	p := n.createPolicy(t, "pol-nm", staticAddr("eth1", "198.51.100.72/24"), map[string]string{"pol-nm": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	if !hasAddress(n.show(t), "eth1", "198.51.100.72") {
		t.Error("eth1 lacks 198.51.100.72")
	}
	out, err := nmrun.Nmcli(ctx, in.Bus, "-g", "IP4.ADDRESS", "device", "show", "eth1")
	if err != nil || !strings.Contains(out, "198.51.100.72/24") {
		t.Errorf("NetworkManager's eth1: %q (%v)", out, err)
	}
	if cps, err := nmrun.Checkpoints(in.Bus); err != nil || cps != 0 {
		t.Errorf("NetworkManager checkpoints after commit: %d (%v)", cps, err)
	}
	want, _ := nmrun.Nmcli(ctx, in.Bus, "-g", "VERSION", "general")
	want = strings.TrimSpace(want)
	var got string
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		nns := &nmstatev1beta1.NodeNetworkState{}
		if err := n.c.Get(ctx, client.ObjectKey{Name: n.name}, nns); err == nil {
			if got = nns.Status.HostNetworkManagerVersion; got == want {
				break
			}
		}
	}
	if got != want || want == "" {
		t.Errorf("hostNetworkManagerVersion %q, want NetworkManager's %q", got, want)
	}
}

// TestPolicyUnreachableGatewayRolledBackNetworkManager: the probe failure
// of TestPolicyUnreachableGatewayRolledBack on a node whose eth0 is
// NetworkManager's: the policy becomes a profile, the ping probe fails,
// and the rollback (NetworkManager's checkpoint, then our record) restores
// the routes and addresses, with no checkpoint left in NetworkManager.
func TestPolicyUnreachableGatewayRolledBackNetworkManager(t *testing.T) {
	n := probeNode(t, "pol-gw-nm")
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: n.nsPath, Dir: filepath.Join(t.TempDir(), "nm")})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	nb, err := nm.Open(context.Background(), nm.Options{NetNS: n.nsPath, Bus: in.Bus})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nb.Close() })
	n.start(t, func(o *PolicyOptions) { withProbes(o); o.Backend = nb })
	before := n.show(t)
	p := n.createPolicy(t, "pol-gw-nm", `routes:
  config:
  - destination: 0.0.0.0/0
    state: absent
  - destination: 0.0.0.0/0
    next-hop-address: 192.0.2.77
    next-hop-interface: eth0
`, map[string]string{"pol-gw-nm": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	e := n.waitEnactment(t, p.Name, "Failed", phaseIs(1, phaseFailed))
	msg := condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing).Message
	if !strings.Contains(msg, "rolling back desired state configuration") || !strings.Contains(msg, "probe ping") {
		t.Errorf("Failing message %q, want a rollback after the ping probe", msg)
	}
	pick := func(s *nmstate.State) string {
		y, err := nmstate.EncodeYAML(&nmstate.State{Routes: s.Routes, Interfaces: []nmstate.Interface{{Name: "eth0", IPv4: s.Find("eth0")[0].IPv4}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(y)
	}
	var diff string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if diff = cmp.Diff(pick(before), pick(n.show(t))); diff == "" {
			break
		}
	}
	if diff != "" {
		t.Errorf("routes and eth0 addresses after rollback (-before +after):\n%s", diff)
	}
	if cps, err := nmrun.Checkpoints(in.Bus); err != nil || cps != 0 {
		t.Errorf("NetworkManager checkpoints after the rollback: %d (%v)", cps, err)
	}
}
