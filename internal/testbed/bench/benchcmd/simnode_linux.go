package benchcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/handler"
	"github.com/knmstate/knmstate/internal/rollout"
)

// simNode plays the API side of one node's handler against a real API
// server, without a network namespace or a kernel: the node lock (a Lease
// held with client-go's leader election, at the handler's periods), the
// NodeNetworkState, and for a policy the enactment (create, status
// Pending, wait for the controller's permit, re-read the policy, status
// Progressing, the NNS update the applied state causes, status Available)
// with the conditions the handler writes (handler.PhaseConditions).
// apply stands for the apply and its probes. What it leaves out: the
// handler's Node and NNS watches (no events during a rollout but the
// node's own), client-side limits, one TCP connection per node; and the
// policy watch is shared (policyBoard).
type simNode struct {
	name     string
	uid      types.UID
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	apply    time.Duration
	policies *policyBoard
	// lockRenew is how often the node lock is renewed.
	lockRenew time.Duration
}

// policyBoard is the one policy watch the simulated nodes share: a
// policy event is decoded once here, where every real handler decodes it
// on its own node (1,000 decodes of each policy status write in this one
// process would starve the API server it measures of CPU). The API
// server's side of 1,000 watches is one encoding per event, written to
// each.
type policyBoard struct {
	mu     sync.Mutex
	latest map[string]*unstructured.Unstructured
	subs   []chan struct{}
}

// newPolicyBoard watches the policies until ctx ends.
func newPolicyBoard(ctx context.Context, dyn dynamic.Interface) (*policyBoard, error) {
	events, err := watchAgain(ctx, dyn.Resource(nncpGVR), metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("watching policies: %w", err)
	}
	b := &policyBoard{latest: map[string]*unstructured.Unstructured{}}
	go func() {
		for o := range events {
			b.mu.Lock()
			b.latest[o.GetName()] = o
			for _, ch := range b.subs {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			b.mu.Unlock()
		}
	}()
	return b, nil
}

// subscribe returns a channel signalling (coalesced) policy changes.
func (b *policyBoard) subscribe() <-chan struct{} {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs = append(b.subs, ch)
	if len(b.latest) > 0 {
		ch <- struct{}{}
	}
	return ch
}

// snapshot returns the policies last seen.
func (b *policyBoard) snapshot() []*unstructured.Unstructured {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*unstructured.Unstructured, 0, len(b.latest))
	for _, o := range b.latest {
		out = append(out, o)
	}
	return out
}

// setUp creates the Node (Ready, as a kubelet reports it) and the
// NodeNetworkState with a small reported state.
func (n *simNode) setUp(ctx context.Context) error {
	node, err := n.kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   n.name,
		Labels: map[string]string{"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	n.uid = node.UID
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := n.kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s Ready: %w", n.name, err)
	}
	nns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": nnsGVR.GroupVersion().String(), "kind": "NodeNetworkState",
		"metadata": map[string]any{"name": n.name, "ownerReferences": []any{map[string]any{
			"apiVersion": "v1", "kind": "Node", "name": n.name, "uid": string(n.uid)}}},
	}}
	created, err := n.dyn.Resource(nnsGVR).Create(ctx, nns, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("node network state %s: %w", n.name, err)
	}
	created.Object["status"] = map[string]any{
		"currentState":             simState(false),
		"lastSuccessfulUpdateTime": now.UTC().Format(time.RFC3339),
	}
	if _, err := n.dyn.Resource(nnsGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node network state %s status: %w", n.name, err)
	}
	return nil
}

// simState is the reported state of a simulated node: its NICs, and the
// example policy's bridge once applied.
func simState(bridge bool) map[string]any {
	ifaces := []any{
		map[string]any{"name": "lo", "type": "loopback", "state": "up"},
		map[string]any{"name": "eth0", "type": "ethernet", "state": "up",
			"ipv4": map[string]any{"enabled": true, "dhcp": true}},
		map[string]any{"name": "eth1", "type": "ethernet", "state": "up"},
	}
	if bridge {
		ifaces = append(ifaces, map[string]any{"name": "br1", "type": "linux-bridge", "state": "up",
			"bridge": map[string]any{"port": []any{map[string]any{"name": "eth1"}}}})
	}
	return map[string]any{"interfaces": ifaces}
}

