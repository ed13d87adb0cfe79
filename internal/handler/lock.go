package handler

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
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

// ErrLockLost ends a term of the handler that could not renew its node
// lock: another handler may own the node now, so this one stops working.
var ErrLockLost = errors.New("lost the node lock")

// runLocked runs the handler (run) while holding the node's Lease. Until
// the Lease is held nothing else runs: no NodeNetworkState, no enactment,
// no ready file. The Lease is released when ctx ends. Losing it stops the
// handler's work (ErrLockLost) and it campaigns again, in this process:
// a renewal fails whenever the node cannot reach the API server for the
// renew deadline (an API server restart, a partition, a policy whose
// probes run on a network it broke), and exiting instead made the kubelet
// restart the pod with a growing back-off, up to five minutes during
// which the node did nothing at all (test/faults).
func runLocked(ctx context.Context, opts Options) error {
	for {
		err := runTerm(ctx, opts)
		if !errors.Is(err, ErrLockLost) || ctx.Err() != nil {
			return err
		}
		opts.Log.Info("lost the node lock: stopped, waiting to take it again", "node", opts.Node)
	}
}

// runTerm is one term of the handler: it waits for the node lock and
// runs the handler while it holds it.
func runTerm(ctx context.Context, opts Options) error {
	l := opts.Lock
	cs, err := kubernetes.NewForConfig(apiConfig(opts))
	if err != nil {
		return fmt.Errorf("handler %s: node lock client: %w", opts.Node, err)
	}
	log := opts.Log.WithValues("node", opts.Node, "lease", l.Namespace+"/"+LeaseName(opts.Node), "identity", l.Identity)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The election hands over the context of its term; the handler runs
	// here, not in the election's callback goroutine, so it has stopped
	// before runLocked returns.
	leading := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: l.Namespace, Name: LeaseName(opts.Node)},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: l.Identity},
		},
		LeaseDuration:   l.LeaseDuration,
		RenewDeadline:   l.RenewDeadline,
		RetryPeriod:     l.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            "knmstate-handler-" + opts.Node,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(term context.Context) { leading <- term },
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != l.Identity {
					log.Info("waiting for the node lock", "holder", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("handler %s: node lock: %w", opts.Node, err)
	}
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		elector.Run(runCtx)
	}()
	var term context.Context
	select {
	case term = <-leading:
	case <-elected:
		select {
		case term = <-leading:
		default:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("handler %s: node lock not taken", opts.Node)
		}
	}
	log.Info("node lock taken")
	runErr := run(term, opts)
	lost := term.Err() != nil && runCtx.Err() == nil
	// Ends the term (the Lease is released if still held) and waits for it.
	cancel()
	<-elected
	switch {
	case ctx.Err() != nil:
		return nil
	case lost:
		return fmt.Errorf("handler %s: %w", opts.Node, ErrLockLost)
	}
	return runErr
}
