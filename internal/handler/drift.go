package handler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Drift detection: the node's kernel events (PolicyOptions.Watch) wake a
// check of every Available enactment of the node against the live state,
// by the rule an apply is verified with. A policy the node no longer shows
// gets a Drifted condition on its enactment saying what differs (the
// controller counts them in the policy's status); one that shows again
// loses it. With knmstate.io/enforce the policy is queued for the
// reconciler, which applies it again like any apply (permit held,
// checkpoint, probes), after a back-off that doubles while repairs follow
// each other.

// driftSettle is how long a burst of kernel events may last before the
// check runs: `ip link del` of a bridge with ports is a handful of events
// within a millisecond or two.
const driftSettle = 20 * time.Millisecond

// repairState is the back-off of one policy's repairs.
type repairState struct {
	// n counts repairs in a row; it starts over once the policy has held
	// for longer than the last back-off.
	n       int
	last    time.Time
	pending bool
}

// watchDrift runs until ctx ends: every settled burst of kernel events
// checks the node's Available policies.
func (r *PolicyReconciler) watchDrift(ctx context.Context) error {
	changes, err := r.opts.Watch(ctx)
	if err != nil {
		return fmt.Errorf("watching the node's network for drift: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-changes:
			if !ok {
				return nil
			}
		}
		settle := time.NewTimer(driftSettle)
	burst:
		for {
			select {
			case <-ctx.Done():
				settle.Stop()
				return nil
			case <-changes:
			case <-settle.C:
				break burst
			}
		}
		if err := r.checkDrift(ctx); err != nil && ctx.Err() == nil {
			r.log.Error(err, "checking the node's policies for drift")
		}
	}
}

// checkDrift compares every Available enactment of the node with the live
// state, and reports and repairs drift. Enactments are read from the API,
// not the cache: the reconciler may have written one a moment ago (an
// enactment the cache still showed Progressing would be skipped, and the
// drift missed until the next kernel event). That is one list request per
// burst of kernel events, writes only when something changed; a report is
// written against the version read, and read again on a conflict.
func (r *PolicyReconciler) checkDrift(ctx context.Context) error {
	var list enactmentList
	if err := r.api.List(ctx, &list, client.MatchingLabels{shared.EnactmentNodeLabel: r.opts.Node}); err != nil {
		return fmt.Errorf("listing enactments: %w", err)
	}
	current, err := r.opts.Backend.Show(ctx)
	if err != nil {
		return fmt.Errorf("reading the network state: %w", err)
	}
	var errs []error
	for i := range list.Items {
		if err := r.checkOne(ctx, &list.Items[i], current); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *PolicyReconciler) checkOne(ctx context.Context, e *enactment, current *nmstate.State) error {
	err := r.checkVersion(ctx, e, current)
	if !apierrors.IsConflict(err) {
		return err
	}
	// The reconciler wrote meanwhile: once more, on the API's version.
	fresh := &enactment{}
	if err := r.api.Get(ctx, client.ObjectKeyFromObject(e), fresh); err != nil {
		return client.IgnoreNotFound(err)
	}
	if err := r.checkVersion(ctx, fresh, current); err != nil && !apierrors.IsConflict(err) {
		return err
	}
	return nil // a newer write again: the next kernel event checks again
}

// checkVersion checks one version of an enactment; a conflict means the
// enactment changed since.
func (r *PolicyReconciler) checkVersion(ctx context.Context, e *enactment, current *nmstate.State) error {
	name := e.Labels[shared.EnactmentPolicyLabel]
	policy := &nmstatev1.NodeNetworkConfigurationPolicy{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: name}, policy); err != nil {
		return client.IgnoreNotFound(err)
	}
	ext, errs := extension.Parse(policy.Annotations)
	if len(errs) > 0 || ext.DryRun || phaseOf(&e.Status, policy.Generation) != phaseAvailable || e.Status.DesiredState.IsZero() {
		return nil
	}
	desired, err := nmstate.Decode(e.Status.DesiredState.Raw)
	if err != nil {
		return nil // not a state this handler wrote; the reconciler renders anew
	}
	differs := driftOf(desired, current)
	old := e.Status.Conditions.Find(extension.DriftedCondition)
	switch {
	case differs != "" && (old == nil || old.Message != differs):
		if err := r.setDrifted(ctx, e, differs); err != nil {
			return err
		}
		if old == nil {
			r.opts.Metrics.Drifted(r.opts.Node)
			r.log.Info("the node no longer shows the policy", "policy", name, "differs", differs)
			r.events.Eventf(e, nil, corev1.EventTypeWarning, "Drifted", "Verify", "the node no longer shows the policy: %s", differs)
		}
	case differs == "" && old != nil:
		if err := r.setDrifted(ctx, e, ""); err != nil {
			return err
		}
		r.log.Info("the node shows the policy again", "policy", name)
	}
	if differs != "" && ext.Enforce {
		r.scheduleRepair(ctx, policy)
	} else if differs == "" {
		r.repairHeld(name, time.Now())
	}
	return nil
}

// driftOf is what differs between the live state and desired, by the rule
// an apply is verified with; "" when the node shows desired.
func driftOf(desired, current *nmstate.State) string {
	m, err := nmstate.Merge(desired, current)
	if err != nil {
		return err.Error()
	}
	if err := nmstate.Verify(m.Desired, current); err != nil {
		return err.Error()
	}
	return ""
}

// setDrifted sets (message != "") or removes the enactment's Drifted
// condition, with a patch that fails with a conflict if the enactment
// changed since it was read (the reconciler's newer status wins).
func (r *PolicyReconciler) setDrifted(ctx context.Context, e *enactment, message string) error {
	base := e.DeepCopy()
	e.Status.Conditions = slices.DeleteFunc(e.Status.Conditions, func(c shared.Condition) bool { return c.Type == extension.DriftedCondition })
	if message != "" {
		e.Status.Conditions.SetAt(time.Now(), extension.DriftedCondition, condTrue, extension.DriftedReason, message)
	}
	err := r.client.Status().Patch(ctx, e, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return err // the caller reads it again
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write drift of enactment %s: %w", e.Name, err)
	}
	r.opts.Metrics.EnactmentStatusWritten(r.opts.Node)
	return nil
}

// scheduleRepair queues the policy for the reconciler once its back-off
// has passed; a repair already queued is not queued twice.
func (r *PolicyReconciler) scheduleRepair(ctx context.Context, policy *nmstatev1.NodeNetworkConfigurationPolicy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.repairs[policy.Name]
	if st == nil {
		st = &repairState{}
		r.repairs[policy.Name] = st
	}
	if st.pending {
		return
	}
	st.pending = true
	var wait time.Duration
	if st.n > 0 {
		wait = r.backoff(st.n)
	}
	st.n++
	st.last = time.Now().Add(wait)
	obj := policy.DeepCopy()
	r.log.Info("repairing the drifted policy", "policy", policy.Name, "in", wait, "repairsInARow", st.n)
	time.AfterFunc(wait, func() {
		r.mu.Lock()
		st.pending = false
		r.mu.Unlock()
		select {
		case r.driftEvents <- event.GenericEvent{Object: obj}:
		case <-ctx.Done():
		}
	})
}

// repairHeld starts the back-off over once the policy has held for longer
// than the back-off its next repair would wait.
func (r *PolicyReconciler) repairHeld(policy string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.repairs[policy]; st != nil && !st.pending && now.Sub(st.last) > r.backoff(st.n) {
		delete(r.repairs, policy)
	}
}
