package handler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

type (
	enactment     = nmstatev1beta1.NodeNetworkConfigurationEnactment
	enactmentList = nmstatev1beta1.NodeNetworkConfigurationEnactmentList
)

// Reconcile brings one policy to this node, following docs/rollout.md:
// enactment, render, ask for a permit, apply under it, report.
func (r *PolicyReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.reconcile(ctx, req)
	if ctx.Err() != nil {
		return reconcile.Result{}, nil // stopping: not a failure to retry
	}
	return res, err
}

func (r *PolicyReconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// A checkpoint left by a previous run is rolled back before anything
	// else happens on this node.
	if err := r.RecoverCheckpoint(ctx); err != nil {
		return reconcile.Result{}, err
	}
	log := r.log.WithValues("policy", req.Name)
	name := shared.EnactmentName(r.opts.Node, req.Name)

	policy := &nmstatev1.NodeNetworkConfigurationPolicy{}
	if err := r.client.Get(ctx, req.NamespacedName, policy); apierrors.IsNotFound(err) {
		return reconcile.Result{}, errors.Join(r.dropUnreported(req.Name), r.deleteEnactment(ctx, name))
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("get policy %s: %w", req.Name, err)
	}
	node := &corev1.Node{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: r.opts.Node}, node); apierrors.IsNotFound(err) {
		// The Node's creation enqueues every policy again.
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("get node %s: %w", r.opts.Node, err)
	}
	if !selectorMatches(policy.Spec.NodeSelector, node.Labels) {
		// The network is left as it is (upstream): only the record goes.
		return reconcile.Result{}, r.deleteEnactment(ctx, name)
	}
	e, err := r.enactment(ctx, name, policy, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	gen := policy.Generation
	// An earlier apply's outcome whose status write failed is told first.
	if u, err := r.takeUnreported(req.Name); err != nil {
		log.Info("a kept apply outcome is unreadable: dropped", "error", err.Error())
	} else if u != nil {
		// Told only while the enactment still shows that apply under way:
		// a newer outcome (of this handler's next term, or of another
		// handler on the node) is not overwritten by an older one.
		if ph := phaseOf(&e.Status, gen); u.Generation == gen && (ph == phaseProgressing || ph == phaseRetrying) {
			if err := r.writeStatus(ctx, e, gen, rendered{}, u.set); err != nil {
				return reconcile.Result{}, err
			}
			log.Info("reported an apply outcome whose status write had failed", "generation", gen, "outcome", u.Outcome)
		}
		if err := r.dropUnreported(req.Name); err != nil {
			return reconcile.Result{}, err
		}
		// Again, from the enactment as now reported.
		return reconcile.Result{Requeue: true}, nil
	}
	// The knmstate.io annotations are checked here too: a policy admitted
	// without the webhook must not be applied with settings it misspelt.
	ext, extErrs := extension.Parse(policy.Annotations)
	if err := extErrs.ToAggregate(); err != nil {
		log.Info("the policy's knmstate.io annotations are invalid", "error", err.Error())
		return reconcile.Result{}, r.writeStatus(ctx, e, gen, rendered{}, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
			setEnactmentFailedToConfigure(&st.Conditions, time.Now(), err.Error())
		})
	}
	if policy.DeletionTimestamp != nil && slices.Contains(policy.Finalizers, extension.RevertFinalizer) {
		return reconcile.Result{}, r.revertOnDelete(ctx, e, policy, ext.Probes)
	}
	if ext.Pool != nil {
		if _, ok := ext.Pool.Addresses[node.Name]; !ok {
			// The controller's record of the address wakes us.
			msg := fmt.Sprintf("waiting for the controller to assign this node an address of %s (knmstate.io/ipv4-pool); every address is taken when this lasts", ext.Pool.Prefix)
			return reconcile.Result{}, r.writeStatus(ctx, e, gen, rendered{}, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
				setEnactmentWaiting(&st.Conditions, time.Now(), extension.WaitingPoolReason, msg)
			})
		}
	}
	if ext.DryRun {
		return reconcile.Result{}, r.dryRun(ctx, e, policy, node, ext)
	}
	ph := phaseOf(&e.Status, gen)
	if ph == phaseFailed || ph == phaseAborted {
		return reconcile.Result{}, nil // ended for this generation
	}

	current, err := r.opts.Backend.Show(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the network state: %w", err)
	}
	now := time.Now()
	out, err := renderPolicy(policy.Spec, current, e.Status.CapturedStates, now, r.renderOptions(node, ext))
	if err != nil {
		log.Info("rendering the desired state failed", "error", err.Error())
		return reconcile.Result{}, r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
			setEnactmentFailedToConfigure(&st.Conditions, now, err.Error())
		})
	}
	if ph == phaseAvailable {
		if out.Desired == nil || nmstate.Shows(current, out.Desired) {
			return reconcile.Result{}, nil // done, and still true: no re-apply
		}
		log.Info("network no longer shows the applied policy; applying it again")
	}
	// A repair: re-applying a policy that was Available (drift).
	repair := ph == phaseAvailable
	if out.Desired == nil {
		// Upstream: "Ignoring empty desired state"; no permit needed.
		return reconcile.Result{}, r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
			setEnactmentSuccess(&st.Conditions, now, successMessage(out))
		})
	}

	if len(ext.After) > 0 && ph != phaseAvailable {
		msg, failed, err := r.afterBlock(ctx, node, ext.After)
		if err != nil {
			return reconcile.Result{}, err
		}
		if msg != "" {
			// A watch of the other policies' enactments wakes us.
			return reconcile.Result{}, r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
				reason := shared.ConditionReason(extension.WaitingReason)
				if failed {
					reason = extension.WaitingFailedReason
				}
				setEnactmentWaiting(&st.Conditions, now, reason, msg)
			})
		}
	}
	if annotationGeneration(e, rollout.PermitAnnotation) != gen {
		if annotationGeneration(e, rollout.AbortAnnotation) == gen {
			msg := abortedMessage(name)
			if err := r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
				setEnactmentAborted(&st.Conditions, now, msg)
			}); err != nil {
				return reconcile.Result{}, err
			}
			r.events.Eventf(policy, nil, corev1.EventTypeWarning, "ReconcileFailed", "Reconcile", msg)
			return reconcile.Result{}, nil
		}
		// Ask for a permit; the controller's annotation wakes us.
		return reconcile.Result{}, r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
			if ph != phasePending {
				setEnactmentPending(&st.Conditions, now)
			}
		})
	}

	// Holding the permit for gen. A retry waits for its back-off.
	if wait := r.retryWait(req.Name, now); ph == phaseRetrying && wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	fresh := &nmstatev1.NodeNetworkConfigurationPolicy{}
	if err := r.api.Get(ctx, req.NamespacedName, fresh); apierrors.IsNotFound(err) {
		return reconcile.Result{}, r.deleteEnactment(ctx, name)
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("get policy %s: %w", req.Name, err)
	}
	if fresh.Generation != gen {
		// The policy changed since the cache showed it: its update event
		// brings the new generation here again.
		return reconcile.Result{}, nil
	}
	if ph != phaseProgressing && ph != phaseRetrying {
		if err := r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
			setEnactmentProgressing(&st.Conditions, now)
		}); err != nil {
			return reconcile.Result{}, err
		}
	}
	if r.opts.OnApply != nil {
		r.tx.onApply = func() { r.opts.OnApply(req.Name) }
	}
	if len(out.NoDefaultTrunk) > 0 {
		log.Info("the kernel cannot filter VLANs on bridges: applying without upstream's default VLAN trunk", "ports", out.NoDefaultTrunk)
	}
	log.Info("applying", "generation", gen)
	var record func(*nmstate.State) error
	if ext.RevertOnDelete {
		record = func(revert *nmstate.State) error { return r.recordRevert(fresh, revert) }
	}
	tx, applyErr := r.tx.run(ctx, out.Desired, ext.Probes, record)
	r.rollbackEvent(e, gen, tx)
	if repair {
		r.opts.Metrics.Repaired(r.opts.Node, applyErr == nil)
	}
	now = time.Now()
	if applyErr == nil {
		r.setRetryWait(req.Name, time.Time{})
		log.Info("applied", "generation", gen)
		return reconcile.Result{}, r.reportOutcome(ctx, e, req.Name, out, unreported{Generation: gen, Outcome: outcomeAvailable, Message: successMessage(out), At: now})
	}
	key := strconv.FormatInt(gen, 10)
	n := e.Status.RetryCount[key] + 1
	log.Info("apply failed", "generation", gen, "attempt", n, "error", applyErr.Error())
	if n >= r.opts.MaxRetries {
		r.setRetryWait(req.Name, time.Time{})
		if err := r.reportOutcome(ctx, e, req.Name, out, unreported{Generation: gen, Outcome: outcomeFailed, RetryCount: n, Message: applyErr.Error(), At: now}); err != nil {
			return reconcile.Result{}, err
		}
		r.events.Eventf(policy, nil, corev1.EventTypeWarning, "ReconcileFailed", "Reconcile",
			"reconciliation of enactment %q has failed after %d retries", name, n)
		return reconcile.Result{}, nil
	}
	backoff := r.backoff(n)
	r.setRetryWait(req.Name, now.Add(backoff))
	msg := retryingMessage(name, r.opts.Node, applyErr, n, r.opts.MaxRetries)
	if err := r.reportOutcome(ctx, e, req.Name, out, unreported{Generation: gen, Outcome: outcomeRetrying, RetryCount: n, Message: msg, At: now}); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: backoff}, nil
}

