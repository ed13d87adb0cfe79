package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/metrics"
)

// ErrLeaseLost ends a term of the controller that could not renew its
// leader Lease: another replica may act now, so this one stops writing.
var ErrLeaseLost = errors.New("lost the leader lease")

// errTermNotStopped ends Run: a term's manager did not stop within
// termStopTimeout, and the next term must not start while it may still
// write. Only the end of the process stops what is left of it.
var errTermNotStopped = errors.New("term did not stop")

const (
	// retryFirst and retryMax bound the back-off between attempts to
	// start a term while the API server is unreachable or does not serve
	// the controller's resources.
	retryFirst = time.Second
	retryMax   = 30 * time.Second
	// servedTimeout bounds one check of the API (a partition would leave
	// a request hanging).
	servedTimeout = 10 * time.Second
	// termStopTimeout bounds the wait for a stopped term's manager: its
	// reconcilers end with their context, so only a bug makes it longer.
	termStopTimeout = 30 * time.Second
	// releaseTimeout bounds giving the Lease up.
	releaseTimeout = 10 * time.Second
)

// newRetry is the back-off of starting a term: 1 s doubling to 30 s.
func newRetry() wait.Backoff {
	return wait.Backoff{Duration: retryFirst, Factor: 2, Cap: retryMax, Steps: math.MaxInt32}
}

// runTerms runs the controller's terms one after another until ctx ends.
// A term is one fresh manager, run while this replica holds the Lease.
// Losing the Lease ends the term (ErrLeaseLost) and it campaigns again,
// in this process: a renewal fails whenever the API server is unreachable
// for the renew deadline, and exiting instead made the kubelet restart
// both replicas with a growing back-off, during which no rollout permit
// was granted (test/faults). A term that fails to start (the API server
// down, the CRDs not served yet after its restart) is retried with a
// back-off, as is waiting for the API before a campaign.
func runTerms(ctx context.Context, cfg *rest.Config, hc *http.Client, opts Options, m *metrics.Controller) error {
	log := opts.Logger
	retry := newRetry()
	n := 1
	for {
		if err := waitServed(ctx, cfg, hc, &retry, log); err != nil {
			return nil // ctx ended
		}
		begin := time.Now()
		started, err := runTerm(ctx, cfg, hc, opts, m, n)
		if started {
			n++
		}
		switch {
		case errors.Is(err, errTermNotStopped):
			return err
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrLeaseLost):
			log.Info("lost the leader lease; campaigning again", "term", n-1)
			retry = newRetry()
			continue
		case err == nil:
			// A term ends only with ctx or an error; not expected.
			continue
		}
		if time.Since(begin) > retryMax {
			// It ran for a while: an old failure says nothing about now.
			retry = newRetry()
		}
		d := retry.Step()
		log.Info("controller term failed; starting again", "term", n-1, "reason", err.Error(), "retryIn", d)
		if !sleep(ctx, d) {
			return nil
		}
	}
}

// runTerm is one term of the controller: with leader election it waits
// for the Lease, runs a fresh manager while it holds it, and gives it up
// once the manager has stopped; without, it runs the manager until ctx
// ends or it fails. started reports whether the manager ran (term n).
func runTerm(ctx context.Context, cfg *rest.Config, hc *http.Client, opts Options, m *metrics.Controller, n int) (started bool, err error) {
	if !opts.LeaderElect {
		return true, runManager(ctx, cfg, opts, m, n)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return false, fmt.Errorf("leader election client: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: opts.LeaderElectionNamespace, Name: opts.LeaderElectionID},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: opts.identity},
	}
	log := opts.Logger.WithValues("lease", opts.LeaderElectionNamespace+"/"+opts.LeaderElectionID, "identity", opts.identity)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The election hands over the context of its term; the manager runs
	// here, not in the election's callback goroutine, so it has stopped
	// before runTerm returns.
	leading := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: opts.LeaseDuration,
		RenewDeadline: opts.RenewDeadline,
		RetryPeriod:   opts.RetryPeriod,
		// Not client-go's ReleaseOnCancel: after a failed renewal it
		// releases the Lease before it ends the term's context, so the
		// next leader could start while this term still writes. runTerm
		// releases it once the manager has stopped.
		ReleaseOnCancel: false,
		Name:            opts.LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(term context.Context) { leading <- term },
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != opts.identity {
					log.Info("waiting for the leader lease", "holder", identity)
				}
			},
		},
	})
	if err != nil {
		return false, fmt.Errorf("leader election: %w", err)
	}
	log.Info("campaigning for the leader lease")
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
			return false, nil // ctx ended before the Lease was taken
		}
	}
	runErr := runManager(term, cfg, opts, m, n)
	lost := term.Err() != nil && ctx.Err() == nil
	// Ends the election (no more renewals) and waits for it.
	cancel()
	<-elected
	if errors.Is(runErr, errTermNotStopped) {
		// Keep the Lease: another leader must not start while this
		// manager may still write; it expires when the process is gone.
		return true, runErr
	}
	// Nothing of the term writes any more: whoever campaigns next may take
	// the Lease at once instead of waiting for it to expire.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer rcancel()
	if err := release(rctx, lock, opts.identity); err != nil {
		log.V(1).Info("leader lease not released; it expires", "reason", err.Error())
	}
	switch {
	case ctx.Err() != nil:
		return true, nil
	case lost:
		return true, ErrLeaseLost
	}
	return true, runErr
}

