package handler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/probe"
)

// transaction is the node's one nmstate transaction at a time: select the
// probes, checkpoint and apply (without commit), probe, then commit or
// roll back. The mutex serialises transactions of this handler; pkg/apply's
// lock on the state directory serialises them with nmstatectl on the node.
type transaction struct {
	mu       sync.Mutex
	backend  apply.Backend
	stateDir string
	// netns, resolvConf and utsNS are recorded in the checkpoint.
	netns, resolvConf, utsNS string
	probes                   probe.Options
	// noProbes skips probing entirely (a node without external
	// connectivity to check, tests of the apply path).
	noProbes       bool
	timeout        time.Duration
	verifyRetries  int
	verifyInterval time.Duration
	log            logr.Logger
	// onApply, when set, is called right before each apply (tests count
	// applies with it).
	onApply func()
}

// checkpointTimeout is the automatic rollback deadline of an apply: twice
// the longest the probes may take, as upstream sizes it, so a slow but
// passing probe run never races the rollback.
func checkpointTimeout(o probe.Options) time.Duration {
	o = o.WithDefaults()
	return 2 * (o.PingTimeout + o.DNSTimeout + o.APITimeout + o.NodeTimeout)
}

func (t *transaction) rollbackOptions() apply.RollbackOptions {
	return apply.RollbackOptions{VerifyRetries: t.verifyRetries, VerifyInterval: t.verifyInterval}
}

// recover rolls back a checkpoint left pending by a previous run (a crash
// or restart between apply and commit): nothing committed it, so the
// change it guards was never confirmed by the probes.
func (t *transaction) recover(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := apply.ReadCheckpoint(t.stateDir); errors.Is(err, apply.ErrNoCheckpoint) {
		return nil
	}
	id, err := apply.RollbackWithOptions(ctx, t.backend, t.stateDir, t.rollbackOptions())
	if errors.Is(err, apply.ErrNoCheckpoint) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("rolling back pending checkpoint %s: %w", id, err)
	}
	t.log.Info("rolled back pending checkpoint", "checkpoint", id)
	return nil
}

// run applies desired and keeps it only if the probes pass afterwards.
func (t *transaction) run(ctx context.Context, desired *nmstate.State) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	po := t.probes.WithDefaults()
	var selected []probe.Probe
	if !t.noProbes {
		all := po.All()
		passed := probe.Passing(ctx, all, po.SelectTimeout, po.Interval)
		selected = probe.Select(all, passed)
		t.log.V(1).Info("probes selected", "passedBefore", passed)
	}
	// A checkpoint nobody committed (an interrupted run of nmstatectl or of
	// this handler) is discarded first, as upstream does.
	if id, err := apply.RollbackWithOptions(ctx, t.backend, t.stateDir, t.rollbackOptions()); err == nil {
		t.log.Info("rolled back a pending checkpoint before applying", "checkpoint", id)
	} else if !errors.Is(err, apply.ErrNoCheckpoint) {
		t.log.Error(err, "rolling back a pending checkpoint before applying", "checkpoint", id)
	}
	if t.onApply != nil {
		t.onApply()
	}
	var onCheckpoint func(context.Context, *apply.Checkpoint) error
	if f, ok := t.backend.(checkpointFollower); ok {
		onCheckpoint = f.OnCheckpoint
	}
	res, err := apply.Apply(ctx, t.backend, desired, apply.Options{
		OnCheckpoint:   onCheckpoint,
		NoCommit:       true,
		Timeout:        t.timeout,
		StateDir:       t.stateDir,
		NetNS:          t.netns,
		ResolvConf:     t.resolvConf,
		UTSNS:          t.utsNS,
		VerifyRetries:  t.verifyRetries,
		VerifyInterval: t.verifyInterval,
	})
	if err != nil {
		return err
	}
	if res.Checkpoint == "" {
		return nil // nothing to apply
	}
	if err := probe.Run(ctx, selected, po.Interval); err != nil {
		// The rollback must happen even when ctx ended meanwhile.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		_, rbErr := apply.RollbackWithOptions(rctx, t.backend, t.stateDir, t.rollbackOptions())
		if rbErr != nil {
			return fmt.Errorf("rolling back desired state configuration: %w (rollback failed: %w)", err, rbErr)
		}
		// Let the node settle before the next attempt; the outcome only
		// goes to the log.
		if serr := probe.Run(rctx, selected, po.Interval); serr != nil {
			t.log.Info("probes still failing after rollback", "error", serr.Error())
		}
		return fmt.Errorf("rolling back desired state configuration: %w", err)
	}
	if _, err := apply.Commit(ctx, t.stateDir); err != nil {
		return fmt.Errorf("committing checkpoint %s: %w", res.Checkpoint, err)
	}
	return nil
}