// backoff is the pause after the n-th failure: RetryBackoff doubled n-1
// times, at most RetryMaxBackoff.
func (r *PolicyReconciler) backoff(n int) time.Duration {
	d := r.opts.RetryBackoff
	for i := 1; i < n && d < r.opts.RetryMaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.opts.RetryMaxBackoff)
}

func (r *PolicyReconciler) retryWait(policy string, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.notBefore[policy].Sub(now)
}

func (r *PolicyReconciler) setRetryWait(policy string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at.IsZero() {
		delete(r.notBefore, policy)
		return
	}
	r.notBefore[policy] = at
}

// enactment reads the policy's enactment on this node without the cache,
// creating it when missing. An enactment left by an earlier policy of the
// same name is replaced.
func (r *PolicyReconciler) enactment(ctx context.Context, name string, policy *nmstatev1.NodeNetworkConfigurationPolicy, node *corev1.Node) (*enactment, error) {
	e := &enactment{}
	err := r.api.Get(ctx, types.NamespacedName{Name: name}, e)
	if err == nil && !ownedByOtherPolicy(e, policy) {
		return e, nil
	}
	if err == nil {
		if err := r.client.Delete(ctx, e, client.Preconditions{UID: &e.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("delete enactment %s of an earlier policy: %w", name, err)
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get enactment %s: %w", name, err)
	}
	lbls := map[string]string{}
	for k, v := range r.opts.Labels {
		lbls[k] = v
	}
	lbls[shared.EnactmentPolicyLabel] = policy.Name
	lbls[shared.EnactmentNodeLabel] = r.opts.Node
	e = &enactment{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: lbls,
		OwnerReferences: []metav1.OwnerReference{
			// Collected with the node, as upstream.
			{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID},
			// Tells the controller's GC which policy this record belongs
			// to (docs/rollout.md); not a controller reference.
			{APIVersion: nmstatev1.GroupVersion.String(), Kind: "NodeNetworkConfigurationPolicy", Name: policy.Name, UID: policy.UID},
		},
	}}
	if err := r.client.Create(ctx, e); apierrors.IsAlreadyExists(err) {
		e = &enactment{}
		if err := r.api.Get(ctx, types.NamespacedName{Name: name}, e); err != nil {
			return nil, fmt.Errorf("get enactment %s: %w", name, err)
		}
		return e, nil
	} else if err != nil {
		return nil, fmt.Errorf("create enactment %s: %w", name, err)
	}
	return e, nil
}

func ownedByOtherPolicy(e *enactment, p *nmstatev1.NodeNetworkConfigurationPolicy) bool {
	for _, o := range e.OwnerReferences {
		if o.Kind == "NodeNetworkConfigurationPolicy" && o.Name == p.Name && o.UID != p.UID {
			return true
		}
	}
	return false
}

func (r *PolicyReconciler) deleteEnactment(ctx context.Context, name string) error {
	e := &enactment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.client.Delete(ctx, e); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete enactment %s: %w", name, err)
	}
	return nil
}

