// Package lease works while holding a coordination.k8s.io Lease, in terms:
// a Candidate campaigns for the Lease, runs the caller's work with the
// context of its term, and when the term ends (a renewal failed, the Lease
// was taken over, the caller's context ended) cancels the work, waits until
// it has returned and only then gives the Lease up, so that whoever takes
// it next never works at the same time as this term. client-go's
// ReleaseOnCancel releases the Lease before it ends the term's context,
// which is why this package exists.
//
// It owns the Lease named in its Options and nothing else: it does not
// exit the process, retry the caller's failures or hold global state.
package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Defaults of Options: client-go's recommended election timings, and the
// bounds of waiting for a term's work and of giving the Lease up.
const (
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultStopTimeout    = 30 * time.Second
	DefaultReleaseTimeout = 10 * time.Second
)

// ErrLost ends a term whose Lease could not be renewed (the API server
// unreachable for the renew deadline, or another holder wrote it): another
// candidate may work now.
var ErrLost = errors.New("lost the lease")

// ErrNotStopped ends a term whose work did not return within StopTimeout
// of the term's end. The Lease is kept (not renewed, so it expires): no
// one else may take it at once while the work may still run. Only the end
// of the process stops what is left of it.
var ErrNotStopped = errors.New("work of the term did not stop")

// Work is what a term runs. It must return soon after term ends; its
// error ends the term.
type Work func(term context.Context) error

// Options name the Lease and the candidate and set the election timings.
type Options struct {
	// Namespace and Name name the Lease (required).
	Namespace, Name string
	// Identity names this candidate in the Lease (required); the same
	// identity in a new term takes a Lease it still holds back at once.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's leader
	// election timings (defaults above): a holder that neither renews nor
	// releases is replaced within LeaseDuration, a term ends when renewing
	// failed for RenewDeadline, and attempts come every RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// StopTimeout bounds the wait for a term's work after the term ended
	// (default 30 s): the Lease is not given up before the work returned.
	StopTimeout time.Duration
	// ReleaseTimeout bounds giving the Lease up (default 10 s).
	ReleaseTimeout time.Duration
	// Log receives the candidate's few lines (default: discarded).
	Log logr.Logger
	// OnNewLeader, when set, is told the identity of another holder the
	// candidate waits for. It runs in a goroutine of its own.
	OnNewLeader func(identity string)
	// OnLost, when set, is told by Run that a term lost the Lease, before
	// Run campaigns again.
	OnLost func()
}

func (o *Options) defaults() {
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.ReleaseTimeout == 0 {
		o.ReleaseTimeout = DefaultReleaseTimeout
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
}

func (o Options) validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("namespace: required"))
	}
	if o.Name == "" {
		errs = append(errs, errors.New("name: required"))
	}
	if o.Identity == "" {
		errs = append(errs, errors.New("identity: required"))
	}
	// client-go's own checks, which would otherwise only fail the first term.
	if !(o.LeaseDuration > o.RenewDeadline &&
		o.RenewDeadline > time.Duration(leaderelection.JitterFactor*float64(o.RetryPeriod)) && o.RetryPeriod > 0) {
		errs = append(errs, fmt.Errorf("want leaseDuration %v > renewDeadline %v > %v × retryPeriod %v > 0",
			o.LeaseDuration, o.RenewDeadline, leaderelection.JitterFactor, o.RetryPeriod))
	}
	if o.StopTimeout < 0 || o.ReleaseTimeout < 0 {
		errs = append(errs, fmt.Errorf("stopTimeout %v and releaseTimeout %v must not be negative", o.StopTimeout, o.ReleaseTimeout))
	}
	return errors.Join(errs...)
}

// Candidate campaigns for one Lease and works in terms while it holds it.
type Candidate struct {
	leases coordinationv1client.LeasesGetter
	opts   Options
	log    logr.Logger
}

// New returns a candidate for the Lease opts name, reached through leases.
func New(leases coordinationv1client.LeasesGetter, opts Options) (*Candidate, error) {
	opts.defaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("lease %s/%s: %w", opts.Namespace, opts.Name, err)
	}
	log := opts.Log.WithValues("lease", opts.Namespace+"/"+opts.Name, "identity", opts.Identity)
	return &Candidate{leases: leases, opts: opts, log: log}, nil
}

