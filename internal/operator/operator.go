package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/metrics"
)

// Options configure the operator.
type Options struct {
	// Namespace holds the operands (and the operator); default
	// manifest.DefaultNamespace.
	Namespace string
	// Image is the operands' image: the operator's own.
	Image string
	// ImagePullPolicy of the operands; default IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
	// Version labels the operands (app.kubernetes.io/version).
	Version string
	// HandlerArgs are appended to the handler's arguments.
	HandlerArgs []string
	// LeaderElect takes a Lease (named like the operator, in Namespace)
	// before acting.
	LeaderElect bool
	// MetricsBindAddress and HealthProbeBindAddress: "" or "0" disables.
	MetricsBindAddress, HealthProbeBindAddress string
	// Logger receives the operator's logs; default discards.
	Logger logr.Logger
	// NoCertificates runs no certificate manager (tests of the rest).
	NoCertificates bool
	// OpenShift runs the OpenShift mode: the service CA issues the
	// webhook's certificate, the webhook follows the cluster's TLS
	// profile, ClusterOperator/nmstate reports the state, and the NMState
	// is created by itself on EnabledPlatforms.
	OpenShift bool
	// EnabledPlatforms are the Infrastructure platform types
	// (status.platformStatus.type) where the operator creates the NMState
	// unless the administrator opted out.
	EnabledPlatforms []string
	// ReleaseVersion is the version the ClusterOperator reports (the
	// payload's); default Version.
	ReleaseVersion string
	// ConsolePluginImage is the OpenShift console plugin's image; the
	// plugin is deployed in OpenShift mode when the Console capability is
	// enabled and this is set.
	ConsolePluginImage string
}

func (o *Options) defaults() {
	if o.Namespace == "" {
		o.Namespace = manifest.DefaultNamespace
	}
	if o.MetricsBindAddress == "" {
		o.MetricsBindAddress = "0"
	}
	if o.HealthProbeBindAddress == "" {
		o.HealthProbeBindAddress = "0"
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.ReleaseVersion == "" {
		o.ReleaseVersion = o.Version
	}
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	if o.Image == "" {
		return errors.New("the operands' image is required (--image)")
	}
	return nil
}

// Scheme is what the operator reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s, err := manifest.Scheme()
	if err != nil {
		return nil, err
	}
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nmstatev1.AddToScheme, nmstatev1beta1.AddToScheme, configv1.Install} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("scheme: %w", err)
		}
	}
	return s, nil
}

// NewManager builds the operator's manager: one controller watching
// NMStates and the workloads it owns. Run is NewManager plus Start; stop
// (never nil) ends what the controller started beside the manager (the
// certificate manager) once the manager is done.
func NewManager(cfg *rest.Config, opts Options) (mgr manager.Manager, stop func(), err error) {
	stop = func() {}
	opts.defaults()
	if err := opts.Validate(); err != nil {
		return nil, stop, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, stop, err
	}
	mgr, err = ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  opts.Logger,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        manifest.OperatorName,
		LeaderElectionNamespace: opts.Namespace,
		// The workloads it deploys live in one namespace; NMStates are
		// cluster-scoped.
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}},
		Controller: config.Controller{
			SkipNameValidation: ptr(true),
		},
	})
	if err != nil {
		return nil, stop, fmt.Errorf("operator manager: %w", err)
	}
	if opts.HealthProbeBindAddress != "0" {
		ping := func(*http.Request) error { return nil }
		if err := mgr.AddHealthzCheck("ping", ping); err != nil {
			return nil, stop, err
		}
		if err := mgr.AddReadyzCheck("ping", ping); err != nil {
			return nil, stop, err
		}
	}
	m, err := metrics.NewOperator(ctrlmetrics.Registry)
	if err != nil {
		return nil, stop, fmt.Errorf("operator metrics: %w", err)
	}
	r := &reconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), scheme: scheme, opts: opts, log: opts.Logger.WithName("nmstate"), now: time.Now, metrics: m}
	if !opts.NoCertificates && !opts.OpenShift {
		if r.certs, err = newCertControl(cfg, opts.Namespace, opts.Logger.WithName("certificates")); err != nil {
			return nil, stop, err
		}
		stop = r.certs.stop
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("nmstate").
		For(&nmstatev1.NMState{}, builder.WithPredicates()).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.DaemonSet{}).
		Complete(r)
	if err != nil {
		return nil, stop, fmt.Errorf("operator controller: %w", err)
	}
	if opts.OpenShift {
		if err := addOpenShift(mgr, r, opts); err != nil {
			return nil, stop, err
		}
	}
	return mgr, stop, nil
}

// addOpenShift adds the ClusterOperator controller, and re-renders the
// operands when the cluster's TLS profile or its capabilities change.
func addOpenShift(mgr manager.Manager, r *reconciler, opts Options) error {
	co := &clusterOperator{client: mgr.GetClient(), reader: mgr.GetAPIReader(), opts: opts, log: opts.Logger.WithName("clusteroperator"), now: time.Now}
	toCO := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{clusterOperatorRequest}
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("clusteroperator").
		WatchesRawSource(source.Kind(mgr.GetCache(), client.Object(&configv1.ClusterOperator{}), toCO,
			predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == manifest.ClusterOperatorName }))).
		Watches(&nmstatev1.NMState{}, toCO).
		Watches(&configv1.Infrastructure{}, toCO).
		Watches(&appsv1.Deployment{}, toCO).
		Watches(&appsv1.DaemonSet{}, toCO).
		Watches(&corev1.ConfigMap{}, toCO, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == manifest.OperatorConfigName
		}))).
		Complete(co)
	if err != nil {
		return fmt.Errorf("clusteroperator controller: %w", err)
	}
	// The TLS profile is the webhook's: every NMState is rendered again.
	toNMStates := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list nmstatev1.NMStateList
		if err := r.client.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, nm := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nm.Name}})
		}
		return out
	})
	// So is the console plugin, when the Console capability appears.
	err = ctrl.NewControllerManagedBy(mgr).
		Named("tlsprofile").
		Watches(&configv1.APIServer{}, toNMStates).
		Watches(&configv1.ClusterVersion{}, toNMStates, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetName() == manifest.ClusterVersionName
		}))).
		Complete(r)
	if err != nil {
		return fmt.Errorf("tls profile controller: %w", err)
	}
	return nil
}

// Run runs the operator until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, stop, err := NewManager(cfg, opts)
	defer stop()
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// OwnImage is the image of the operator's own container (named
// "operator") in its pod: the operands run the same binary.
func OwnImage(ctx context.Context, cfg *rest.Config, namespace, pod string) (string, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return "", err
	}
	var p corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pod}, &p); err != nil {
		return "", fmt.Errorf("reading its own pod %s/%s: %w", namespace, pod, err)
	}
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == "operator" {
			return ctr.Image, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container named operator", namespace, pod)
}