// writeStatus sets the enactment's status for generation gen (conditions
// start over when the generation changes), the rendered state, and what
// set changes, and writes it as a JSON merge patch of the difference: the
// handler is the status's only writer, so no resourceVersion is needed, and
// the controller's annotations are never touched. Nothing is sent when
// nothing changed. Transient API errors are retried briefly: an apply may
// just have moved the node's route to the API server.
func (r *PolicyReconciler) writeStatus(ctx context.Context, e *enactment, gen int64, out rendered,
	set func(*shared.NodeNetworkConfigurationEnactmentStatus)) error {
	base := e.DeepCopy()
	st := &e.Status
	if st.PolicyGeneration != gen {
		// A new generation starts afresh (upstream clears the conditions);
		// an old rendering must not pass for the new one's.
		st.Conditions = nil
		st.DesiredState = shared.State{}
		st.Features = nil
		st.PolicyGeneration = gen
	}
	if !out.Status.IsZero() {
		st.DesiredState = out.Status
		st.Features = out.Features
	}
	if out.Captured != nil {
		st.CapturedStates = out.Captured
	}
	if st.RetryCount == nil {
		st.RetryCount = map[string]int{}
	}
	// A dry run's, a drift's and a wait's report last only until the next
	// write: their setters put their condition back, every other state
	// replaces them (drift detection reports a drift that remains at the
	// next kernel event).
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c shared.Condition) bool {
		return c.Type == extension.DryRunCondition || c.Type == extension.DriftedCondition || c.Type == extension.WaitingCondition
	})
	set(st)
	patch := client.MergeFrom(base)
	data, err := patch.Data(e)
	if err != nil {
		return fmt.Errorf("status patch of enactment %s: %w", e.Name, err)
	}
	if string(data) == "{}" {
		return nil
	}
	raw := client.RawPatch(patch.Type(), data)
	backoff := wait.Backoff{Steps: 5, Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1}
	// retry.OnError turns an error that wraps context.Canceled into its
	// last retriable error, nil on a first attempt: a write refused because
	// the term ended (lost node lock) would pass for done, and the outcome
	// of the apply it carried would be neither written nor kept. The
	// attempt's own error is what counts.
	var last error
	err = retry.OnError(backoff, func(err error) bool { return !apierrors.IsNotFound(err) && ctx.Err() == nil }, func() error {
		last = r.client.Status().Patch(ctx, e, raw)
		return last
	})
	if err == nil {
		err = last
	}
	if err != nil {
		return fmt.Errorf("write status of enactment %s: %w", e.Name, err)
	}
	r.opts.Metrics.EnactmentStatusWritten(r.opts.Node)
	return nil
}

