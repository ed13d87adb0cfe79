package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/knmstate/knmstate/internal/controller"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/internal/scrape"
)

// controllerOptions are the flags of `knmstate controller`.
type controllerOptions struct {
	kubeconfig string
	verbose    bool
	controller.Options
}

func newControllerCmd() *cobra.Command {
	opts := controllerOptions{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the cluster controller (policy status, rollout permits, GC)",
		Long: `Run the cluster controller: the single writer of policy status, which
hands out rollout permits (at most maxUnavailable nodes apply a policy at a
time) and collects enactments whose policy or node is gone. Run several
replicas with --leader-elect; only the holder of the Lease acts. A replica
that loses the Lease (an API server outage longer than --renew-deadline)
stops acting and campaigns again; one that finds the API server down, or
not serving the CRDs yet, waits for it (1 s doubling to 30 s between
attempts). Metrics and health are served all along.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return fmt.Errorf("controller: %w", err)
			}
			cfg, err := loadConfig(opts.kubeconfig)
			if err != nil {
				return fmt.Errorf("controller: %w", err)
			}
			cfg.UserAgent = "knmstate-controller"
			level := slog.LevelInfo
			if opts.verbose {
				level = slog.Level(-1) // logr V(1)
			}
			logger := logr.FromSlogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			// client-go and controller-runtime log through these globals;
			// setting them is the command's job, not the library's.
			ctrllog.SetLogger(logger)
			klog.SetLogger(logger)
			opts.Logger = logger
			return controller.Run(cmd.Context(), cfg, opts.Options)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig file; empty: the in-cluster service account")
	f.BoolVar(&opts.verbose, "verbose", false, "log every decision written")
	f.BoolVar(&opts.LeaderElect, "leader-elect", true, "take the Lease before acting, so that one replica acts at a time")
	f.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "nmstate", "namespace of the Lease")
	f.StringVar(&opts.LeaderElectionID, "leader-election-id", "knmstate-controller", "name of the Lease")
	f.DurationVar(&opts.LeaseDuration, "lease-duration", 15*time.Second, "how long a Lease is valid without renewal")
	f.DurationVar(&opts.RenewDeadline, "renew-deadline", 10*time.Second, "how long the leader retries renewing before it gives up")
	f.DurationVar(&opts.RetryPeriod, "retry-period", 2*time.Second, "interval between election attempts")
	scrape.BindFlags(f, &opts.Metrics, true)
	f.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", "0", `address of /healthz and /readyz; "0" disables them`)
	f.DurationVar(&opts.Rollout.ReclaimAfter, "reclaim-after", rollout.DefaultConfig.ReclaimAfter, "take back the rollout permit of a node NotReady for this long")
	f.DurationVar(&opts.Rollout.GCGrace, "gc-grace", rollout.DefaultConfig.GCGrace, "minimum age of an enactment before it is garbage-collected")
	return cmd
}