// lock takes the node lock and holds it until ctx ends, with the requests
// client-go's leader election makes for the handler: a create, then one
// update per retry period (lockRenew; its fast path updates the Lease it
// last saw; a conflict costs a get). leading is
// closed once the lock is held. A failed request is tried again at the
// next period, as the leader election does.
func (n *simNode) lock(ctx context.Context, leading chan<- struct{}) error {
	leases := n.kube.CoordinationV1().Leases(handler.DefaultLockNamespace)
	identity := "sim-" + n.name
	duration := int32(handler.DefaultLockLeaseDuration / time.Second)
	var lease *coordinationv1.Lease
	t := time.NewTicker(n.lockRenew)
	defer t.Stop()
	for {
		now := metav1.NewMicroTime(time.Now())
		var err error
		if lease == nil {
			lease, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "knmstate-" + n.name},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &identity, LeaseDurationSeconds: &duration,
					AcquireTime: &now, RenewTime: &now},
			}, metav1.CreateOptions{})
			if err == nil {
				close(leading)
			}
		} else {
			next := lease.DeepCopy()
			next.Spec.RenewTime = &now
			lease, err = leases.Update(ctx, next, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				lease, err = leases.Get(ctx, next.Name, metav1.GetOptions{})
			}
			if err != nil {
				lease = next
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// run reconciles the node's enactments until ctx ends: the handler's API
// requests for each policy generation, one policy at a time.
func (n *simNode) run(ctx context.Context) error {
	policies := n.policies.subscribe()
	enactments, err := watchAgain(ctx, n.dyn.Resource(nnceGVR), metav1.ListOptions{LabelSelector: shared.EnactmentNodeLabel + "=" + n.name})
	if err != nil {
		return fmt.Errorf("node %s: watching enactments: %w", n.name, err)
	}
	asked := map[string]int64{} // policy → generation asked a permit for
	done := map[string]int64{}  // policy → generation Available
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-policies:
			for _, p := range n.policies.snapshot() {
				if gen := p.GetGeneration(); asked[p.GetName()] < gen {
					if err := n.ask(ctx, p); err != nil {
						return err
					}
					asked[p.GetName()] = gen
				}
			}
		case e, ok := <-enactments:
			if !ok {
				return nil
			}
			policy := e.GetLabels()[shared.EnactmentPolicyLabel]
			gen := asked[policy]
			if gen == 0 || done[policy] >= gen || e.GetAnnotations()[rollout.PermitAnnotation] != strconv.FormatInt(gen, 10) {
				continue
			}
			if err := n.enact(ctx, e.GetName(), policy, gen); err != nil {
				return err
			}
			done[policy] = gen
		}
	}
}

// ask creates the node's enactment of policy p and asks for a permit
// (status Pending for its generation).
func (n *simNode) ask(ctx context.Context, p *unstructured.Unstructured) error {
	name := n.name + "." + p.GetName()
	e := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": nnceGVR.GroupVersion().String(), "kind": "NodeNetworkConfigurationEnactment",
		"metadata": map[string]any{
			"name":   name,
			"labels": map[string]any{shared.EnactmentPolicyLabel: p.GetName(), shared.EnactmentNodeLabel: n.name},
			"ownerReferences": []any{
				map[string]any{"apiVersion": "v1", "kind": "Node", "name": n.name, "uid": string(n.uid)},
				map[string]any{"apiVersion": p.GetAPIVersion(), "kind": p.GetKind(), "name": p.GetName(), "uid": string(p.GetUID())},
			},
		},
	}}
	if _, err := n.dyn.Resource(nnceGVR).Create(ctx, e, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("enactment %s: %w", name, err)
	}
	return n.status(ctx, name, p.GetGeneration(), handler.PhasePending)
}

// enact is the permitted part: re-read the policy, Progressing, the apply,
// the NNS update it causes, Available.
func (n *simNode) enact(ctx context.Context, name, policy string, gen int64) error {
	if _, err := n.dyn.Resource(nncpGVR).Get(ctx, policy, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("policy %s: %w", policy, err)
	}
	if err := n.status(ctx, name, gen, handler.PhaseProgressing); err != nil {
		return err
	}
	if err := sleep(ctx, n.apply); err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"currentState":             simState(true),
		"lastSuccessfulUpdateTime": time.Now().UTC().Format(time.RFC3339),
	}})
	if err != nil {
		return err
	}
	if _, err := n.dyn.Resource(nnsGVR).Patch(ctx, n.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("node network state %s: %w", n.name, err)
	}
	return n.status(ctx, name, gen, handler.PhaseAvailable)
}

// status writes the enactment's status for generation gen in phase with
// a merge patch, as the handler does.
func (n *simNode) status(ctx context.Context, name string, gen int64, phase string) error {
	conds, err := handler.PhaseConditions(phase, time.Now())
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"policyGeneration": gen, "conditions": conds}})
	if err != nil {
		return err
	}
	if _, err := n.dyn.Resource(nnceGVR).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("enactment %s %s: %w", name, phase, err)
	}
	return nil
}
