package handler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// Revert on delete: two generations of a policy (a bridge, then eth1 as
// its port with another MTU) are undone when the policy is deleted, newest
// first, and the node is as before the policy; the enactment says so. The
// test plays the controller: it adds the finalizer and removes it once
// the node has reported.
func TestPolicyRevertOnDelete(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-revert", ns.Path, map[string]string{"pol-revert": "yes"})
	n.start(t, nil)
	before := stateYAML(t, n.show(t))

	st, err := shared.NewState([]byte(`interfaces:
- name: br-rev
  type: linux-bridge
  state: up
  ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.40, prefix-length: 24}]}
  ipv6: {enabled: false}
  bridge: {options: {stp: {enabled: false}}, port: []}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	p.Name = "pol-revert"
	p.Annotations = map[string]string{extension.RevertOnDeleteAnnotation: "true"}
	p.Finalizers = []string{extension.RevertFinalizer}
	p.Spec = shared.NodeNetworkConfigurationPolicySpec{NodeSelector: map[string]string{"pol-revert": "yes"}, DesiredState: st}
	t.Cleanup(func() {
		fresh := &nmstatev1.NodeNetworkConfigurationPolicy{}
		if err := n.c.Get(context.Background(), client.ObjectKeyFromObject(p), fresh); err == nil && len(fresh.Finalizers) > 0 {
			fresh.Finalizers = nil
			_ = n.c.Update(context.Background(), fresh)
		}
		_ = n.c.Delete(context.Background(), p)
	})
	if err := n.c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))

	// Generation 2: eth1 becomes br-rev's port, with MTU 1280. As the
	// controller, the policy is Available first (the admission policy
	// refuses spec changes of a policy in progress).
	if err := n.c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions.SetAt(time.Now(), shared.NodeNetworkConfigurationPolicyConditionAvailable, corev1.ConditionTrue,
		shared.NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured, "")
	if err := n.c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	p.Spec.DesiredState, err = shared.NewState([]byte(`interfaces:
- name: eth1
  type: veth
  state: up
  mtu: 1280
- name: br-rev
  type: linux-bridge
  state: up
  ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.40, prefix-length: 24}]}
  ipv6: {enabled: false}
  bridge: {options: {stp: {enabled: false}}, port: [{name: eth1, vlan: {}}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	n.waitEnactment(t, p.Name, "Pending gen 2", phaseIs(2, phasePending))
	n.grant(t, p.Name, 2)
	n.waitEnactment(t, p.Name, "Available gen 2", phaseIs(2, phaseAvailable))
	if eth1 := n.show(t).Find("eth1"); len(eth1) != 1 || eth1[0].Controller == nil || *eth1[0].Controller != "br-rev" {
		t.Fatalf("eth1 after generation 2: %+v", eth1)
	}

	if err := n.c.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	e := n.waitEnactment(t, p.Name, "Reverted", func(e *enactment) bool { return e.Status.Conditions.Find(extension.RevertedCondition) != nil })
	c := condition(e, extension.RevertedCondition)
	if c.Status != condTrue || c.Message != "reverted the 2 applies of the policy on this node" {
		t.Errorf("Reverted condition %+v", c)
	}
	if after := stateYAML(t, n.show(t)); after != before {
		t.Errorf("node after the revert (-before +after):\n%s", cmp.Diff(before, after))
	}
	if rec, err := (&PolicyReconciler{opts: PolicyOptions{StateDir: n.stateDir}}).readRevert(p.Name); err != nil || rec != nil {
		t.Errorf("the record is left after the revert: %+v, %v", rec, err)
	}
	// As the controller: the node has reported, the policy may go.
	if err := n.c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == extension.RevertFinalizer })
	if err := n.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if n.applies.Load() != 4 {
		t.Errorf("%d applies, want 4 (two generations, two reverts)", n.applies.Load())
	}
}

// A policy applied before it had the annotation has nothing recorded: the
// node reports that and changes nothing.
func TestPolicyRevertOnDeleteNothingRecorded(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-norec", ns.Path, map[string]string{"pol-norec": "yes"})
	n.start(t, nil)
	// Applied without the annotation: nothing is recorded.
	p := n.createPolicy(t, "pol-norec", staticAddr("eth1", "198.51.100.41/24"), map[string]string{"pol-norec": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	if err := n.c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.Annotations = map[string]string{extension.RevertOnDeleteAnnotation: "true"}
	p.Finalizers = []string{extension.RevertFinalizer}
	if err := n.c.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fresh := &nmstatev1.NodeNetworkConfigurationPolicy{}
		if err := n.c.Get(context.Background(), client.ObjectKeyFromObject(p), fresh); err == nil {
			fresh.Finalizers = nil
			_ = n.c.Update(context.Background(), fresh)
		}
	})
	if err := n.c.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	e := n.waitEnactment(t, p.Name, "Reverted", func(e *enactment) bool { return e.Status.Conditions.Find(extension.RevertedCondition) != nil })
	if c := condition(e, extension.RevertedCondition); c.Status != condTrue || !strings.HasPrefix(c.Message, "nothing to revert") {
		t.Errorf("Reverted condition %+v, want True: nothing to revert", c)
	}
	if !hasAddress(n.show(t), "eth1", "198.51.100.41") {
		t.Error("the address applied without the annotation was removed")
	}
}
