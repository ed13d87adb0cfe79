package bench

import (
	"context"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

func testOVSNode(t *testing.T) *ovsNode {
	t.Helper()
	n, err := newOVSNode(context.Background(), Options{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.close(); err != nil {
			t.Errorf("removing the OVS node: %v", err)
		}
	})
	return n
}

// ovsSummary is what both sides of the OVS comparison must make: each
// interface's name, type, controller and IPv4 addresses.
func ovsSummary(s *nmstate.State) []string {
	var out []string
	for _, i := range s.Interfaces {
		if i.Name == "lo" {
			continue
		}
		ctrl := ""
		if i.Controller != nil {
			ctrl = *i.Controller
		}
		var addrs []string
		if i.IPv4 != nil {
			for _, a := range i.IPv4.Address {
				addrs = append(addrs, a.Prefix().String())
			}
		}
		out = append(out, i.Name+" "+string(i.Type)+" "+ctrl+" "+strings.Join(addrs, ","))
	}
	sort.Strings(out)
	return out
}

// The baseline (one ovs-vsctl transaction + ip -batch) makes what our
// apply makes: the same shown state, and planning the workload's state
// against the baseline's node gives an empty plan.
func TestOVSWorkloadBaselineMakesTheSameState(t *testing.T) {
	w, err := OVSBridges(10)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ours, theirs := testOVSNode(t), testOVSNode(t)
	b, closeB, err := ours.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeB()
	if _, err := apply.Apply(ctx, b, w.State.Clone(), apply.Options{StateDir: t.TempDir(), VerifyInterval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	file, err := writeBatch(t.TempDir(), w.Name, w.Batch)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ovs-vsctl", append([]string{"--db=" + theirs.ovs.Address}, w.Vsctl...)...).CombinedOutput(); err != nil {
		t.Fatalf("ovs-vsctl: %v: %s", err, out)
	}
	if err := theirs.ns.batch(ctx, file); err != nil {
		t.Fatal(err)
	}
	tb, closeT, err := theirs.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeT()
	got, err := b.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tb.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ovsSummary(want), ovsSummary(got)); diff != "" {
		t.Errorf("engine vs ovs-vsctl + ip -batch (-baseline +engine):\n%s", diff)
	}
	if n := len(ovsSummary(got)); n != 20 {
		t.Errorf("%d interfaces shown, want 10 bridges and 10 internal interfaces", n)
	}
	res, err := apply.Apply(ctx, tb, w.State.Clone(), apply.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Plan.Empty() {
		t.Errorf("the baseline's node differs from the workload's state; planning gives:\n%s", res.Plan)
	}
}
