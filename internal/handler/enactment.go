package handler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-logr/logr"
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

// reconcile gathers what decideEnactment asks for, then does what it
// decided.
func (r *PolicyReconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// A checkpoint left by a previous run is rolled back before anything
	// else happens on this node.
	if err := r.RecoverCheckpoint(ctx); err != nil {
		return reconcile.Result{}, err
	}
	in, err := r.gatherPolicy(ctx, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	// Each read fills an input decideEnactment asked for, so it never
	// asks twice; the bound only keeps a bug from spinning the node's one
	// worker.
	for range 8 {
		d := decideEnactment(in)
		if !d.Action.isRead() {
			return r.perform(ctx, req.Name, in, d)
		}
		if err := r.gather(ctx, req.Name, in, d.Action); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, fmt.Errorf("policy %s: bug: decideEnactment keeps asking for reads", req.Name)
}

// gatherPolicy reads what every reconcile starts from: the policy and
// this node, from the cache.
func (r *PolicyReconciler) gatherPolicy(ctx context.Context, name string) (*enactmentInputs, error) {
	in := &enactmentInputs{Now: time.Now()}
	policy := &nmstatev1.NodeNetworkConfigurationPolicy{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: name}, policy); err == nil {
		in.Policy = policy
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get policy %s: %w", name, err)
	}
	node := &corev1.Node{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: r.opts.Node}, node); err == nil {
		in.Node = node
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get node %s: %w", r.opts.Node, err)
	}
	return in, nil
}

// gather does one read decideEnactment asked for.
func (r *PolicyReconciler) gather(ctx context.Context, name string, in *enactmentInputs, read enactmentAction) error {
	switch read {
	case readEnactment:
		e, err := r.enactment(ctx, shared.EnactmentName(r.opts.Node, name), in.Policy, in.Node)
		if err != nil {
			return err
		}
		in.Enactment = e
		if u, err := r.takeUnreported(name); err != nil {
			r.log.Info("a kept apply outcome is unreadable: dropped", "policy", name, "error", err.Error())
		} else {
			in.Kept = u
		}
		in.Ext, in.ExtErr = extensionSettings(in.Policy)
		r.mu.Lock()
		in.NotBefore = r.notBefore[name]
		r.mu.Unlock()
	case readNetwork:
		current, err := r.opts.Backend.Show(ctx)
		if err != nil {
			return fmt.Errorf("reading the network state: %w", err)
		}
		out, err := renderPolicy(in.Policy.Spec, current, in.Enactment.Status.CapturedStates, in.Now, r.renderOptions(in.Node, in.Ext))
		in.Network = &networkInputs{Current: current, Out: out, RenderErr: err}
	case readAfter:
		msg, failed, err := r.afterBlock(ctx, in.Node, in.Ext.After)
		if err != nil {
			return err
		}
		in.After = &afterInputs{Message: msg, Failed: failed}
	case readPolicy:
		fresh := &nmstatev1.NodeNetworkConfigurationPolicy{}
		if err := r.api.Get(ctx, types.NamespacedName{Name: name}, fresh); apierrors.IsNotFound(err) {
			in.Fresh = &freshInputs{Deleted: true}
		} else if err != nil {
			return fmt.Errorf("get policy %s: %w", name, err)
		} else {
			in.Fresh = &freshInputs{Generation: fresh.Generation, UID: fresh.UID}
		}
	default:
		return fmt.Errorf("policy %s: bug: %s is not a read", name, read)
	}
	return nil
}

// extensionSettings parses the policy's knmstate.io annotations.
func extensionSettings(p *nmstatev1.NodeNetworkConfigurationPolicy) (extension.Settings, error) {
	ext, errs := extension.Parse(p.Annotations)
	return ext, errs.ToAggregate()
}

// perform does what decideEnactment decided: at most one status write
// and one event, except an apply (see apply).
func (r *PolicyReconciler) perform(ctx context.Context, name string, in *enactmentInputs, d enactmentDecision) (reconcile.Result, error) {
	ename := shared.EnactmentName(r.opts.Node, name)
	log := r.log.WithValues("policy", name)
	switch d.Action {
	case actNothing:
		return reconcile.Result{}, nil
	case actForget:
		return reconcile.Result{}, errors.Join(r.dropUnreported(name), r.deleteEnactment(ctx, ename))
	case actDeleteEnactment:
		return reconcile.Result{}, r.deleteEnactment(ctx, ename)
	case actReportKept, actDropKept:
		return r.tellKept(ctx, log, name, in, d.Action == actReportKept)
	case actReport:
		return reconcile.Result{}, r.report(ctx, log, in, d)
	case actRevert:
		return reconcile.Result{}, r.revertOnDelete(ctx, in.Enactment, in.Policy, in.Ext.Probes)
	case actDryRun:
		return reconcile.Result{}, r.dryRun(ctx, in.Enactment, in.Policy, in.Node, in.Ext)
	case actWait:
		return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
	case actApply:
		return r.apply(ctx, log, name, in, d)
	}
	return reconcile.Result{}, fmt.Errorf("policy %s: bug: no way to perform %s", name, d.Action)
}

