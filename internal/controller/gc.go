package controller

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/rollout"
)

// gcReconciler deletes the enactments of a policy that no longer belong to
// any matching node or existing policy.
type gcReconciler struct {
	reader
}

func (r *gcReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	in, err := r.input(ctx, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := rollout.Collect(in)
	var errs []error
	for _, g := range d.Delete {
		e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: g.Name}}
		// The UID precondition spares an enactment recreated under the same
		// name since the cache saw the old one.
		err := r.client.Delete(ctx, e, client.Preconditions{UID: &g.UID})
		switch {
		case err == nil:
			r.metrics.EnactmentCollected(g.Reason)
			log.FromContext(ctx).Info("enactment collected", "enactment", g.Name, "reason", g.Reason)
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		default:
			errs = append(errs, fmt.Errorf("delete enactment %s: %w", g.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
}
