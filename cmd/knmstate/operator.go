package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/operator"
	"github.com/knmstate/knmstate/internal/version"
)

func newOperatorCmd() *cobra.Command {
	var kubeconfig, pullPolicy, podName, openshift, platforms string
	var verbose bool
	opts := operator.Options{}
	cmd := &cobra.Command{
		Use:   "operator --image IMAGE",
		Short: "Run the operator (NMState → handler, controller, webhook)",
		Long: `Run the operator: for the NMState object that counts (the oldest), it
deploys knmstate's components — RBAC, admission policies, the handler
DaemonSet, the controller and webhook Deployments, certificates — from the
image given (its own), reports their state in the NMState's conditions,
and removes them when the NMState is deleted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(kubeconfig)
			if err != nil {
				return fmt.Errorf("operator: %w", err)
			}
			cfg.UserAgent = "knmstate-operator/" + version.Version
			level := slog.LevelInfo
			if verbose {
				level = slog.Level(-1)
			}
			logger := logr.FromSlogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			ctrllog.SetLogger(logger)
			klog.SetLogger(logger)
			opts.Logger = logger
			opts.ImagePullPolicy = corev1.PullPolicy(pullPolicy)
			if opts.Image == "" && podName != "" {
				if opts.Image, err = operator.OwnImage(cmd.Context(), cfg, opts.Namespace, podName); err != nil {
					return fmt.Errorf("operator: %w", err)
				}
			}
			if opts.Version == "" {
				opts.Version = version.Version
			}
			if opts.OpenShift, err = operator.OpenShiftMode(cfg, openshift); err != nil {
				return fmt.Errorf("operator: %w", err)
			}
			opts.EnabledPlatforms = manifest.ParsePlatforms(platforms)
			// The payload's version, set by the release tooling.
			opts.ReleaseVersion = os.Getenv("RELEASE_VERSION")
			return runOperator(cmd.Context(), cfg, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; empty: the in-cluster service account")
	f.StringVar(&opts.Namespace, "namespace", "nmstate", "namespace of the operands (the operator's own)")
	f.StringVar(&opts.Image, "image", "", "image of the operands (default: the operator's own, read from its pod --pod-name)")
	f.StringVar(&podName, "pod-name", "", "the operator's pod (in --namespace), whose image the operands run")
	f.StringVar(&pullPolicy, "image-pull-policy", "IfNotPresent", "pull policy of the operands' image")
	f.StringArrayVar(&opts.HandlerArgs, "handler-arg", nil, "argument appended to the handler's (repeatable; for test clusters)")
	f.BoolVar(&opts.LeaderElect, "leader-elect", true, "take a Lease before acting")
	f.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", "0", `address of the metrics endpoint; "0" disables it`)
	f.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", "0", `address of /healthz and /readyz; "0" disables them`)
	f.StringVar(&openshift, "openshift", "auto", `OpenShift mode (ClusterOperator, service CA, TLS profile, NMState created on --enabled-platforms): "true", "false", or "auto" (when the cluster serves config.openshift.io)`)
	f.StringVar(&platforms, "enabled-platforms", manifest.DefaultEnabledPlatforms, "OpenShift platform types (comma-separated) where the operator creates the NMState by itself unless the administrator opts out")
	f.StringVar(&opts.ConsolePluginImage, "console-plugin-image", "", "image of the OpenShift console plugin, deployed in OpenShift mode when the cluster's Console capability is enabled; empty: none")
	f.BoolVar(&verbose, "verbose", false, "log every decision")
	return cmd
}
