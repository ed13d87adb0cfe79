package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/rollout"
)

// permitReconciler hands out rollout permits and aborts by annotating
// enactments.
type permitReconciler struct {
	reader
}

func (r *permitReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	in, err := r.input(ctx, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	d := rollout.Permits(in)
	if d.LimitError != nil {
		logger.Info("invalid maxUnavailable, using the default", "error", d.LimitError.Error(), "limit", d.Limit)
	}
	gen := strconv.FormatInt(d.Generation, 10)
	type write struct {
		name, key string
		value     *string
	}
	var errs []error
	var written []write
	// annotate writes, and returns how many writes succeeded.
	annotate := func(names []string, key string, value *string) int {
		n := 0
		for _, name := range names {
			if err := r.annotate(ctx, name, key, value); err != nil {
				errs = append(errs, err)
				continue
			}
			written = append(written, write{name, key, value})
			n++
		}
		return n
	}
	r.metrics.PermitsRevoked(annotate(d.Revoke, rollout.PermitAnnotation, nil))
	r.metrics.PermitsGranted(annotate(d.Grant, rollout.PermitAnnotation, &gen))
	r.metrics.EnactmentsAborted(annotate(d.Abort, rollout.AbortAnnotation, &gen))
	if len(written) > 0 {
		logger.V(1).Info("rollout permits written", "generation", d.Generation, "limit", d.Limit, "inUse", d.InUse,
			"granted", d.Grant, "aborted", d.Abort, "revoked", d.Revoke)
	}
	for _, w := range written {
		r.waitForCache(ctx, &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: w.name}}, func(o client.Object) bool {
			v, ok := o.GetAnnotations()[w.key]
			if w.value == nil {
				return !ok
			}
			return ok && v == *w.value
		})
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
}

// annotate sets (or with a nil value removes) one annotation of an
// enactment with a merge patch that carries no resourceVersion: the
// controller is the only writer of these annotations, so it never needs to
// compete with the handler's status writes.
func (r *permitReconciler) annotate(ctx context.Context, name, key string, value *string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{key: value}}})
	if err != nil {
		return fmt.Errorf("annotate enactment %s: %w", name, err)
	}
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.client.Patch(ctx, e, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("annotate enactment %s: %w", name, err)
	}
	return nil
}
