package handler

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

func TestPolicyStaticAddressLifecycle(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-static", ns.Path, map[string]string{"pol-static": "yes"})
	m := newTestMetrics(t)
	withMetrics := func(o *PolicyOptions) { o.Metrics = m.Handler }
	stop1 := n.start(t, withMetrics)

	// Count the API writes to the enactment (one watch event each).
	// From resourceVersion 0, not "now" (see watchNNS).
	w, err := n.c.Watch(context.Background(), &enactmentList{}, client.MatchingLabels{shared.EnactmentNodeLabel: n.name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var writes []string // of pol-static's enactment: event type and phase
	writesDone := make(chan struct{})
	go func() {
		defer close(writesDone)
		for ev := range w.ResultChan() {
			if e, ok := ev.Object.(*enactment); ok && e.Name == shared.EnactmentName(n.name, "pol-static") {
				writes = append(writes, string(ev.Type)+" "+phaseOf(&e.Status, 1).String())
			}
		}
	}()

	p := n.createPolicy(t, "pol-static", staticAddr("eth1", "198.51.100.10/24"), map[string]string{"pol-static": "yes"}, nil)
	e := n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))

	// Labels, owner, five conditions with upstream's Pending row.
	if diff := cmp.Diff(map[string]string{shared.EnactmentPolicyLabel: p.Name, shared.EnactmentNodeLabel: n.name}, e.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	var nodeOwner *metav1.OwnerReference
	for i := range e.OwnerReferences {
		if e.OwnerReferences[i].Kind == "Node" {
			nodeOwner = &e.OwnerReferences[i]
		}
	}
	if nodeOwner == nil || nodeOwner.UID != n.uid || nodeOwner.Name != n.name {
		t.Errorf("owner references %+v, want the Node %s (%s)", e.OwnerReferences, n.name, n.uid)
	}
	type cond struct {
		Type    shared.ConditionType
		Status  corev1.ConditionStatus
		Reason  shared.ConditionReason
		Message string
	}
	conds := func(e *enactment) []cond {
		var out []cond
		for _, c := range e.Status.Conditions {
			out = append(out, cond{c.Type, c.Status, c.Reason, c.Message})
		}
		return out
	}
	const wait = "Waiting for progressing nodes to finish"
	want := []cond{
		{"Available", "False", "MaxUnavailableLimitReached", ""},
		{"Failing", "False", "MaxUnavailableLimitReached", ""},
		{"Progressing", "False", "MaxUnavailableLimitReached", wait},
		{"Pending", "True", "MaxUnavailableLimitReached", wait},
		{"Aborted", "False", "MaxUnavailableLimitReached", ""},
	}
	if diff := cmp.Diff(want, conds(e)); diff != "" {
		t.Errorf("pending conditions (-want +got):\n%s", diff)
	}
	if hasAddress(n.show(t), "eth1", "198.51.100.10") {
		t.Fatal("address applied before the permit")
	}
	if got := n.applies.Load(); got != 0 {
		t.Fatalf("%d applies before the permit", got)
	}

	granted := time.Now()
	n.grant(t, p.Name, 1)
	e = n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	t.Logf("permit to Available: %v", time.Since(granted))
	want = []cond{
		{"Available", "True", "SuccessfullyConfigured", "successfully reconciled"},
		{"Failing", "False", "SuccessfullyConfigured", ""},
		{"Progressing", "False", "SuccessfullyConfigured", ""},
		{"Pending", "False", "SuccessfullyConfigured", ""},
		{"Aborted", "False", "SuccessfullyConfigured", ""},
	}
	if diff := cmp.Diff(want, conds(e)); diff != "" {
		t.Errorf("available conditions (-want +got):\n%s", diff)
	}
	if !hasAddress(n.show(t), "eth1", "198.51.100.10") {
		t.Error("eth1 lacks 198.51.100.10 after Available")
	}
	if e.Status.DesiredState.IsZero() {
		t.Error("status.desiredState is empty")
	}
	if e.Annotations[rollout.PermitAnnotation] != "1" {
		t.Errorf("permit annotation %q lost by the handler's writes", e.Annotations[rollout.PermitAnnotation])
	}
	if got := n.applies.Load(); got != 1 {
		t.Errorf("%d applies, want 1", got)
	}

	// A restarted handler finds the policy applied: no apply, no write.
	stop1()
	stop2 := n.start(t, withMetrics)
	// The node's labels change too: every policy is reconciled again.
	node := &corev1.Node{}
	if err := n.c.Get(context.Background(), client.ObjectKey{Name: n.name}, node); err != nil {
		t.Fatal(err)
	}
	node.Labels["unrelated"] = "x"
	if err := n.c.Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	// Wait until the new reconciler has certainly looked at the policy: a
	// second policy created after the label change gets its enactment.
	other := n.createPolicy(t, "pol-static-z", staticAddr("eth1", "198.51.100.11/24"), map[string]string{"pol-static": "yes"}, nil)
	n.waitEnactment(t, other.Name, "Pending", phaseIs(1, phasePending))
	// The watch can show that Pending before the handler's patch returns
	// and is counted; stopping then cancels the request and the write goes
	// uncounted (a CI run saw 3).
	m.waitValue(t, 10*time.Second, "knmstate_handler_enactment_status_writes_total", 4, "node", n.name)
	stop2()
	if got := n.applies.Load(); got != 1 {
		t.Errorf("%d applies after restart and label change, want still 1", got)
	}
	w.Stop()
	<-writesDone
	// create, Pending, Progressing, Available, the controller's (here the
	// test's) permit; nothing after the restart.
	wantWrites := []string{"ADDED Unknown", "MODIFIED Pending", "MODIFIED Pending", "MODIFIED Progressing", "MODIFIED Available"}
	if diff := cmp.Diff(wantWrites, writes); diff != "" {
		t.Errorf("writes to the enactment (-want +got):\n%s", diff)
	}
	t.Logf("API writes to the enactment for one apply: %d (%v)", len(writes), writes)
	// The metrics say the same: one successful apply; status writes:
	// Pending, Progressing, Available, and pol-static-z's Pending.
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"knmstate_handler_apply_duration_seconds", []string{"node", n.name, "result", "success"}, 1},
		{"knmstate_handler_apply_duration_seconds", []string{"node", n.name}, 1},
		{"knmstate_handler_enactment_status_writes_total", []string{"node", n.name}, 4},
		{"knmstate_handler_rollbacks_total", nil, 0},
	} {
		if got := m.value(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
