package handler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/internal/lease"
)

// Lock defaults: a handler that stops without releasing the lock (killed,
// node lost) is replaced within LeaseDuration.
const (
	DefaultLockLeaseDuration = 15 * time.Second
	DefaultLockRenewDeadline = 10 * time.Second
	DefaultLockRetryPeriod   = 2 * time.Second
)

// LeaseName is the name of a node's lock Lease: knmstate- and the node's
// name, so it can share a namespace with the kubelets' leases (named after
// their nodes) without meeting them.
func LeaseName(node string) string { return "knmstate-" + node }

// DefaultLockNamespace is where the shipped DaemonSet keeps the node
// locks: a namespace every cluster has, so handlers of two installs in
// different namespaces still meet at the same Lease.
const DefaultLockNamespace = "kube-node-lease"

// LockOptions make a handler take its node's lock before it does anything
// on the node or in the API: a coordination.k8s.io Lease named
// LeaseName(node) in Namespace. A second handler for the same node (an overlapping
// upgrade, a second install) waits, not Ready and writing nothing but its
// attempts to read the Lease, until the holder stops; upstream's handler
// waits on a host file lock the same way.
type LockOptions struct {
	// Namespace holds the Lease (the handler's own namespace).
	Namespace string
	// Identity names this handler in the Lease (the pod's name, or host
	// and process id).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's leader
	// election timings (defaults above).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

func (l *LockOptions) validate() error {
	var errs []error
	if l.Namespace == "" {
		errs = append(errs, errors.New("lock.namespace: required"))
	}
	if l.Identity == "" {
		errs = append(errs, errors.New("lock.identity: required"))
	}
	if l.LeaseDuration == 0 {
		l.LeaseDuration = DefaultLockLeaseDuration
	}
	if l.RenewDeadline == 0 {
		l.RenewDeadline = DefaultLockRenewDeadline
	}
	if l.RetryPeriod == 0 {
		l.RetryPeriod = DefaultLockRetryPeriod
	}
	if !(l.LeaseDuration > l.RenewDeadline && l.RenewDeadline > l.RetryPeriod && l.RetryPeriod > 0) {
		errs = append(errs, fmt.Errorf("lock: want leaseDuration %v > renewDeadline %v > retryPeriod %v > 0",
			l.LeaseDuration, l.RenewDeadline, l.RetryPeriod))
	}
	return errors.Join(errs...)
}

// runLocked runs the handler (run) while holding the node's Lease
// (internal/lease). Until the Lease is held nothing else runs: no
// NodeNetworkState, no enactment, no ready file. The Lease is released
// when ctx ends, once the handler's work has stopped. Losing it stops the
// handler's work, and only then is it given up (a second handler for the
// node cannot start meanwhile); the handler then campaigns again, in this
// process: a renewal fails whenever the node cannot reach the API server
// for the renew deadline (an API server restart, a partition, a policy
// whose probes run on a network it broke), and exiting instead made the
// kubelet restart the pod with a growing back-off, up to five minutes
// during which the node did nothing at all (test/faults).
func runLocked(ctx context.Context, opts Options) error {
	l := opts.Lock
	cs, err := kubernetes.NewForConfig(apiConfig(opts))
	if err != nil {
		return fmt.Errorf("handler %s: node lock client: %w", opts.Node, err)
	}
	log := opts.Log.WithValues("node", opts.Node)
	c, err := lease.New(cs.CoordinationV1(), lease.Options{
		Namespace:     l.Namespace,
		Name:          LeaseName(opts.Node),
		Identity:      l.Identity,
		LeaseDuration: l.LeaseDuration,
		RenewDeadline: l.RenewDeadline,
		RetryPeriod:   l.RetryPeriod,
		Log:           log,
		OnNewLeader:   func(holder string) { log.Info("waiting for the node lock", "holder", holder) },
		OnLost:        func() { log.Info("lost the node lock: stopped, waiting to take it again") },
	})
	if err != nil {
		return fmt.Errorf("handler %s: node lock: %w", opts.Node, err)
	}
	err = c.Run(ctx, func(term context.Context) error {
		log.Info("node lock taken")
		return run(term, opts)
	})
	if errors.Is(err, lease.ErrNotStopped) {
		// The handler's work names the node in its own errors.
		return fmt.Errorf("handler %s: %w", opts.Node, err)
	}
	return err
}
