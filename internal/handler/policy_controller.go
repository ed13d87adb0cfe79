package handler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	crhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/probe"
)

// Defaults of PolicyOptions.
const (
	// DefaultMaxRetries is upstream's NNCP_MAX_RETRIES: failed attempts
	// per policy generation before the enactment ends Failing.
	DefaultMaxRetries = 5
	// DefaultRetryBackoff and DefaultRetryMaxBackoff bound the exponential
	// back-off between attempts (upstream: 1 s → 30 s).
	DefaultRetryBackoff    = time.Second
	DefaultRetryMaxBackoff = 30 * time.Second
)

// PolicyBackend reads and changes the node's network (the kernel backend).
type PolicyBackend = apply.Backend

// PolicyOptions configure the policy side of one node's handler.
type PolicyOptions struct {
	// Node is the Node's name.
	Node string
	// Backend reaches the node's network namespace.
	Backend PolicyBackend
	// NetNS, ResolvConf and UTSNS name the node's namespaces (recorded in
	// checkpoints; NetNS is where the probes run).
	NetNS, ResolvConf, UTSNS string
	// OVSDB is the node's Open vSwitch database socket (recorded in
	// checkpoints; "" = none).
	OVSDB string
	// StateDir holds the checkpoint record and its lock (required).
	StateDir string
	// Probes tunes the probes (timeouts, DNS host). NetNS, Show and Node
	// are filled in from these options; Probes.API (the API server as the
	// node reaches it) enables the api-server and node-readiness probes.
	Probes probe.Options
	// NoProbes applies without probing (no rollback on lost connectivity).
	NoProbes bool
	// MaxRetries is the number of failed attempts per generation (default
	// DefaultMaxRetries).
	MaxRetries int
	// RetryBackoff is the pause after the first failure, doubled after each
	// further one up to RetryMaxBackoff.
	RetryBackoff, RetryMaxBackoff time.Duration
	// VerifyRetries and VerifyInterval tune pkg/apply's verification (0 =
	// its defaults).
	VerifyRetries  int
	VerifyInterval time.Duration
	// Labels are added to every enactment created (relationship labels).
	Labels map[string]string
	// NoDefaultBridgeVLANs leaves linux-bridge ports without upstream's
	// default VLAN trunk (for kernels that cannot filter VLANs on bridges).
	NoDefaultBridgeVLANs bool
	// Log receives the reconciler's logs.
	Log logr.Logger
	// Metrics counts applies, rollbacks, probe failures and enactment
	// writes; nil counts nothing.
	Metrics *metrics.Handler
	// OnApply, when set, is called right before each apply.
	OnApply func(policy string)
	// Watch, when set, signals changes of the node's network (the kernel
	// backend's Watch): they wake drift detection (drift.go). Nil detects
	// drift only when something else wakes the reconciler.
	Watch func(ctx context.Context) (<-chan struct{}, error)
}

func (o *PolicyOptions) validate() error {
	var errs []error
	if o.Node == "" {
		errs = append(errs, errors.New("node: required"))
	}
	if o.Backend == nil {
		errs = append(errs, errors.New("backend: required"))
	}
	if o.StateDir == "" {
		errs = append(errs, errors.New("stateDir: required (checkpoint records)"))
	}
	if o.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("maxRetries: %d is negative", o.MaxRetries))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultMaxRetries
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.RetryMaxBackoff <= 0 {
		o.RetryMaxBackoff = DefaultRetryMaxBackoff
	}
	o.Probes.NetNS = o.NetNS
	o.Probes.Node = o.Node
	o.Probes.Show = o.Backend.Show
	o.Probes = o.Probes.WithDefaults()
	return nil
}

