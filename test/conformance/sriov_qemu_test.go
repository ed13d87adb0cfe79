//go:build qemu

package conformance

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// sriovPolicy asks for the day-2 change of kubernetes-nmstate's SR-IOV
// story: four VFs, two of them configured.
const sriovPolicy = `interfaces:
- name: eth1
  type: ethernet
  state: up
  ethernet:
    sr-iov:
      total-vfs: 4
      vfs:
      - {id: 0, mac-address: "02:00:00:00:01:00", vlan-id: 100, trust: true, max-tx-rate: 100}
      - {id: 1, mac-address: "02:00:00:00:01:01", vlan-id: 200, qos: 3, trust: true, max-tx-rate: 200}
`

// TestSRIOVApplyShowRollback: on a netdevsim NIC that already has two VFs
// (VF 0 with a MAC of its own), the policy applies and verifies, Show
// reports the VFs as nmstate does (sr-iov in the ethernet section), and a
// rollback restores the VF count and VF 0's settings.
func TestSRIOVApplyShowRollback(t *testing.T) {
	ctx := context.Background()
	n := newNodeWith(t, NICNetdevsim)
	// The starting point, set up behind the backend's back: 2 VFs, VF 0
	// with a MAC.
	l, err := n.ns.Netlink.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Attrs()
	if err := os.WriteFile(filepath.Join("/sys/bus", a.ParentDevBus, "devices", a.ParentDev, "sriov_numvfs"), []byte("2"), 0); err != nil {
		t.Fatalf("setting 2 VFs: %v", err)
	}
	before, _ := net.ParseMAC("02:00:00:00:00:aa")
	if err := n.ns.Netlink.LinkSetVfHardwareAddr(l, 0, before); err != nil {
		t.Fatal(err)
	}
	start := showEth1(ctx, t, n)
	if got := len(start.SRIOV.VFs); got != 2 || *start.SRIOV.TotalVFs != 2 {
		t.Fatalf("before: %d VFs reported, total-vfs %v; want 2", got, *start.SRIOV.TotalVFs)
	}

	desired, err := nmstate.Decode([]byte(sriovPolicy))
	if err != nil {
		t.Fatal(err)
	}
	opts := n.options()
	opts.NoCommit = true
	res, err := apply.Apply(ctx, n.backend, desired.Clone(), opts)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	t.Logf("plan:\n%s", res.Plan)
	cur, err := n.backend.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := nmstate.Verify(desired, cur); err != nil {
		t.Errorf("verify against a fresh show: %v", err)
	}
	if c, err := netdevsimVFCount(n.ns, "eth1"); err != nil || c != 4 {
		t.Errorf("netlink lists %d VFs (%v), want 4", c, err)
	}
	// The NNS form: what the handler reports, encoded as nmstate does.
	eth1 := cur.FindTyped("eth1", nmstate.TypeEthernet)
	y, err := nmstate.EncodeYAML(&nmstate.State{Interfaces: []nmstate.Interface{*eth1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("eth1 after the apply:\n%s", y)
	for _, want := range []string{"sr-iov:", "total-vfs: 4", "mac-address: 02:00:00:00:01:01", "vlan-id: 200", "qos: 3", "trust: true", "max-tx-rate: 200"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("reported eth1 lacks %q", want)
		}
	}

	if _, err := apply.Rollback(ctx, n.backend, n.stateDir); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	end := showEth1(ctx, t, n)
	if diff := cmp.Diff(start, end); diff != "" {
		t.Errorf("after the rollback, eth1's ethernet section differs from before (-before +after):\n%s", diff)
	}
	if c, err := netdevsimVFCount(n.ns, "eth1"); err != nil || c != 2 {
		t.Errorf("after the rollback netlink lists %d VFs (%v), want 2", c, err)
	}
}

// showEth1 is the ethernet section the backend reports for eth1.
func showEth1(ctx context.Context, t *testing.T, n *node) nmstate.Ethernet {
	t.Helper()
	st, err := n.backend.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eth1 := st.FindTyped("eth1", nmstate.TypeEthernet)
	if eth1 == nil || eth1.Ethernet == nil || eth1.Ethernet.SRIOV == nil {
		t.Fatalf("eth1 has no sr-iov section: %+v", eth1)
	}
	return *eth1.Ethernet
}
