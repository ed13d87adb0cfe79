//go:build qemu

// The qemu lane's scenarios through NetworkManager on Debian's kernel,
// with the same checks as on the kernel backend (runSteps: Verify, the
// fixed point, the direct netlink look) plus NetworkManager's own view
// of each interface (checkNM), so a pass cannot come from the kernel
// touch-up alone.

package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestQemuExamplesNetworkManager runs the Scenarios that need Debian's
// full kernel through NetworkManager. The OVS ones need NetworkManager's
// Open vSwitch (ovs_qemu_test.go runs them on the OVS backend), and the
// netdevsim NIC is the kernel node's only (newNodeWith).
func TestQemuExamplesNetworkManager(t *testing.T) {
	ran := 0
	for _, s := range Scenarios {
		if s.Lane != QemuLane || s.OVS || s.NoNM != "" || s.NMBy != "" || s.NIC != "" {
			continue
		}
		ran++
		if s.NMKnown != "" {
			s.Known = s.NMKnown
		}
		newNode := newNMNode
		if strings.Contains(s.Needs, "wpa_supplicant") {
			// NetworkManager drives MKA through its own wpa_supplicant.
			newNode = func(t *testing.T) *node { return newNMNodeWith(t, nmrun.Options{Supplicant: true}) }
		}
		t.Run(s.Name, func(t *testing.T) { runScenarioOn(t, s, newNode) })
	}
	if ran == 0 {
		t.Fatal("no qemu lane scenario for NetworkManager")
	}
}

// TestKnmstateBondVLANExampleNetworkManager is TestKnmstateBondVLANExample
// through NetworkManager.
func TestKnmstateBondVLANExampleNetworkManager(t *testing.T) {
	cleanup, err := nmstate.Decode([]byte(bondVLANCleanup))
	if err != nil {
		t.Fatal(err)
	}
	states := []*nmstate.State{staticBondVLAN(t), cleanup}
	names := []string{bondVLANFile + " (static addresses)", "bond-vlan cleanup"}
	expect(t, "", runSteps(context.Background(), t, newNMNode(t), names, states))
}

// TestKnmstateVRFNameExampleNetworkManager is the vrf-name policy of
// TestKnmstateVRFNameExample through NetworkManager: the route lands in
// the VRF's table 103.
func TestKnmstateVRFNameExampleNetworkManager(t *testing.T) {
	cleanup, err := nmstate.Decode([]byte(vrfNameCleanup))
	if err != nil {
		t.Fatal(err)
	}
	n := newNMNode(t)
	desired := policyState(t, vrfNameFile)
	err = runSteps(context.Background(), t, n, []string{vrfNameFile, "vrf-name cleanup"}, []*nmstate.State{desired, cleanup})
	expect(t, "", err)
}
