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
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/lease"
	"github.com/knmstate/knmstate/internal/metrics"
)

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
	// The next term must not start while it may still write: past it, Run
	// ends (lease.ErrNotStopped) and only the end of the process stops
	// what is left of it.
	termStopTimeout = 30 * time.Second
	// releaseTimeout bounds giving the Lease up.
	releaseTimeout = 10 * time.Second
)

// newRetry is the back-off of starting a term: 1 s doubling to 30 s.
func newRetry() wait.Backoff {
	return wait.Backoff{Duration: retryFirst, Factor: 2, Cap: retryMax, Steps: math.MaxInt32}
}

// runTerms runs the controller's terms one after another until ctx ends.
// A term is one fresh manager, run while this replica holds the Lease
// (internal/lease: the manager has stopped before the Lease is given up).
// Losing the Lease ends the term (lease.ErrLost) and it campaigns again,
// in this process: a renewal fails whenever the API server is unreachable
// for the renew deadline, and exiting instead made the kubelet restart
// both replicas with a growing back-off, during which no rollout permit
// was granted (test/faults). A term that fails to start (the API server
// down, the CRDs not served yet after its restart) is retried with a
// back-off, as is waiting for the API before a campaign.
func runTerms(ctx context.Context, cfg *rest.Config, hc *http.Client, opts Options, m *metrics.Controller) error {
	log := opts.Logger
	var candidate *lease.Candidate
	if opts.LeaderElect {
		var err error
		if candidate, err = newCandidate(cfg, hc, opts); err != nil {
			return err
		}
	}
	retry := newRetry()
	n := 1
	for {
		if err := waitServed(ctx, cfg, hc, &retry, log); err != nil {
			return nil // ctx ended
		}
		begin := time.Now()
		started, err := runTerm(ctx, candidate, cfg, opts, m, n)
		if started {
			n++
		}
		switch {
		case errors.Is(err, lease.ErrNotStopped):
			return err
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, lease.ErrLost):
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

// newCandidate is the replica's candidate for the leader Lease.
func newCandidate(cfg *rest.Config, hc *http.Client, opts Options) (*lease.Candidate, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	log := opts.Logger
	c, err := lease.New(cs.CoordinationV1(), lease.Options{
		Namespace:      opts.LeaderElectionNamespace,
		Name:           opts.LeaderElectionID,
		Identity:       opts.identity,
		LeaseDuration:  opts.LeaseDuration,
		RenewDeadline:  opts.RenewDeadline,
		RetryPeriod:    opts.RetryPeriod,
		StopTimeout:    termStopTimeout,
		ReleaseTimeout: releaseTimeout,
		Log:            log,
		OnNewLeader: func(holder string) {
			log.Info("waiting for the leader lease", "lease", opts.LeaderElectionNamespace+"/"+opts.LeaderElectionID, "holder", holder)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("leader election: %w", err)
	}
	return c, nil
}

// runTerm is one term of the controller: with leader election (candidate)
// it waits for the Lease and runs a fresh manager while it holds it;
// without, it runs the manager until ctx ends or it fails. started reports
// whether the manager ran (term n).
func runTerm(ctx context.Context, candidate *lease.Candidate, cfg *rest.Config, opts Options, m *metrics.Controller, n int) (started bool, err error) {
	if candidate == nil {
		return true, runManager(ctx, cfg, opts, m, n)
	}
	return candidate.Term(ctx, func(term context.Context) error {
		return runManager(term, cfg, opts, m, n)
	})
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
	err = mgr.Start(term)
	opts.onTerm(n, false)
	log.Info("term ended")
	if err != nil {
		return fmt.Errorf("controller term %d: %w", n, err)
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