// Run works in terms until ctx ends: after a term that lost the Lease it
// campaigns again, in this process. It returns nil when ctx ends, and
// ends with a term that ends otherwise: its work's result (nil or an
// error), ErrNotStopped, or an error starting the election.
func (c *Candidate) Run(ctx context.Context, work Work) error {
	for {
		_, err := c.Term(ctx, work)
		if !errors.Is(err, ErrLost) || ctx.Err() != nil {
			return err
		}
		if c.opts.OnLost != nil {
			c.opts.OnLost()
		}
		c.log.Info("campaigning again after losing the lease")
	}
}

// Term is one term: it campaigns until it holds the Lease (or ctx ends),
// runs work with the term's context, which ends when the Lease is lost or
// ctx ends, waits until work has returned (at most StopTimeout after
// that), stops renewing and then releases the Lease. worked reports
// whether work ran. err is nil when ctx ended, ErrLost when the Lease was
// lost, ErrNotStopped when the work did not return in time (the Lease is
// then kept until it expires), or else work's own result.
func (c *Candidate) Term(ctx context.Context, work Work) (worked bool, err error) {
	o := c.opts
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name},
		Client:     c.leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
	}
	// The election runs on a context of its own, not ctx: when ctx ends it
	// keeps renewing the Lease until the work has returned.
	electCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()
	// The election hands over the context of its term; the work runs here,
	// not in the election's callback goroutine, so that the Lease is
	// released only after it has returned.
	leading := make(chan context.Context, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: o.LeaseDuration,
		RenewDeadline: o.RenewDeadline,
		RetryPeriod:   o.RetryPeriod,
		// Not client-go's ReleaseOnCancel: after a failed renewal, or when
		// its context ends, it releases the Lease before the term's context
		// ends, so the next holder could start while this term still works.
		ReleaseOnCancel: false,
		Name:            o.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(term context.Context) { leading <- term },
			OnStoppedLeading: func() {},
			OnNewLeader: func(identity string) {
				if identity != o.Identity && o.OnNewLeader != nil {
					o.OnNewLeader(identity)
				}
			},
		},
	})
	if err != nil {
		return false, fmt.Errorf("lease %s/%s: election: %w", o.Namespace, o.Name, err)
	}
	c.log.Info("campaigning for the lease")
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		elector.Run(electCtx)
	}()
	var term context.Context
	select {
	case term = <-leading:
	case <-elected:
		// The election only gives up when electCtx ends, and only this
		// function ends it: the Lease was taken, and its term (which ended
		// at once) is on its way.
		term = <-leading
	case <-ctx.Done():
		stopElection()
		<-elected
		if elector.IsLeader() {
			// Taken as ctx ended: nothing ran, give it back.
			c.release(ctx, lock)
		}
		return false, nil
	}
	c.log.Info("holding the lease")

	workCtx, cancelWork := context.WithCancel(term)
	defer cancelWork()
	defer context.AfterFunc(ctx, cancelWork)()
	done := make(chan error, 1)
	go func() { done <- work(workCtx) }()
	var workErr error
	select {
	case workErr = <-done:
	case <-workCtx.Done():
		t := time.NewTimer(o.StopTimeout)
		defer t.Stop()
		select {
		case workErr = <-done:
		case <-t.C:
			stopElection()
			<-elected
			c.log.Info("work of the term not stopped: keeping the lease until it expires", "waited", o.StopTimeout)
			return true, fmt.Errorf("lease %s/%s: %w within %v", o.Namespace, o.Name, ErrNotStopped, o.StopTimeout)
		}
	}
	// The election ended the term itself: a renewal failed.
	lost := term.Err() != nil
	stopElection()
	<-elected
	// Nothing of the term works any more: whoever campaigns next may take
	// the Lease at once instead of waiting for it to expire.
	c.release(ctx, lock)
	switch {
	case ctx.Err() != nil:
		return true, nil
	case lost:
		return true, fmt.Errorf("lease %s/%s: %w", o.Namespace, o.Name, ErrLost)
	}
	return true, workErr
}

// release gives the Lease up if this candidate still holds it, as
// client-go does on cancel (a one-second lease without holder); failing
// that, the Lease expires.
func (c *Candidate) release(ctx context.Context, lock *resourcelock.LeaseLock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.ReleaseTimeout)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil {
		c.log.V(1).Info("lease not released; it expires", "reason", fmt.Sprintf("reading the lease: %v", err))
		return
	}
	if rec.HolderIdentity != c.opts.Identity {
		return
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
		c.log.V(1).Info("lease not released; it expires", "reason", fmt.Sprintf("releasing the lease: %v", err))
		return
	}
	c.log.V(1).Info("lease released")
}
