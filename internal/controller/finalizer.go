package controller

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/rollout"
)

// finalizerReconciler adds and removes the revert-on-delete finalizer
// (docs/extensions.md): the handlers revert a deleted policy, this holds
// it until they have all reported.
type finalizerReconciler struct {
	reader
}

func (r *finalizerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	in, err := r.input(ctx, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := rollout.Finalizer(in)
	if !d.Add && !d.Remove {
		if len(d.Waiting) > 0 {
			log.FromContext(ctx).V(1).Info("waiting for nodes to revert the deleted policy", "nodes", d.Waiting)
		}
		return reconcile.Result{}, nil
	}
	p := in.Policy.DeepCopy()
	if d.Add {
		p.Finalizers = append(p.Finalizers, extension.RevertFinalizer)
	} else {
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == extension.RevertFinalizer })
	}
	// Against the version decided on: a newer policy is decided again.
	if err := r.client.Patch(ctx, p, client.MergeFromWithOptions(in.Policy, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: apierrors.IsConflict(err)}, nil
		}
		return reconcile.Result{}, fmt.Errorf("finalizer of policy %s: %w", req.Name, err)
	}
	log.FromContext(ctx).Info("revert-on-delete finalizer", "policy", req.Name, "added", d.Add, "removed", d.Remove)
	return reconcile.Result{}, nil
}
