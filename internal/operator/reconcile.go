package operator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/metrics"
)

// fieldOwner is the operator's name in server-side apply.
const fieldOwner = "knmstate-operator"

// reconciler deploys the operands of the one NMState that counts.
type reconciler struct {
	client client.Client
	// reader reads past the cache what the operator may only get by name
	// (ClusterVersion, the console's configuration); nil: client.
	reader client.Reader
	scheme *runtime.Scheme
	opts   Options
	log    logr.Logger
	// certs runs the webhook's certificate manager while an NMState
	// exists; nil: none (tests of the rest).
	certs *certControl
	now   func() time.Time
	// metrics counts reconciles and their duration (nil: not counted).
	metrics *metrics.Operator
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	res, err := r.reconcile(ctx, req)
	r.metrics.ObserveReconcile(time.Since(start), err)
	return res, err
}

func (r *reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := r.log.WithValues("nmstate", req.Name)
	var nm nmstatev1.NMState
	if err := r.client.Get(ctx, req.NamespacedName, &nm); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted: its operands go with it (owner references); the
			// certificate manager stops unless another one counts.
			return reconcile.Result{}, r.activeNMState(ctx)
		}
		return reconcile.Result{}, err
	}
	if !nm.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	// Only the oldest NMState counts; any other is deleted, as upstream
	// does (the name itself is not enforced).
	var list nmstatev1.NMStateList
	if err := r.client.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}
	if oldest := oldestNMState(list.Items); oldest != nil && oldest.Name != nm.Name {
		log.Info("deleting an NMState that is not the first one", "first", oldest.Name)
		if err := r.client.Delete(ctx, &nm); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	}
	var applyErr error
	if r.certs != nil {
		applyErr = r.certs.sync(ctx, &nm)
	}
	if applyErr == nil {
		applyErr = r.apply(ctx, &nm)
	}
	if applyErr != nil {
		log.Error(applyErr, "deploying the operands")
	}
	return reconcile.Result{}, errors.Join(applyErr, r.writeStatus(ctx, &nm, applyErr))
}

// activeNMState tells the certificate manager whether an NMState is left.
func (r *reconciler) activeNMState(ctx context.Context) error {
	var list nmstatev1.NMStateList
	if err := r.client.List(ctx, &list); err != nil {
		return err
	}
	if r.certs == nil {
		return nil
	}
	return r.certs.sync(ctx, oldestNMState(list.Items))
}

