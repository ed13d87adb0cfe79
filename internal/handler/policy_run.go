package handler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/pkg/probe"
)

// PolicySettings are the tunables of the policy side of a handler, as
// `knmstate handler` flags set them (BindPolicyFlags). The zero value
// means the defaults.
type PolicySettings struct {
	// Disabled runs the handler as a NodeNetworkState reporter only.
	Disabled bool
	// MaxRetries, RetryBackoff, RetryMaxBackoff: see PolicyOptions.
	MaxRetries                    int
	RetryBackoff, RetryMaxBackoff time.Duration
	// NoProbes applies without connectivity probes.
	NoProbes bool
	// DNSHost is the name the DNS probe looks up.
	DNSHost string
	// Probe timeouts after an apply, and before it for ping and DNS.
	PingTimeout, DNSTimeout, APITimeout, NodeTimeout, SelectTimeout time.Duration
	// NoDefaultBridgeVLANs: see PolicyOptions. Not a flag: Run sets it
	// from what the kernel can do.
	NoDefaultBridgeVLANs bool
}

// BindPolicyFlags registers the policy flags on fs.
func BindPolicyFlags(fs *pflag.FlagSet, s *PolicySettings) {
	fs.BoolVar(&s.Disabled, "no-policies", false, "only report the NodeNetworkState; do not apply policies")
	fs.IntVar(&s.MaxRetries, "max-retries", DefaultMaxRetries, "failed apply attempts per policy generation before the enactment fails (NNCP_MAX_RETRIES)")
	fs.DurationVar(&s.RetryBackoff, "retry-backoff", DefaultRetryBackoff, "pause after the first failed apply, doubled after each further failure")
	fs.DurationVar(&s.RetryMaxBackoff, "retry-max-backoff", DefaultRetryMaxBackoff, "longest pause between apply attempts")
	fs.BoolVar(&s.NoProbes, "no-probes", false, "commit applies without connectivity probes (no rollback on lost connectivity)")
	fs.StringVar(&s.DNSHost, "probe-dns-host", probe.DefaultDNSHost, "name the DNS probe resolves (NS lookup for root-servers.net, address lookup otherwise)")
	fs.DurationVar(&s.PingTimeout, "probe-ping-timeout", probe.DefaultPingTimeout, "how long the default gateway may take to answer after an apply")
	fs.DurationVar(&s.DNSTimeout, "probe-dns-timeout", probe.DefaultDNSTimeout, "how long name resolution may take to work after an apply")
	fs.DurationVar(&s.APITimeout, "probe-api-timeout", probe.DefaultAPITimeout, "how long the API server may take to answer after an apply")
	fs.DurationVar(&s.NodeTimeout, "probe-node-timeout", probe.DefaultNodeTimeout, "how long the Node may take to be Ready after an apply")
	fs.DurationVar(&s.SelectTimeout, "probe-select-timeout", probe.DefaultSelectTimeout, "how long ping and DNS may take to pass before an apply (else they are not checked after it)")
}

// RunPolicies runs the policy side of a node's handler until ctx ends: a
// manager with the scoped cache and the PolicyReconciler. cfg reaches the
// API server the way the node does (the skeleton's dialer); it is also what
// the api-server and node-readiness probes use. A pending checkpoint is
// rolled back before the manager starts.
func RunPolicies(ctx context.Context, cfg *rest.Config, opts PolicyOptions, log logr.Logger) error {
	r, err := NewPolicyReconciler(opts)
	if err != nil {
		return err
	}
	if err := r.RecoverCheckpoint(ctx); err != nil {
		// Not fatal: Reconcile tries again before the first apply.
		log.Error(err, "rolling back a pending checkpoint at start")
	}
	mgr, err := NewPolicyManager(cfg, opts.Node, log)
	if err != nil {
		return fmt.Errorf("policy manager: %w", err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("policy reconciler: %w", err)
	}
	if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("policy manager: %w", err)
	}
	return nil
}

// PolicyOptionsFor builds the reconciler's options from the handler's
// options and settings.
func PolicyOptionsFor(o Options, s PolicySettings, b PolicyBackend, api *rest.Config) PolicyOptions {
	po := PolicyOptions{
		Node:            o.Node,
		Backend:         b,
		NetNS:           o.NetNS,
		ResolvConf:      o.ResolvConf,
		UTSNS:           o.UTSNS,
		OVSDB:           o.OVSDB,
		StateDir:        o.StateDir,
		NoProbes:        s.NoProbes,
		MaxRetries:      s.MaxRetries,
		RetryBackoff:    s.RetryBackoff,
		RetryMaxBackoff: s.RetryMaxBackoff,
		Labels:          o.Labels,
		Log:             o.Log,
		Metrics:         o.Instruments,

		NoDefaultBridgeVLANs: s.NoDefaultBridgeVLANs,
		Probes: probe.Options{
			DNSHost:       s.DNSHost,
			API:           api,
			PingTimeout:   s.PingTimeout,
			DNSTimeout:    s.DNSTimeout,
			APITimeout:    s.APITimeout,
			NodeTimeout:   s.NodeTimeout,
			SelectTimeout: s.SelectTimeout,
		},
	}
	return po
}

// startPolicies runs the policy side next to the NodeNetworkState
// reporter (watch: the node's network changes, for drift detection), when enabled (settings not Disabled, and a StateDir for the
// checkpoints). The channel yields RunPolicies' result once it
// returns (nil at once when disabled); a failure calls stop, so the whole
// handler ends and is restarted rather than run half.
func startPolicies(ctx context.Context, stop context.CancelFunc, opts Options, settings PolicySettings, b PolicyBackend,
	watch func(context.Context) (<-chan struct{}, error), cfg *rest.Config, log logr.Logger) <-chan error {
	done := make(chan error, 1)
	if settings.Disabled || opts.StateDir == "" {
		if !settings.Disabled {
			log.Info("policies are not applied: no state directory for checkpoints")
		}
		done <- nil
		return done
	}
	go func() {
		po := PolicyOptionsFor(opts, settings, b, cfg)
		po.Watch = watch
		err := RunPolicies(ctx, cfg, po, log)
		if err != nil {
			stop()
		}
		done <- err
	}()
	return done
}
