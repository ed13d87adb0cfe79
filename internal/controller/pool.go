package controller

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/rollout"
)

// poolReconciler assigns the addresses of a policy's knmstate.io/ipv4-pool
// (docs/extensions.md) and records them on the policy: the only writer of
// the record, so two nodes never get the same address.
type poolReconciler struct {
	reader
}

func (r *poolReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	in, err := r.input(ctx, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := rollout.Pool(in)
	if len(d.Full) > 0 {
		log.FromContext(ctx).Info("address pool exhausted", "policy", req.Name, "nodesWithout", d.Full)
	}
	if !d.Write {
		return reconcile.Result{}, nil
	}
	p := in.Policy.DeepCopy()
	p.Annotations = maps.Clone(p.Annotations)
	p.Annotations[extension.PoolAddressesAnnotation] = d.Record
	// Against the version decided on: a record written meanwhile wins,
	// and this decision is made again on top of it.
	if err := r.client.Patch(ctx, p, client.MergeFromWithOptions(in.Policy, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return reconcile.Result{Requeue: apierrors.IsConflict(err)}, nil
		}
		return reconcile.Result{}, fmt.Errorf("address pool record of policy %s: %w", req.Name, err)
	}
	log.FromContext(ctx).Info("address pool record written", "policy", req.Name, "record", d.Record)
	return reconcile.Result{}, nil
}