// PolicyReconciler reconciles the policies that match one node into that
// node's network and its enactments. It runs in one worker: one policy at
// a time, so one nmstate transaction at a time on the node.
type PolicyReconciler struct {
	opts   PolicyOptions
	client client.Client
	// api reads without the cache: the enactment before deciding (our own
	// last status write may not be cached yet) and the policy right before
	// applying.
	api    client.Reader
	events events.EventRecorder
	tx     *transaction
	log    logr.Logger

	// recovered is set once a checkpoint left by an earlier run has been
	// dealt with (under recoverMu).
	recoverMu sync.Mutex
	recovered bool

	mu sync.Mutex
	// notBefore holds, per policy, when the next retry is due, so another
	// event (a label change) does not cut the back-off short.
	notBefore map[string]time.Time
	// repairs holds the back-off of drift repairs, per policy.
	repairs map[string]*repairState

	// driftEvents queues policies for repair (knmstate.io/enforce).
	driftEvents chan event.GenericEvent
}

// NewPolicyReconciler checks the options; SetupWithManager connects the
// reconciler to a manager.
func NewPolicyReconciler(opts PolicyOptions) (*PolicyReconciler, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("policy reconciler options: %w", err)
	}
	r := &PolicyReconciler{opts: opts, log: opts.Log.WithValues("node", opts.Node), notBefore: map[string]time.Time{},
		repairs: map[string]*repairState{}, driftEvents: make(chan event.GenericEvent, 16)}
	r.tx = &transaction{
		backend:        opts.Backend,
		stateDir:       opts.StateDir,
		netns:          opts.NetNS,
		resolvConf:     opts.ResolvConf,
		utsNS:          opts.UTSNS,
		ovsdb:          opts.OVSDB,
		probes:         opts.Probes,
		noProbes:       opts.NoProbes,
		timeout:        checkpointTimeout(opts.Probes),
		verifyRetries:  opts.VerifyRetries,
		verifyInterval: opts.VerifyInterval,
		log:            r.log,
		node:           opts.Node,
		metrics:        opts.Metrics,
	}
	return r, nil
}

// PolicyScheme returns a scheme with the types the policy side uses.
func PolicyScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nmstatev1.AddToScheme, nmstatev1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// PolicyCacheOptions scopes a manager's cache as upstream's handler does:
// only this node's enactments (by the nmstate.io/node label) and this Node
// (by name); policies cluster-wide.
func PolicyCacheOptions(node string) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&nmstatev1beta1.NodeNetworkConfigurationEnactment{}: {
			Label: labels.SelectorFromSet(labels.Set{shared.EnactmentNodeLabel: node}),
		},
		&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", node)},
	}}
}

// NewPolicyManager returns a manager for one node's policy reconciler:
// scoped cache, no metrics or health servers, no leader election (one
// handler per node).
func NewPolicyManager(cfg *rest.Config, node string, log logr.Logger) (manager.Manager, error) {
	scheme, err := PolicyScheme()
	if err != nil {
		return nil, fmt.Errorf("policy scheme: %w", err)
	}
	co := PolicyCacheOptions(node)
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  co,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 log,
	})
}

