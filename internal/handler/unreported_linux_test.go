package handler

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// TestPolicyUnreportedOutcomeToldFirst: the handler's term ends while it
// applies (its node lock lost: the term's context is cancelled, as when
// the node is cut off from the API server). The apply's outcome cannot be
// written then; it is kept in the state directory, and the next term
// writes it first, so the enactment tells what happened to that apply.
func TestPolicyUnreportedOutcomeToldFirst(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	labels := map[string]string{"pol-unrep": "yes"}
	n := newPolNode(t, "pol-unrep", ns.Path, labels)
	h := n.record(t, "pol-unrep")
	var stop func()
	stopping := make(chan struct{})
	stop = n.start(t, func(o *PolicyOptions) {
		o.OnApply = func(string) {
			n.applies.Add(1)
			// The term ends under the apply (stop waits for it: not here).
			go func() { stop(); close(stopping) }()
			time.Sleep(200 * time.Millisecond)
		}
	})
	p := n.createPolicy(t, "pol-unrep", staticAddr("eth1", "198.51.100.31/24"), labels, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	<-stopping
	r := &PolicyReconciler{opts: PolicyOptions{StateDir: n.stateDir}}
	kept, err := r.takeUnreported(p.Name)
	if err != nil || kept == nil {
		t.Fatalf("the outcome of the apply whose term ended was not kept: %+v, %v (phases %v)", kept, err, h.phases(1))
	}
	if got := phaseOf(&n.enactment(t, p.Name).Status, 1); got != phaseProgressing {
		t.Fatalf("after the term ended the enactment is %v, want Progressing (its outcome unwritten)", got)
	}
	t.Logf("kept: %+v", *kept)

	n.start(t, nil)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	// The kept outcome was written as it was, before anything else.
	told := h.find(func(e *enactment) bool {
		if kept.Outcome == outcomeAvailable {
			return phaseOf(&e.Status, 1) == phaseAvailable
		}
		return phaseOf(&e.Status, 1) == phaseRetrying &&
			condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing).Message == kept.Message
	})
	if told == nil {
		t.Errorf("the kept %s outcome was never written: phases %v", kept.Outcome, h.phases(1))
	}
	if _, err := os.Stat(r.unreportedPath(p.Name)); !os.IsNotExist(err) {
		t.Errorf("the kept outcome is still there once written (stat: %v)", err)
	}
}

// TestPolicyUnreportedOutcomeNotOverNewer: a kept outcome is written only
// while the enactment still shows its apply under way; over anything else
// (here a fresh enactment, Pending) it is dropped, not written.
func TestPolicyUnreportedOutcomeNotOverNewer(t *testing.T) {
	ns := nstest.New(t)
	labels := map[string]string{"pol-unrep-old": "yes"}
	n := newPolNode(t, "pol-unrep-old", ns.Path, labels)
	r := &PolicyReconciler{opts: PolicyOptions{StateDir: n.stateDir}}
	if err := r.keepUnreported("pol-unrep-old", unreported{Generation: 1, Outcome: outcomeRetrying, RetryCount: 1, Message: "old", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h := n.record(t, "pol-unrep-old")
	n.start(t, nil)
	p := n.createPolicy(t, "pol-unrep-old", staticAddr("lo", "198.51.100.32/32"), labels, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	deadline := time.Now().Add(hangGuard)
	for _, err := os.Stat(r.unreportedPath(p.Name)); !os.IsNotExist(err); _, err = os.Stat(r.unreportedPath(p.Name)) {
		if time.Now().After(deadline) {
			t.Fatalf("the kept outcome was not dropped (stat: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if old := h.find(func(e *enactment) bool { return phaseOf(&e.Status, 1) == phaseRetrying }); old != nil {
		t.Errorf("an outcome kept from before was written over the fresh enactment: %+v", old.Status.Conditions)
	}
}

// TestUnreportedKeepTakeDrop: the kept outcome round-trips through its
// file; a torn file is dropped.
func TestUnreportedKeepTakeDrop(t *testing.T) {
	r := &PolicyReconciler{opts: PolicyOptions{StateDir: t.TempDir()}}
	if u, err := r.takeUnreported("p"); u != nil || err != nil {
		t.Fatalf("nothing kept: %+v, %v", u, err)
	}
	at := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	want := unreported{Generation: 4, Outcome: outcomeFailed, RetryCount: 3, Message: "m", At: at}
	if err := r.keepUnreported("p", want); err != nil {
		t.Fatal(err)
	}
	u, err := r.takeUnreported("p")
	if err != nil || u == nil || *u != want {
		t.Fatalf("taken %+v, %v; want %+v", u, err, want)
	}
	if err := r.dropUnreported("p"); err != nil {
		t.Fatal(err)
	}
	if u, err := r.takeUnreported("p"); u != nil || err != nil {
		t.Errorf("after drop: %+v, %v", u, err)
	}
	if err := os.WriteFile(r.unreportedPath("p"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if u, err := r.takeUnreported("p"); u != nil || err == nil {
		t.Errorf("torn file: %+v, %v; want an error", u, err)
	}
	if _, err := os.Stat(r.unreportedPath("p")); !os.IsNotExist(err) {
		t.Errorf("torn file kept (stat: %v)", err)
	}
}

// TestReportOutcomeKeptWhenTermEnded: a term that ends (the node lock lost
// while the apply ran, so its context is cancelled) cannot write the
// apply's outcome; the write says so and the outcome is kept for the next
// term. Regression: retry.OnError reported such a write as done.
func TestReportOutcomeKeptWhenTermEnded(t *testing.T) {
	c := polClient(t)
	ctx := context.Background()
	e := &enactment{ObjectMeta: metav1.ObjectMeta{Name: "unrep-node.term-ended"}}
	if err := c.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(ctx, e); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: %v", err)
		}
	})
	r := &PolicyReconciler{client: c, log: logr.Discard(), opts: PolicyOptions{StateDir: t.TempDir()}}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	u := unreported{Generation: 1, Outcome: outcomeRetrying, RetryCount: 1, Message: "probe api-server: timed out", At: time.Now().UTC().Truncate(time.Second)}
	if err := r.reportOutcome(ended, e, "term-ended", rendered{}, u); err == nil {
		t.Fatal("reportOutcome with the term's context ended: no error")
	}
	got := &enactment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(e), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 0 {
		t.Errorf("written although the term had ended: %+v", got.Status.Conditions)
	}
	kept, err := r.takeUnreported("term-ended")
	if err != nil || kept == nil || *kept != u {
		t.Errorf("kept %+v, %v; want %+v", kept, err, u)
	}
}
