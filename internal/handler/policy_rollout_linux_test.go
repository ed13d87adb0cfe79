package handler

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr/testr"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/controller"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// The handler's side of docs/rollout.md against the real controller: three
// nodes, maxUnavailable 1.
func TestPolicyRolloutWithController(t *testing.T) {
	var nodes []*polNode
	for i := 1; i <= 3; i++ {
		ns := nstest.New(t)
		peer := nstest.New(t)
		nstest.Veth(t, ns, "eth1", peer, "eth1p")
		n := newPolNode(t, fmt.Sprintf("e2e-%d", i), ns.Path, map[string]string{"e2e-rollout": "yes"})
		// The NodeNetworkState tells the controller a handler runs there
		// (the reporter's job, not running in this test).
		nns := &nmstatev1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: n.name}}
		t.Cleanup(func() {
			if err := n.c.Delete(context.Background(), nns); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: %v", err)
			}
		})
		if err := n.c.Create(context.Background(), nns); err != nil {
			t.Fatal(err)
		}
		n.start(t, func(o *PolicyOptions) { o.MaxRetries = 1 })
		nodes = append(nodes, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(ctx, env.Config, controller.Options{Logger: testr.NewWithOptions(t, testr.Options{})})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	one := intstr.FromInt32(1)
	sel := map[string]string{"e2e-rollout": "yes"}
	c := nodes[0].c

	waitPolicy := func(name string, ct shared.ConditionType) *nmstatev1.NodeNetworkConfigurationPolicy {
		t.Helper()
		deadline := time.Now().Add(2 * hangGuard)
		p := &nmstatev1.NodeNetworkConfigurationPolicy{}
		for time.Now().Before(deadline) {
			if err := c.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
				t.Fatal(err)
			}
			if cd := p.Status.Conditions.Find(ct); cd != nil && cd.Status == corev1.ConditionTrue {
				return p
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("policy %s not %s: %+v", name, ct, p.Status.Conditions)
		return nil
	}

	create := func(name, desired string) *nmstatev1.NodeNetworkConfigurationPolicy {
		t.Helper()
		p := &nmstatev1.NodeNetworkConfigurationPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       shared.NodeNetworkConfigurationPolicySpec{NodeSelector: sel, MaxUnavailable: &one, DesiredState: mustState(t, desired)},
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), p) })
		if err := c.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	create("e2e-ok", staticAddr("eth1", "198.51.100.80/24"))
	p := waitPolicy("e2e-ok", shared.NodeNetworkConfigurationPolicyConditionAvailable)
	if msg := p.Status.Conditions.Find(shared.NodeNetworkConfigurationPolicyConditionAvailable).Message; msg != "3/3 nodes successfully configured" {
		t.Errorf("Available message %q", msg)
	}
	for _, n := range nodes {
		if !hasAddress(n.show(t), "eth1", "198.51.100.80") {
			t.Errorf("%s lacks 198.51.100.80", n.name)
		}
	}

	bad := create("e2e-bad", "interfaces:\n- name: eth9\n  type: ethernet\n  state: up\n")
	waitPolicy("e2e-bad", shared.NodeNetworkConfigurationPolicyConditionDegraded)
	// With maxUnavailable 1, one node fails and the other two abort.
	deadline := time.Now().Add(hangGuard)
	for {
		phases := map[enactmentPhase]int{}
		for _, n := range nodes {
			if e := n.enactment(t, "e2e-bad"); e != nil {
				phases[phaseOf(&e.Status, bad.Generation)]++
			}
		}
		if phases[phaseFailed] == 1 && phases[phaseAborted] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("phases %v, want 1 Failed and 2 Aborted", phases)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var applies int32
	for _, n := range nodes {
		applies += n.applies.Load()
	}
	if applies != 3+1 {
		t.Errorf("%d applies, want 3 (e2e-ok) + 1 (e2e-bad)", applies)
	}
}