// SetupWithManager registers the reconciler: policies (created, deleted,
// or with a new generation), this node's enactments (the controller's
// permit and abort annotations, deletions) and this Node (label changes
// re-evaluate every selector, in policy name order).
func (r *PolicyReconciler) SetupWithManager(mgr manager.Manager) error {
	r.client = mgr.GetClient()
	r.api = mgr.GetAPIReader()
	r.events = mgr.GetEventRecorder(r.opts.Node + ".nmstate-handler")
	// At start, even with no policy to reconcile.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := r.RecoverCheckpoint(ctx); err != nil {
			r.log.Error(err, "rolling back a pending checkpoint at start; retried before the first apply")
		}
		return nil
	})); err != nil {
		return fmt.Errorf("policy reconciler: %w", err)
	}
	if r.opts.Watch != nil {
		if err := mgr.Add(manager.RunnableFunc(r.watchDrift)); err != nil {
			return fmt.Errorf("policy reconciler: %w", err)
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("policy-"+r.opts.Node).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: 1,
			NewQueue:                policyQueue,
			// Errors (API unreachable, state unreadable) back off as
			// upstream's NNCP_INITIAL/MAX_BACKOFF_SECONDS.
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](r.opts.RetryBackoff, r.opts.RetryMaxBackoff),
			// The lab runs many nodes' handlers in one process.
			SkipNameValidation: ptr.To(true),
		}).
		For(&nmstatev1.NodeNetworkConfigurationPolicy{}, builder.WithPredicates(extension.PolicyChanged())).
		Watches(&nmstatev1beta1.NodeNetworkConfigurationEnactment{}, crhandler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				if p := o.GetLabels()[shared.EnactmentPolicyLabel]; p != "" && o.GetLabels()[shared.EnactmentNodeLabel] == r.opts.Node {
					return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p}}}
				}
				return nil
			}), builder.WithPredicates(rolloutAnnotationsChanged{})).
		Watches(&corev1.Node{}, crhandler.EnqueueRequestsFromMapFunc(r.allPolicies), builder.WithPredicates(nodeLabelsChanged{node: r.opts.Node})).
		WatchesRawSource(source.Channel(r.driftEvents, &crhandler.EnqueueRequestForObject{})).
		// knmstate.io/after: a policy's progress on this node, or its
		// creation, wakes the policies after it.
		Watches(&nmstatev1beta1.NodeNetworkConfigurationEnactment{}, crhandler.EnqueueRequestsFromMapFunc(r.dependentsOfEnactment),
			builder.WithPredicates(conditionsChanged{})).
		Watches(&nmstatev1.NodeNetworkConfigurationPolicy{}, crhandler.EnqueueRequestsFromMapFunc(r.dependentsOfPolicy),
			builder.WithPredicates(createdOrDeleted{})).
		Complete(r)
}

// allPolicies enqueues every policy, sorted by name: the workqueue keeps
// the order, so policies are applied in name order.
func (r *PolicyReconciler) allPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	var list nmstatev1.NodeNetworkConfigurationPolicyList
	if err := r.client.List(ctx, &list); err != nil {
		r.log.Error(err, "listing policies")
		return nil
	}
	names := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	out := make([]reconcile.Request, len(names))
	for i, n := range names {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: n}}
	}
	return out
}

// rolloutAnnotationsChanged passes enactment creations, deletions and
// changes of the permit or abort annotation; the handler's own status
// writes do not wake it.
type rolloutAnnotationsChanged struct{ predicate.Funcs }

func (rolloutAnnotationsChanged) Create(event.CreateEvent) bool   { return true }
func (rolloutAnnotationsChanged) Delete(event.DeleteEvent) bool   { return true }
func (rolloutAnnotationsChanged) Generic(event.GenericEvent) bool { return false }
func (rolloutAnnotationsChanged) Update(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
	return o[rollout.PermitAnnotation] != n[rollout.PermitAnnotation] || o[rollout.AbortAnnotation] != n[rollout.AbortAnnotation]
}

// nodeLabelsChanged passes this node's creation (the first sync) and label
// changes.
type nodeLabelsChanged struct {
	predicate.Funcs
	node string
}

func (p nodeLabelsChanged) Create(e event.CreateEvent) bool { return e.Object.GetName() == p.node }
func (nodeLabelsChanged) Delete(event.DeleteEvent) bool     { return false }
func (nodeLabelsChanged) Generic(event.GenericEvent) bool   { return false }
func (p nodeLabelsChanged) Update(e event.UpdateEvent) bool {
	return e.ObjectNew.GetName() == p.node && !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
}

// selectorMatches is upstream's equality-only node selector.
func selectorMatches(sel map[string]string, nodeLabels map[string]string) bool {
	for k, v := range sel {
		if w, ok := nodeLabels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// RecoverCheckpoint rolls back a checkpoint left pending by an earlier run
// of the handler (a crash or restart between apply and commit), once: the
// change it guards was never confirmed by the probes. Reconcile calls it
// before anything else; the skeleton may call it earlier.
func (r *PolicyReconciler) RecoverCheckpoint(ctx context.Context) error {
	r.recoverMu.Lock()
	defer r.recoverMu.Unlock()
	if r.recovered {
		return nil
	}
	if err := r.tx.recover(ctx); err != nil {
		return err
	}
	r.recovered = true
	return nil
}