// runManager runs term n's manager until term ends or the manager fails,
// and returns once the manager has stopped: nothing it started runs any
// more.
func runManager(term context.Context, cfg *rest.Config, opts Options, m *metrics.Controller, n int) error {
	mgr, err := newManager(cfg, opts, m)
	if err != nil {
		return err
	}
	log := opts.Logger.WithValues("term", n)
	log.Info("term started")
	opts.onTerm(n, true)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(term) }()
	select {
	case err = <-done:
	case <-term.Done():
		select {
		case err = <-done:
		case <-time.After(termStopTimeout):
			log.Info("term not stopped; the process must end", "waited", termStopTimeout)
			return fmt.Errorf("controller term %d: %w within %v", n, errTermNotStopped, termStopTimeout)
		}
	}
	opts.onTerm(n, false)
	log.Info("term ended")
	if err != nil {
		return fmt.Errorf("controller term %d: %w", n, err)
	}
	return nil
}

// release gives the Lease up if this replica still holds it, as client-go
// does on cancel: a one-second lease without holder.
func release(ctx context.Context, lock *resourcelock.LeaseLock, identity string) error {
	rec, _, err := lock.Get(ctx)
	if err != nil {
		return fmt.Errorf("reading the lease: %w", err)
	}
	if rec.HolderIdentity != identity {
		return nil
	}
	now := metav1.Now()
	// Update is conditional on the version Get read: a Lease taken over
	// meanwhile is left alone.
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions:    rec.LeaderTransitions,
		LeaseDurationSeconds: 1,
		RenewTime:            now,
		AcquireTime:          now,
	}); err != nil {
		return fmt.Errorf("releasing the lease: %w", err)
	}
	return nil
}

// servedKinds are what the controller's caches list and watch: a term
// started before the API serves all of them fails its cache sync.
var servedKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("NodeList"),
	nmstatev1.GroupVersion.WithKind("NodeNetworkConfigurationPolicyList"),
	v1beta1.GroupVersion.WithKind("NodeNetworkConfigurationEnactmentList"),
	v1beta1.GroupVersion.WithKind("NodeNetworkStateList"),
}

// waitServed returns once the API server serves servedKinds, checking
// with retry's back-off and logging why it waits: a controller starting
// with the cluster, or campaigning again after an outage, finds the API
// server down, or restarted and not serving the CRDs for a while. It
// returns ctx's error when ctx ends.
func waitServed(ctx context.Context, cfg *rest.Config, hc *http.Client, retry *wait.Backoff, log logr.Logger) error {
	for {
		err := served(ctx, cfg, hc)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d := retry.Step()
		log.Info("waiting for the API server to serve the controller's resources", "reason", err.Error(), "retryIn", d)
		if !sleep(ctx, d) {
			return ctx.Err()
		}
	}
}

// served lists one object of each of servedKinds. The client is new at
// each check, so its discovery of the API is too.
func served(ctx context.Context, cfg *rest.Config, hc *http.Client) error {
	ctx, cancel := context.WithTimeout(ctx, servedTimeout)
	defer cancel()
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{HTTPClient: hc, Scheme: scheme})
	if err != nil {
		return fmt.Errorf("api client: %w", err)
	}
	for _, gvk := range servedKinds {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk)
		if err := c.List(ctx, l, client.Limit(1)); err != nil {
			return fmt.Errorf("listing %s: %w", gvk.GroupKind(), err)
		}
	}
	return nil
}

// sleep waits for d or until ctx ends; it reports whether ctx is still
// going.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