// tellKept writes the kept outcome (when write) and forgets it; the
// next reconcile starts from the enactment as now reported.
func (r *PolicyReconciler) tellKept(ctx context.Context, log logr.Logger, name string, in *enactmentInputs, write bool) (reconcile.Result, error) {
	if write {
		gen := in.Policy.Generation
		if err := r.writeStatus(ctx, in.Enactment, gen, rendered{}, in.Kept.set); err != nil {
			return reconcile.Result{}, err
		}
		log.Info("reported an apply outcome whose status write had failed", "generation", gen, "outcome", in.Kept.Outcome)
	}
	if err := r.dropUnreported(name); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{Requeue: true}, nil
}

// report writes the decision's report, with the rendering when there is
// one, then its event.
func (r *PolicyReconciler) report(ctx context.Context, log logr.Logger, in *enactmentInputs, d enactmentDecision) error {
	gen := in.Policy.Generation
	if d.Log != "" {
		log.Info(d.Log, "generation", gen, "error", d.Report.Message)
	}
	var out rendered
	if in.Network != nil {
		out = in.Network.Out
	}
	if err := r.writeStatus(ctx, in.Enactment, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
		d.Report.set(&st.Conditions, in.Now)
	}); err != nil {
		return err
	}
	if d.Event != "" {
		r.events.Eventf(in.Policy, nil, corev1.EventTypeWarning, "ReconcileFailed", "Reconcile", "%s", d.Event)
	}
	return nil
}

// apply runs the transaction under the permit and reports its outcome.
// The one decision with two status writes: the enactment shows
// Progressing while the transaction runs (the controller counts the node
// as unavailable, and a handler that dies meanwhile leaves it so), then
// the outcome. Besides the outcome's event, the transaction's rollback
// has its own (rollbackEvent).
func (r *PolicyReconciler) apply(ctx context.Context, log logr.Logger, name string, in *enactmentInputs, d enactmentDecision) (reconcile.Result, error) {
	e, gen, out := in.Enactment, in.Policy.Generation, in.Network.Out
	if d.Log != "" {
		log.Info(d.Log, "generation", gen)
	}
	if d.Progressing {
		if err := r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
			setEnactmentProgressing(&st.Conditions, in.Now)
		}); err != nil {
			return reconcile.Result{}, err
		}
	}
	if r.opts.OnApply != nil {
		r.tx.onApply = func() { r.opts.OnApply(name) }
	}
	if len(out.NoDefaultTrunk) > 0 {
		log.Info("the kernel cannot filter VLANs on bridges: applying without upstream's default VLAN trunk", "ports", out.NoDefaultTrunk)
	}
	log.Info("applying", "generation", gen)
	var record func(*nmstate.State) error
	if in.Ext.RevertOnDelete {
		// Recorded for the policy as the API server has it.
		fresh := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, UID: in.Fresh.UID}}
		record = func(revert *nmstate.State) error { return r.recordRevert(fresh, revert) }
	}
	tx, applyErr := r.tx.run(ctx, out.Desired, in.Ext.Probes, record)
	r.rollbackEvent(e, gen, tx)
	if d.Repair {
		r.opts.Metrics.Repaired(r.opts.Node, applyErr == nil)
	}
	o := decideOutcome(e, r.opts.Node, gen, out, applyErr, r.retryPolicy(), time.Now())
	if applyErr == nil {
		log.Info("applied", "generation", gen)
	} else {
		log.Info("apply failed", "generation", gen, "attempt", o.Report.RetryCount, "error", applyErr.Error())
	}
	r.setRetryWait(name, o.NotBefore)
	if err := r.reportOutcome(ctx, e, name, out, o.Report); err != nil {
		return reconcile.Result{}, err
	}
	if o.Event != "" {
		r.events.Eventf(in.Policy, nil, corev1.EventTypeWarning, "ReconcileFailed", "Reconcile", "%s", o.Event)
	}
	return reconcile.Result{RequeueAfter: o.RequeueAfter}, nil
}

// retryPolicy is the retry part of the options.
func (r *PolicyReconciler) retryPolicy() retryPolicy {
	return retryPolicy{MaxRetries: r.opts.MaxRetries, RetryBackoff: r.opts.RetryBackoff, RetryMaxBackoff: r.opts.RetryMaxBackoff}
}

// backoff is the pause after the n-th failure (retryPolicy.backoff).
func (r *PolicyReconciler) backoff(n int) time.Duration { return r.retryPolicy().backoff(n) }

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
