package handler

import (
	"context"
	"testing"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// RunPolicies is what the handler's Run starts: options from the handler's
// own, the manager, the reconciler; it returns nil when stopped.
func TestRunPolicies(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-run", ns.Path, map[string]string{"pol-run": "yes"})
	log := testr.NewWithOptions(t, testr.Options{})
	opts := PolicyOptionsFor(Options{Node: n.name, NetNS: n.nsPath, StateDir: n.stateDir, Log: log},
		PolicySettings{NoProbes: true}, n.backend, env.Config)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunPolicies(ctx, env.Config, opts, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunPolicies: %v", err)
		}
	})
	p := n.createPolicy(t, "pol-run", staticAddr("eth1", "198.51.100.70/24"), map[string]string{"pol-run": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	if !hasAddress(n.show(t), "eth1", "198.51.100.70") {
		t.Error("eth1 lacks 198.51.100.70")
	}
}

// The handler's Run (NodeNetworkState reporter and policies together).
func TestRunWithPolicies(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-handler", ns.Path, map[string]string{"pol-handler": "yes"})
	t.Cleanup(func() {
		_ = n.c.Delete(context.Background(), &nmstatev1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: n.name}})
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Node: n.name, Config: env.Config, NetNS: n.nsPath, StateDir: n.stateDir,
			Log: testr.NewWithOptions(t, testr.Options{}), Policy: PolicySettings{NoProbes: true}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	p := n.createPolicy(t, "pol-handler", staticAddr("eth1", "198.51.100.71/24"), map[string]string{"pol-handler": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	if !hasAddress(n.show(t), "eth1", "198.51.100.71") {
		t.Error("eth1 lacks 198.51.100.71")
	}
	nns := &nmstatev1beta1.NodeNetworkState{}
	if err := n.c.Get(context.Background(), client.ObjectKey{Name: n.name}, nns); err != nil {
		t.Errorf("NodeNetworkState: %v", err)
	}
}
