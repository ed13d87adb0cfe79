package handler

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

func waiting(e *enactment) bool {
	c := e.Status.Conditions.Find(extension.WaitingCondition)
	return c != nil && c.Status == condTrue
}

// createAfter creates a policy with knmstate.io/after.
func (n *polNode) createAfter(t *testing.T, name, after, desired string, selector map[string]string) *nmstatev1.NodeNetworkConfigurationPolicy {
	t.Helper()
	st, err := shared.NewState([]byte(desired))
	if err != nil {
		t.Fatal(err)
	}
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	p.Name = name
	p.Annotations = map[string]string{extension.AfterAnnotation: after}
	p.Spec = shared.NodeNetworkConfigurationPolicySpec{NodeSelector: selector, DesiredState: st}
	t.Cleanup(func() { _ = n.c.Delete(context.Background(), p) })
	if err := n.c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// B after A: B waits while A does not exist and while A is on its way,
// asks for no permit meanwhile, and is applied once A is Available.
func TestPolicyAfter(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	nstest.Veth(t, ns, "eth2", peer, "eth2p")
	n := newPolNode(t, "pol-after", ns.Path, map[string]string{"pol-after": "yes"})
	var mu sync.Mutex
	var order []string
	n.start(t, func(o *PolicyOptions) {
		o.OnApply = func(p string) { mu.Lock(); order = append(order, p); mu.Unlock() }
	})
	sel := map[string]string{"pol-after": "yes"}
	b := n.createAfter(t, "pol-after-b", "pol-after-a", staticAddr("eth2", "198.51.100.51/24"), sel)
	e := n.waitEnactment(t, b.Name, "Waiting", waiting)
	if msg := condition(e, extension.WaitingCondition).Message; msg != "waiting for policy pol-after-a (knmstate.io/after), which does not exist" {
		t.Errorf("Waiting message %q", msg)
	}
	a := n.createPolicy(t, "pol-after-a", staticAddr("eth1", "198.51.100.50/24"), sel, nil)
	n.waitEnactment(t, a.Name, "Pending", phaseIs(1, phasePending))
	e = n.waitEnactment(t, b.Name, "Waiting on A's progress", func(e *enactment) bool {
		return waiting(e) && strings.Contains(condition(e, extension.WaitingCondition).Message, "it is Pending here")
	})
	if phaseOf(&e.Status, 1) == phasePending {
		t.Error("B asks for a permit while waiting")
	}
	n.grant(t, a.Name, 1)
	n.waitEnactment(t, a.Name, "Available", phaseIs(1, phaseAvailable))
	n.waitEnactment(t, b.Name, "Pending once A is Available", phaseIs(1, phasePending))
	n.grant(t, b.Name, 1)
	e = n.waitEnactment(t, b.Name, "Available", phaseIs(1, phaseAvailable))
	if waiting(e) {
		t.Error("Waiting condition left on the applied policy")
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"pol-after-a", "pol-after-b"}, order); diff != "" {
		t.Errorf("applies (-want +got):\n%s", diff)
	}
}

// B after A, A failing on the node: B is never applied there and says why.
func TestPolicyAfterFailed(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth2", peer, "eth2p")
	n := newPolNode(t, "pol-afterf", ns.Path, map[string]string{"pol-afterf": "yes"})
	n.start(t, func(o *PolicyOptions) { o.MaxRetries = 1 })
	sel := map[string]string{"pol-afterf": "yes"}
	// eth9 does not exist on the node: A fails.
	a := n.createPolicy(t, "pol-afterf-a", staticAddr("eth9", "198.51.100.60/24"), sel, nil)
	b := n.createAfter(t, "pol-afterf-b", "pol-afterf-a", staticAddr("eth2", "198.51.100.61/24"), sel)
	n.waitEnactment(t, a.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, a.Name, 1)
	n.waitEnactment(t, a.Name, "Failed", phaseIs(1, phaseFailed))
	e := n.waitEnactment(t, b.Name, "Waiting: A failed", func(e *enactment) bool {
		return waiting(e) && condition(e, extension.WaitingCondition).Reason == extension.WaitingFailedReason
	})
	msg := condition(e, extension.WaitingCondition).Message
	if !strings.HasPrefix(msg, "not applied: policy pol-afterf-a (knmstate.io/after) is Failed on this node: ") || !strings.Contains(msg, "eth9") {
		t.Errorf("Waiting message %q, want A's failure", msg)
	}
	if n.applies.Load() != 1 || hasAddress(n.show(t), "eth2", "198.51.100.61") {
		t.Errorf("%d applies (want A's only); B applied: %v", n.applies.Load(), hasAddress(n.show(t), "eth2", "198.51.100.61"))
	}
}
