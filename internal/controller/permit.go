package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

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
	var writes []annotationWrite
	add := func(names []string, key string, value *string) {
		for _, name := range names {
			writes = append(writes, annotationWrite{name: name, key: key, value: value})
		}
	}
	add(d.Revoke, rollout.PermitAnnotation, nil)
	add(d.Grant, rollout.PermitAnnotation, &gen)
	add(d.Abort, rollout.AbortAnnotation, &gen)
	errs := r.annotateAll(ctx, writes)
	var revoked, granted, aborted int
	var written []annotationWrite
	for i, w := range writes {
		if errs[i] != nil {
			continue
		}
		written = append(written, w)
		switch {
		case w.key == rollout.AbortAnnotation:
			aborted++
		case w.value == nil:
			revoked++
		default:
			granted++
		}
	}
	r.metrics.PermitsRevoked(revoked)
	r.metrics.PermitsGranted(granted)
	r.metrics.EnactmentsAborted(aborted)
	if len(written) > 0 {
		logger.V(1).Info("rollout permits written", "generation", d.Generation, "limit", d.Limit, "inUse", d.InUse,
			"granted", d.Grant, "aborted", d.Abort, "revoked", d.Revoke)
	}
	parallel(len(written), func(i int) {
		w := written[i]
		r.waitForCache(ctx, &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: w.name}}, func(o client.Object) bool {
			v, ok := o.GetAnnotations()[w.key]
			if w.value == nil {
				return !ok
			}
			return ok && v == *w.value
		})
	})
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: d.RequeueAfter}, nil
}

// annotationWrite is one annotation the controller sets (value) or
// removes (nil value) on an enactment.
type annotationWrite struct {
	name, key string
	value     *string
}

// writeParallelism bounds the annotation writes in flight. A wave of
// permits is one write per node (half the nodes at maxUnavailable 50%):
// written one after the other, a rollout took the API server's write
// latency times the node count, and under load (a write taking 300 ms on
// the 2-core development VM with a load average of 40) that was most of a
// 50-node rollout. The controller's client limits (DefaultQPS,
// DefaultBurst) still bound the rate.
const writeParallelism = 16

// annotateAll makes the writes concurrently and returns each one's error.
func (r *permitReconciler) annotateAll(ctx context.Context, writes []annotationWrite) []error {
	errs := make([]error, len(writes))
	parallel(len(writes), func(i int) {
		errs[i] = r.annotate(ctx, writes[i].name, writes[i].key, writes[i].value)
	})
	return errs
}

// parallel calls f(0..n-1), at most writeParallelism at a time, and
// returns when all calls have.
func parallel(n int, f func(i int)) {
	sem := make(chan struct{}, writeParallelism)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
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
