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
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/manifest"
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
	// Extra renders objects beyond manifest.Operands (the webhook
	// configurations with their CA bundle); nil: none.
	Extra func(ctx context.Context, p manifest.Params) ([]client.Object, error)
	// Active is called with the NMState that counts after every change
	// (nil when none is left): the certificate manager runs only while
	// one exists. nil: nothing to tell.
	Active func(ctx context.Context, nm *nmstatev1.NMState)
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
	if o.Active == nil {
		o.Active = func(context.Context, *nmstatev1.NMState) {}
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
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nmstatev1.AddToScheme, nmstatev1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("scheme: %w", err)
		}
	}
	return s, nil
}

// NewManager builds the operator's manager: one controller watching
// NMStates and the workloads it owns. Run is NewManager plus Start.
func NewManager(cfg *rest.Config, opts Options) (manager.Manager, error) {
	opts.defaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
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
		return nil, fmt.Errorf("operator manager: %w", err)
	}
	if opts.HealthProbeBindAddress != "0" {
		ping := func(*http.Request) error { return nil }
		if err := mgr.AddHealthzCheck("ping", ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("ping", ping); err != nil {
			return nil, err
		}
	}
	r := &reconciler{client: mgr.GetClient(), scheme: scheme, opts: opts, log: opts.Logger.WithName("nmstate"),
		extra: opts.Extra, active: opts.Active, now: time.Now}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("nmstate").
		For(&nmstatev1.NMState{}, builder.WithPredicates()).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.DaemonSet{}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("operator controller: %w", err)
	}
	return mgr, nil
}

// Run runs the operator until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := NewManager(cfg, opts)
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