// rollbackEvent tells on the enactment that an apply of generation gen
// was rolled back, or that its rollback failed: the two moments an admin
// wants to see in `kubectl get events` (the conditions keep only the
// latest attempt). A short, fixed note: the enactment's conditions carry
// the error.
func (r *PolicyReconciler) rollbackEvent(e *enactment, gen int64, o txOutcome) {
	var why string
	switch o.reason {
	case metrics.RollbackProbe:
		why = fmt.Sprintf("the %s probe failed after the apply", o.probe)
	case metrics.RollbackVerification:
		why = "the network did not show the desired state"
	default:
		why = "the apply failed"
	}
	switch o.result {
	case metrics.ApplyRolledBack:
		r.events.Eventf(e, nil, corev1.EventTypeWarning, "RolledBack", "Apply",
			"generation %d rolled back (%s): the previous network state is restored", gen, why)
	case metrics.ApplyRollbackFailed:
		r.events.Eventf(e, nil, corev1.EventTypeWarning, "RollbackFailed", "Apply",
			"generation %d not rolled back (%s, then the rollback failed): the node's network is as the failure left it", gen, why)
	}
}

// annotationGeneration returns the generation a rollout annotation names,
// or 0.
func annotationGeneration(e *enactment, key string) int64 {
	g, err := strconv.ParseInt(e.Annotations[key], 10, 64)
	if err != nil || g < 1 {
		return 0
	}
	return g
}

// renderOptions are what rendering needs to know of this node: its
// values, and its address of the policy's pool (the caller has checked it
// has one).
func (r *PolicyReconciler) renderOptions(node *corev1.Node, ext extension.Settings) renderOptions {
	o := renderOptions{
		DefaultBridgeVLANs: !r.opts.NoDefaultBridgeVLANs,
		Node:               extension.NodeValues{Name: node.Name, Labels: node.Labels, Annotations: node.Annotations},
	}
	if ext.Pool != nil {
		o.Pool, o.PoolAddr = ext.Pool, ext.Pool.Addresses[node.Name]
	}
	return o
}