// oldestNMState is the first-created NMState not being deleted (by name
// on a tie).
func oldestNMState(items []nmstatev1.NMState) *nmstatev1.NMState {
	var live []nmstatev1.NMState
	for _, nm := range items {
		if nm.DeletionTimestamp.IsZero() {
			live = append(live, nm)
		}
	}
	if len(live) == 0 {
		return nil
	}
	sort.Slice(live, func(i, j int) bool {
		a, b := live[i].CreationTimestamp, live[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return live[i].Name < live[j].Name
	})
	return &live[0]
}

// params are the manifest inputs for an NMState.
func (r *reconciler) params(ctx context.Context, nm *nmstatev1.NMState) (manifest.Params, error) {
	var annotations map[string]string
	if r.certs != nil {
		var err error
		if annotations, err = r.certs.webhookAnnotations(nm); err != nil {
			return manifest.Params{}, err
		}
	}
	var openshift *manifest.OpenShiftParams
	if r.opts.OpenShift {
		var err error
		if openshift, annotations, err = openShiftParams(ctx, r.client); err != nil {
			return manifest.Params{}, err
		}
	}
	return manifest.Params{
		OpenShift:          openshift,
		Namespace:          r.opts.Namespace,
		Image:              r.opts.Image,
		ImagePullPolicy:    r.opts.ImagePullPolicy,
		Version:            r.opts.Version,
		ManagedBy:          fieldOwner,
		Spec:               nm.Spec,
		HandlerArgs:        r.opts.HandlerArgs,
		WebhookAnnotations: annotations,
	}, nil
}

// apply server-side applies the namespace (never owned: it outlives the
// NMState, as upstream's does) and every operand, owned by the NMState so
// that deleting it removes them.
func (r *reconciler) apply(ctx context.Context, nm *nmstatev1.NMState) error {
	p, err := r.params(ctx, nm)
	if err != nil {
		return err
	}
	objs := manifest.Operands(p)
	plugin, err := r.consolePlugin(ctx)
	if err != nil {
		return err
	}
	if plugin {
		objs = append(objs, manifest.ConsolePlugin(p, r.opts.ConsolePluginImage)...)
	}
	if err := manifest.WithKinds(r.scheme, objs); err != nil {
		return err
	}
	ns := manifest.Namespace(p)
	manifest.OpenShiftify(p, []client.Object{ns})
	if err := manifest.WithKinds(r.scheme, []client.Object{ns}); err != nil {
		return err
	}
	if err := r.applyOne(ctx, ns); err != nil {
		return err
	}
	owner := metav1.OwnerReference{
		APIVersion: nmstatev1.GroupVersion.String(), Kind: "NMState", Name: nm.Name, UID: nm.UID,
		Controller: ptr(true), BlockOwnerDeletion: ptr(true),
	}
	var errs []error
	for _, o := range objs {
		o.SetOwnerReferences([]metav1.OwnerReference{owner})
		if err := r.applyOne(ctx, o); err != nil {
			if meta.IsNoMatchError(err) {
				// An optional kind whose CRD is not installed.
				r.log.V(1).Info("skipping an object of a kind the cluster does not serve", "kind", o.GetObjectKind().GroupVersionKind().Kind, "name", o.GetName())
				continue
			}
			errs = append(errs, err)
		}
	}
	if plugin && len(errs) == 0 {
		added, err := enableConsolePlugin(ctx, r.client, r.apiReader())
		if err != nil {
			return err
		}
		if added {
			r.log.Info("added the console plugin to the console's plugins", "plugin", manifest.ConsolePluginName)
		}
	}
	return errors.Join(errs...)
}

func (r *reconciler) apiReader() client.Reader {
	if r.reader != nil {
		return r.reader
	}
	return r.client
}

// consolePlugin reports whether the console plugin is deployed: on
// OpenShift, with a plugin image, and only when the cluster runs a
// console (the Console capability), as upstream does.
func (r *reconciler) consolePlugin(ctx context.Context) (bool, error) {
	if !r.opts.OpenShift || r.opts.ConsolePluginImage == "" {
		return false, nil
	}
	return consoleEnabled(ctx, r.apiReader())
}

func (r *reconciler) applyOne(ctx context.Context, o client.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// writeStatus computes the NMState's conditions from its workloads and
// writes them when they changed.
func (r *reconciler) writeStatus(ctx context.Context, nm *nmstatev1.NMState, applyErr error) error {
	p := manifest.Params{Namespace: r.opts.Namespace}.WithDefaults()
	var deps []*appsv1.Deployment
	var dss []*appsv1.DaemonSet
	var missing []string
	for _, name := range []string{manifest.ControllerName, manifest.WebhookName} {
		d := &appsv1.Deployment{}
		err := r.client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name}, d)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, "Deployment "+name)
		case err != nil:
			return err
		default:
			deps = append(deps, d)
		}
	}
	ds := &appsv1.DaemonSet{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: manifest.HandlerName}, ds)
	switch {
	case apierrors.IsNotFound(err):
		missing = append(missing, "DaemonSet "+manifest.HandlerName)
	case err != nil:
		return err
	default:
		dss = append(dss, ds)
	}
	conds := conditions(nm.Status.Conditions, deps, dss, missing, applyErr, r.now())
	if sameConditions(conds, nm.Status.Conditions) {
		return nil
	}
	patch := client.MergeFrom(nm.DeepCopy())
	nm.Status.Conditions = conds
	if err := r.client.Status().Patch(ctx, nm, patch); err != nil {
		return fmt.Errorf("NMState %s status: %w", nm.Name, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
