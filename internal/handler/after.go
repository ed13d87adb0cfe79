package handler

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
)

// Ordering (knmstate.io/after): a policy is applied on a node only once
// every policy it names is Available there. Until then its enactment has
// a Waiting condition saying which one it waits for and how that one is
// doing (reason AfterPolicyFailed when it failed on this node), asks for
// no permit and applies nothing. A named policy that does not select this
// node is not waited for.

// afterBlock returns why the node must not apply a policy that is after
// the given ones yet ("" when they are all Available here), and whether
// one of them failed here.
func (r *PolicyReconciler) afterBlock(ctx context.Context, node *corev1.Node, after []string) (string, bool, error) {
	for _, name := range after {
		a := &nmstatev1.NodeNetworkConfigurationPolicy{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: name}, a); apierrors.IsNotFound(err) {
			return fmt.Sprintf("waiting for policy %s (knmstate.io/after), which does not exist", name), false, nil
		} else if err != nil {
			return "", false, fmt.Errorf("get policy %s: %w", name, err)
		}
		if !selectorMatches(a.Spec.NodeSelector, node.Labels) {
			continue // it does not apply here: nothing to wait for
		}
		ae := &enactment{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: shared.EnactmentName(node.Name, name)}, ae); apierrors.IsNotFound(err) {
			return fmt.Sprintf("waiting for policy %s (knmstate.io/after) to be Available on this node; it has not started here", name), false, nil
		} else if err != nil {
			return "", false, fmt.Errorf("get enactment of policy %s: %w", name, err)
		}
		switch ph := phaseOf(&ae.Status, a.Generation); ph {
		case phaseAvailable:
		case phaseFailed, phaseAborted:
			why := condition(ae, shared.NodeNetworkConfigurationEnactmentConditionFailing).Message
			if ph == phaseAborted {
				why = condition(ae, shared.NodeNetworkConfigurationEnactmentConditionAborted).Message
			}
			return fmt.Sprintf("not applied: policy %s (knmstate.io/after) is %s on this node: %s", name, ph, why), true, nil
		default:
			return fmt.Sprintf("waiting for policy %s (knmstate.io/after) to be Available on this node; it is %s here", name, ph), false, nil
		}
	}
	return "", false, nil
}

// condition returns an enactment's condition of type t (zero if none).
func condition(e *enactment, t shared.ConditionType) shared.Condition {
	if c := e.Status.Conditions.Find(t); c != nil {
		return *c
	}
	return shared.Condition{}
}

// setEnactmentWaiting sets the five upstream conditions False (nothing
// was attempted) and the Waiting condition with why (knmstate.io/after,
// knmstate.io/ipv4-pool).
func setEnactmentWaiting(l *shared.ConditionList, now time.Time, reason shared.ConditionReason, message string) {
	enactmentConditions{
		available: condFalse, failing: condFalse, progressing: condFalse, pending: condFalse, aborted: condFalse,
		reason: reason,
	}.apply(l, now)
	l.SetAt(now, extension.WaitingCondition, condTrue, reason, message)
}

// dependents maps a policy's name to the policies that are after it, for
// the watches that wake them when it changes on this node.
func (r *PolicyReconciler) dependents(ctx context.Context, policy string) []reconcile.Request {
	var list nmstatev1.NodeNetworkConfigurationPolicyList
	if err := r.client.List(ctx, &list); err != nil {
		r.log.Error(err, "listing policies")
		return nil
	}
	var out []reconcile.Request
	for _, p := range list.Items {
		if s, errs := extension.Parse(p.Annotations); len(errs) == 0 && slices.Contains(s.After, policy) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
	return out
}

func (r *PolicyReconciler) dependentsOfEnactment(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetLabels()[shared.EnactmentNodeLabel] != r.opts.Node {
		return nil
	}
	return r.dependents(ctx, o.GetLabels()[shared.EnactmentPolicyLabel])
}

func (r *PolicyReconciler) dependentsOfPolicy(ctx context.Context, o client.Object) []reconcile.Request {
	return r.dependents(ctx, o.GetName())
}

// conditionsChanged passes enactment creations, deletions and changes of
// their conditions or generation: what moves a policy's phase on the node.
type conditionsChanged struct{ predicate.Funcs }

func (conditionsChanged) Create(event.CreateEvent) bool   { return true }
func (conditionsChanged) Delete(event.DeleteEvent) bool   { return true }
func (conditionsChanged) Generic(event.GenericEvent) bool { return false }
func (conditionsChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*enactment)
	n, ok2 := e.ObjectNew.(*enactment)
	return !ok1 || !ok2 || o.Status.PolicyGeneration != n.Status.PolicyGeneration || !reflect.DeepEqual(o.Status.Conditions, n.Status.Conditions)
}

// createdOrDeleted passes policy creations and deletions only.
type createdOrDeleted struct{ predicate.Funcs }

func (createdOrDeleted) Create(event.CreateEvent) bool   { return true }
func (createdOrDeleted) Delete(event.DeleteEvent) bool   { return true }
func (createdOrDeleted) Generic(event.GenericEvent) bool { return false }
func (createdOrDeleted) Update(event.UpdateEvent) bool   { return false }
