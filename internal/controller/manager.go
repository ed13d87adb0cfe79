package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/internal/scrape"
)

// DefaultQPS and DefaultBurst limit the controller's API requests when its
// configuration does not (a kubeconfig file cannot).
const (
	DefaultQPS   = 100
	DefaultBurst = 200
)

// withRateLimit gives cfg the controller's request limits unless it has
// its own. client-go's default of 5 requests per second (burst 10) would
// pace a many-node rollout's permits and status writes; the controller
// serves every node.
func withRateLimit(cfg *rest.Config) *rest.Config {
	if cfg.QPS != 0 {
		return cfg
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	return cfg
}

// Options configure the controller. The zero value of a field means its
// default; Validate reports bad combinations.
type Options struct {
	// LeaderElect makes the instance take a Lease before acting, so that
	// only one of several replicas writes. A replica that loses the Lease
	// stops acting and campaigns again (Run).
	LeaderElect bool
	// LeaderElectionNamespace and LeaderElectionID name the Lease; defaults
	// "nmstate" and "knmstate-controller" (deploy/rbac grants exactly that
	// Lease).
	LeaderElectionNamespace string
	LeaderElectionID        string
	// LeaseDuration, RenewDeadline and RetryPeriod tune the election;
	// defaults 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Metrics is the metrics endpoint (disabled by default): controller-
	// runtime's metrics, the controller's counters and, on the leader,
	// kubernetes-nmstate's gauges (docs/metrics.md).
	Metrics scrape.Options
	// HealthProbeBindAddress serves /healthz and /readyz; "" or "0"
	// disables.
	HealthProbeBindAddress string
	// Rollout holds the time limits of the decisions; zero fields take
	// rollout.DefaultConfig's.
	Rollout rollout.Config
	// Logger receives the controller's logs; default discards.
	Logger logr.Logger
	// Clock returns the current time; default time.Now. Tests never need
	// it, it keeps the decisions' `now` in one place.
	Clock func() time.Time

	// gaugeRegistry receives the leader's kubernetes-nmstate gauges;
	// default controller-runtime's metrics.Registry (what the metrics
	// endpoint serves). Tests of several replicas in one process give each
	// its own.
	gaugeRegistry prometheus.Registerer
	// identity names this replica in the Lease; default the host name
	// (the pod's name) and a random suffix, as controller-runtime's. It
	// stays the same for every term of the process, so a replica that lost
	// the Lease to an outage takes it back at once.
	identity string
	// onTerm, when set, is told that term n starts (leading, just before
	// its manager starts) and that it has ended (once its manager has
	// stopped): tests learn which replica acts, and when.
	onTerm func(n int, leading bool)
}

func (o *Options) defaults() {
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = "nmstate"
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = "knmstate-controller"
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 15 * time.Second
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = 10 * time.Second
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = 2 * time.Second
	}
	if o.HealthProbeBindAddress == "" {
		o.HealthProbeBindAddress = "0"
	}
	if o.Rollout.ReclaimAfter == 0 {
		o.Rollout.ReclaimAfter = rollout.DefaultConfig.ReclaimAfter
	}
	if o.Rollout.GCGrace == 0 {
		o.Rollout.GCGrace = rollout.DefaultConfig.GCGrace
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.gaugeRegistry == nil {
		o.gaugeRegistry = ctrlmetrics.Registry
	}
	if o.identity == "" {
		host, _ := os.Hostname() // a name only helps a person reading the Lease
		o.identity = host + "_" + string(uuid.NewUUID())
	}
	if o.onTerm == nil {
		o.onTerm = func(int, bool) {}
	}
}

// Validate reports option values that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.LeaseDuration < 0 || o.RenewDeadline < 0 || o.RetryPeriod < 0 {
		errs = append(errs, errors.New("leader election durations must not be negative"))
	}
	if o.LeaseDuration != 0 && o.RenewDeadline != 0 && o.RenewDeadline >= o.LeaseDuration {
		errs = append(errs, fmt.Errorf("renew deadline %v must be shorter than lease duration %v", o.RenewDeadline, o.LeaseDuration))
	}
	if o.Rollout.ReclaimAfter < 0 {
		errs = append(errs, fmt.Errorf("reclaim-after %v must not be negative", o.Rollout.ReclaimAfter))
	}
	if o.Rollout.GCGrace < 0 {
		errs = append(errs, fmt.Errorf("gc-grace %v must not be negative", o.Rollout.GCGrace))
	}
	return errors.Join(errs...)
}

// Scheme returns the types the controller reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, nmstatev1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("scheme: %w", err)
		}
	}
	return s, nil
}

// newManager builds the manager of one term: the five reconcilers and the
// leader's gauges. It has no leader election, metrics or health endpoint
// of its own: Run serves those for the whole process and takes the Lease
// before it starts a term's manager, so a manager only ever runs while
// its replica holds the Lease. opts must have its defaults.
func newManager(cfg *rest.Config, opts Options, m *metrics.Controller) (manager.Manager, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	skip := true
	// With leader election, the term (internal/lease) waits for a stopped
	// manager to end before it gives the Lease up, so that two terms never
	// write at once, and bounds that wait itself (termStopTimeout); without,
	// the manager bounds it.
	waitForAll := time.Duration(-1)
	if !opts.LeaderElect {
		waitForAll = termStopTimeout
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                  scheme,
		Logger:                  opts.Logger,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: &waitForAll,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&v1beta1.NodeNetworkState{}: {Transform: reduceNodeNetworkState},
		}},
		// Controller names only have to be unique for metrics; every term
		// registers the same five, and tests run several instances in one
		// process.
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	if err := setup(context.Background(), mgr, opts, m); err != nil {
		return nil, err
	}
	if err := serveGauges(mgr, opts.gaugeRegistry, opts.Logger.WithName("gauges")); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Run runs the controller until ctx ends. Its metrics and health
// endpoints serve for the whole process, whether or not this replica
// leads; the reconcilers run in terms (runTerms): with leader election
// only while the replica holds the Lease, a fresh manager each time.
// Losing the Lease, an API server that is down or does not serve the CRDs
// yet do not end Run; bad options and an endpoint that cannot serve do.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("controller options: %w", err)
	}
	opts.defaults()
	cfg = withRateLimit(cfg)
	// One HTTP client for the endpoints, the elections and the API checks
	// of every term (a term's manager builds its own: controller-runtime
	// 0.24's manager takes none).
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("controller: api client: %w", err)
	}
	m, err := metrics.NewController(ctrlmetrics.Registry)
	if err != nil {
		return fmt.Errorf("controller metrics: %w", err)
	}
	parent := ctx
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	endpoints, err := serveEndpoints(ctx, stop, cfg, hc, opts)
	if err != nil {
		return err
	}
	defer func() {
		stop(nil)
		<-endpoints
	}()
	if err := runTerms(ctx, cfg, hc, opts, m); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if parent.Err() != nil {
		return nil
	}
	// An endpoint stopped serving.
	return fmt.Errorf("controller: %w", context.Cause(ctx))
}
