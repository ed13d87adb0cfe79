package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/rollout"
)

// statusReconciler is the single writer of policy status.
type statusReconciler struct {
	reader
}

func (r *statusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	in, err := r.input(ctx, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if in.Policy == nil {
		return reconcile.Result{}, nil
	}
	s := rollout.PolicyStatus(in)
	drift := rollout.PolicyDrift(in)
	conditions, changed := rollout.Conditions(in.Policy.Status.Conditions, s, in.Now)
	conditions, driftChanged := rollout.DriftCondition(conditions, drift, in.Now)
	if !changed && !driftChanged {
		return reconcile.Result{}, nil
	}
	p := in.Policy.DeepCopy()
	p.Status.Conditions = conditions
	// An update, not a patch: it carries the resourceVersion the status was
	// computed from, so a decision on a stale policy (a new generation the
	// cache has not seen) is refused instead of written.
	if err := r.client.Status().Update(ctx, p); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return reconcile.Result{}, nil
		case apierrors.IsConflict(err):
			// The cache is behind; its update event requeues the policy, and
			// this retry covers a missed one.
			return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		return reconcile.Result{}, fmt.Errorf("write status of policy %s: %w", req.Name, err)
	}
	r.metrics.PolicyStatusWritten(string(s.Verdict))
	log.FromContext(ctx).V(1).Info("policy status written", "verdict", s.Verdict, "message", s.Message)
	r.waitForCache(ctx, p, func(o client.Object) bool {
		// Compared without timestamps: the API server keeps seconds only.
		cached, ok := o.(*nmstatev1.NodeNetworkConfigurationPolicy)
		if !ok {
			return false
		}
		l, changed := rollout.Conditions(cached.Status.Conditions, s, in.Now)
		_, driftChanged := rollout.DriftCondition(l, drift, in.Now)
		return !changed && !driftChanged
	})
	return reconcile.Result{}, nil
}
