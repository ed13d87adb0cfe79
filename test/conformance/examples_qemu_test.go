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
	runLane(t, QemuLane)
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
