package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/internal/rollout"
)

// Cache indexes of enactments, by the policy and node they are labelled
// with, so that a reconcile reads one policy's enactments without scanning
// all of them.
const (
	policyIndex = "knmstate.policy"
	nodeIndex   = "knmstate.node"
)

// reader is what every reconciler shares: the cache, the time limits and
// the counters.
type reader struct {
	client  client.Client
	config  rollout.Config
	clock   func() time.Time
	metrics *metrics.Controller
}

// input gathers everything a decision about policy name needs, from the
// cache.
func (r reader) input(ctx context.Context, name string) (rollout.Input, error) {
	in := rollout.Input{PolicyName: name, Now: r.clock(), Config: r.config, Handlers: map[string]bool{}}
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	switch err := r.client.Get(ctx, types.NamespacedName{Name: name}, p); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return in, fmt.Errorf("get policy %s: %w", name, err)
	default:
		in.Policy = p
	}
	// The lists are read-only inputs of pure decisions: straight from the
	// cache, without the deep copy a List makes by default. Every event of
	// every enactment runs the five reconcilers, each reading every node,
	// state and enactment: copying them all made a 1,000-node rollout's
	// controller CPU grow with the square of the node count.
	var nodes corev1.NodeList
	if err := r.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list nodes: %w", err)
	}
	in.Nodes = nodes.Items
	states := &metav1.PartialObjectMetadataList{}
	states.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("NodeNetworkStateList"))
	if err := r.client.List(ctx, states, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list node network states: %w", err)
	}
	for _, s := range states.Items {
		in.Handlers[s.Name] = true
	}
	var enactments v1beta1.NodeNetworkConfigurationEnactmentList
	if err := r.client.List(ctx, &enactments, client.MatchingFields{policyIndex: name}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("list enactments of %s: %w", name, err)
	}
	in.Enactments = enactments.Items
	return in, nil
}

// waitForCache waits, briefly, until the cache shows this controller's
// write to obj (seen reports it) or no longer holds obj, so that the next
// decision about the policy sees this one's writes: deciding on a stale
// cache could grant the same free permit twice. Checking the written value,
// not just a newer resourceVersion, matters: a handler's status write that
// landed between the read and the patch also makes the version newer. A
// timeout only costs a redundant write later.
func (r reader) waitForCache(ctx context.Context, obj client.Object, seen func(client.Object) bool) {
	key := client.ObjectKeyFromObject(obj)
	fresh := obj.DeepCopyObject().(client.Object)
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		err := r.client.Get(ctx, key, fresh)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && seen(fresh), nil
	})
}

// setup registers the indexes and the five reconcilers with mgr.
func setup(ctx context.Context, mgr manager.Manager, opts Options, m *metrics.Controller) error {
	idx := mgr.GetFieldIndexer()
	enactment := &v1beta1.NodeNetworkConfigurationEnactment{}
	for name, label := range map[string]string{policyIndex: shared.EnactmentPolicyLabel, nodeIndex: shared.EnactmentNodeLabel} {
		if err := idx.IndexField(ctx, enactment, name, func(o client.Object) []string {
			if v := o.GetLabels()[label]; v != "" {
				return []string{v}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("index enactments by %s: %w", label, err)
		}
	}
	rd := reader{client: mgr.GetClient(), config: opts.Rollout, clock: opts.Clock, metrics: m}
	for name, r := range map[string]reconcile.Reconciler{
		"policy-status":  &statusReconciler{reader: rd},
		"rollout-permit": &permitReconciler{reader: rd},
		"enactment-gc":   &gcReconciler{reader: rd},
		// knmstate.io/revert-on-delete (docs/extensions.md).
		"revert-finalizer": &finalizerReconciler{reader: rd},
		// knmstate.io/ipv4-pool.
		"address-pool": &poolReconciler{reader: rd},
	} {
		if err := watches(mgr, name, rd).Complete(r); err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
	}
	return nil
}

// watches returns a controller keyed by policy name that runs on every
// change that can move any of the decisions: the policy's spec, its
// enactments, node labels and readiness, handlers appearing or vanishing.
func watches(mgr manager.Manager, name string, rd reader) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		For(&nmstatev1.NodeNetworkConfigurationPolicy{}, builder.WithPredicates(extension.PolicyChanged())).
		Watches(&v1beta1.NodeNetworkConfigurationEnactment{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				if p := o.GetLabels()[shared.EnactmentPolicyLabel]; p != "" {
					return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p}}}
				}
				return nil
			})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(rd.policiesOfNode), builder.WithPredicates(nodeChanged{})).
		WatchesMetadata(&v1beta1.NodeNetworkState{}, handler.EnqueueRequestsFromMapFunc(rd.allPolicies), builder.WithPredicates(createOrDelete{}))
}

// allPolicies enqueues every policy.
func (r reader) allPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	var policies nmstatev1.NodeNetworkConfigurationPolicyList
	if err := r.client.List(ctx, &policies); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(policies.Items))
	for _, p := range policies.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	}
	return out
}

// policiesOfNode enqueues every policy (the node may have started or
// stopped matching any of them) and the policies named by the node's
// enactments (which may no longer exist, and then need collecting).
func (r reader) policiesOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	out := r.allPolicies(ctx, o)
	seen := map[string]bool{}
	for _, req := range out {
		seen[req.Name] = true
	}
	var enactments v1beta1.NodeNetworkConfigurationEnactmentList
	if err := r.client.List(ctx, &enactments, client.MatchingFields{nodeIndex: o.GetName()}); err != nil {
		return out
	}
	for _, e := range enactments.Items {
		if p := e.Labels[shared.EnactmentPolicyLabel]; p != "" && !seen[p] {
			seen[p] = true
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p}})
		}
	}
	return out
}

// nodeChanged passes node updates that change what the decisions read:
// labels or readiness. Kubelet status heartbeats do not pass.
type nodeChanged struct{ predicate.Funcs }

func (nodeChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	if !equalLabels(o.Labels, n.Labels) {
		return true
	}
	ro, rn := readyCondition(o), readyCondition(n)
	return ro.Status != rn.Status || !ro.LastTransitionTime.Equal(&rn.LastTransitionTime)
}

func readyCondition(n *corev1.Node) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// createOrDelete passes only creations and deletions.
type createOrDelete struct{ predicate.Funcs }

func (createOrDelete) Create(event.CreateEvent) bool   { return true }
func (createOrDelete) Delete(event.DeleteEvent) bool   { return true }
func (createOrDelete) Update(event.UpdateEvent) bool   { return false }
func (createOrDelete) Generic(event.GenericEvent) bool { return false }
