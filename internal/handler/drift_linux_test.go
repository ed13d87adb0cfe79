package handler

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

const driftBridge = `interfaces:
- name: br-drift
  type: linux-bridge
  state: up
  ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.30, prefix-length: 24}]}
  ipv6: {enabled: false}
  bridge: {options: {stp: {enabled: false}}, port: []}
`

// driftWatch follows the node's enactment of a policy through the API's
// watch, so the moment a condition appears is seen as the API delivers
// it, not at a poll's next tick.
type driftWatch struct {
	w    watch.Interface
	name string
}

func (n *polNode) watchEnactment(t *testing.T, policy string) *driftWatch {
	t.Helper()
	w, err := n.c.Watch(context.Background(), &enactmentList{}, client.MatchingLabels{shared.EnactmentNodeLabel: n.name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &driftWatch{w: w, name: shared.EnactmentName(n.name, policy)}
}

// until returns the first version of the enactment for which ok holds.
func (d *driftWatch) until(t *testing.T, what string, ok func(*enactment) bool) *enactment {
	t.Helper()
	timeout := time.After(hangGuard)
	for {
		select {
		case ev, open := <-d.w.ResultChan():
			if !open {
				t.Fatalf("enactment watch closed while waiting for %s", what)
			}
			if e, isE := ev.Object.(*enactment); isE && e.Name == d.name && ok(e) {
				return e
			}
		case <-timeout:
			t.Fatalf("enactment %s: %s not seen within %v", d.name, what, hangGuard)
		}
	}
}

func driftReported(e *enactment) bool {
	c := e.Status.Conditions.Find(extension.DriftedCondition)
	return c != nil && c.Status == condTrue
}

// Drift detection: deleting the policy's bridge is reported on the
// enactment from the kernel's event (not a poll), with what differs; the
// policy is not applied again. With knmstate.io/enforce it is applied
// again, each repair counted.
func TestPolicyDrift(t *testing.T) {
	ns := nstest.New(t)
	n := newPolNode(t, "pol-drift", ns.Path, map[string]string{"pol-drift": "yes"})
	m := newTestMetrics(t)
	n.start(t, func(o *PolicyOptions) { o.Watch = n.backend.Watch; o.Metrics = m.Handler })
	p := n.createPolicy(t, "pol-drift", driftBridge, map[string]string{"pol-drift": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))

	delBridge := func() time.Time {
		t.Helper()
		l, err := ns.Netlink.LinkByName("br-drift")
		if err != nil {
			t.Fatalf("br-drift: %v", err)
		}
		at := time.Now()
		if err := ns.Netlink.LinkDel(l); err != nil {
			t.Fatal(err)
		}
		return at
	}
	w := n.watchEnactment(t, p.Name)
	deleted := delBridge()
	e := w.until(t, "Drifted", driftReported)
	t.Logf("FIGURE drift: ip link del → enactment Drifted in %v", time.Since(deleted).Round(time.Millisecond))
	msg := condition(e, extension.DriftedCondition).Message
	if !strings.Contains(msg, "br-drift") {
		t.Errorf("Drifted message %q does not name br-drift", msg)
	}
	if phaseOf(&e.Status, 1) != phaseAvailable {
		t.Errorf("phase %v after drift, want Available (kept, with Drifted)", phaseOf(&e.Status, 1))
	}
	// Counted right after the report is written: the watch may show the
	// report first.
	waitMetric(t, m, 1, "knmstate_handler_drifts_total", "node", n.name)
	if got := n.applies.Load(); got != 1 {
		t.Errorf("%d applies after a drift without enforce, want 1", got)
	}
	if _, err := ns.Netlink.LinkByName("br-drift"); err == nil {
		t.Error("br-drift is back without knmstate.io/enforce")
	}

	// Enforce: the annotation wakes the reconciler, which repairs.
	n.setAnnotation(t, p, extension.EnforceAnnotation, "true")
	e = w.until(t, "repaired", func(e *enactment) bool { return !driftReported(e) && phaseOf(&e.Status, 1) == phaseAvailable })
	if _, err := ns.Netlink.LinkByName("br-drift"); err != nil {
		t.Fatalf("br-drift not repaired: %v", err)
	}
	// From now on the kernel event alone brings the repair. Polled, not
	// watched: a loaded machine can let the enactment's own reconcile see
	// the missing bridge and re-apply before a drift report is written,
	// and such a repair writes nothing (the enactment stays Available), so
	// no watch event would tell it.
	for i := 2; i <= 3; i++ {
		before := n.applies.Load()
		deleted = delBridge()
		deadline := time.Now().Add(hangGuard)
		for {
			if n.applies.Load() > before && hasAddress(n.show(t), "br-drift", "198.51.100.30") {
				if e = n.enactment(t, p.Name); !driftReported(e) && phaseOf(&e.Status, 1) == phaseAvailable {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("repair %d: br-drift not back with its address and the enactment Available without Drifted within %v (applies %d, was %d)",
					i, hangGuard, n.applies.Load(), before)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("FIGURE drift: ip link del → repaired (Available) in %v, repair %d", time.Since(deleted).Round(time.Millisecond), i)
	}
	waitMetric(t, m, 3, "knmstate_handler_drift_repairs_total", "node", n.name, "result", "success")
	// Each deletion is counted as a drift when the drift check saw it
	// first; the enactment's reconcile may re-apply first (above), so
	// between the first report and one per deletion.
	if got := m.value(t, "knmstate_handler_drifts_total", "node", n.name); got < 1 || got > 3 {
		t.Errorf("knmstate_handler_drifts_total = %v, want 1..3 (one per deletion at most)", got)
	}
	if e.Status.Conditions.Find(extension.DriftedCondition) != nil {
		t.Errorf("Drifted condition left after the repair: %+v", e.Status.Conditions)
	}
}

// waitMetric waits until a metric has the value want; reaching hangGuard
// is a failure.
func waitMetric(t *testing.T, m testMetrics, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		got := m.value(t, name, labels...)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
