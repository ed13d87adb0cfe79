//go:build qemu

// These tests need bonding, 8021q, vrf, ipvlan and bridge VLAN filtering:
// they run in the qemu kernel lane (make test-kernel) only.

package conformance

import (
	"context"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestQemuExamples runs the Scenarios that need Debian's full kernel.
func TestQemuExamples(t *testing.T) {
	runLane(t, QemuLane, false, newNode)
}

// TestKnmstateBondVLANExample applies kubernetes-nmstate's bond-vlan
// policy (static addresses instead of DHCP) and removes it again.
func TestKnmstateBondVLANExample(t *testing.T) {
	cleanup, err := nmstate.Decode([]byte(bondVLANCleanup))
	if err != nil {
		t.Fatal(err)
	}
	states := []*nmstate.State{staticBondVLAN(t), cleanup}
	names := []string{bondVLANFile + " (static addresses)", "bond-vlan cleanup"}
	if err := runSteps(context.Background(), t, newNode(t), names, states); err != nil {
		t.Fatal(err)
	}
}

// TestKnmstateVRFNameExample applies kubernetes-nmstate's VRF e2e state
// whose route names its VRF with `vrf-name` (nmstate 2.2.55), checks the
// route is in the VRF's table 103, and removes the VRF again.
func TestKnmstateVRFNameExample(t *testing.T) {
	cleanup, err := nmstate.Decode([]byte(vrfNameCleanup))
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t)
	desired := policyState(t, vrfNameFile)
	if err := runSteps(context.Background(), t, n, []string{vrfNameFile}, []*nmstate.State{desired}); err != nil {
		t.Fatal(err)
	}
	st, err := n.backend.Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range st.Routes.Config {
		if r.Destination != nil && r.Destination.String() == "1.2.3.0/24" {
			found = r.TableID != nil && *r.TableID == 103 && r.NextHopInterface != nil && *r.NextHopInterface == "eth1"
		}
	}
	if !found {
		t.Fatalf("no route 1.2.3.0/24 dev eth1 in table 103 after the vrf-name policy: %+v", st.Routes.Config)
	}
	if err := runSteps(context.Background(), t, n, []string{"vrf-name cleanup"}, []*nmstate.State{cleanup}); err != nil {
		t.Fatal(err)
	}
}
