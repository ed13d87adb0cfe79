package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/probe"
)

// TxOptions tune one Transact: the apply's own options and the probes
// that guard its commit.
type TxOptions struct {
	// Options are the apply's; NoCommit is implied (the transaction
	// commits once the probes pass) and DryRun is refused.
	Options
	// Probes are the checks the change must pass, in order. An external
	// probe is only run after the change if it passed before it
	// (probe.Select); nil = commit without probing.
	Probes []probe.Probe
	// ProbeInterval is the pause between attempts (0 =
	// probe.DefaultInterval); ProbeSelectTimeout bounds each external
	// probe before the change (0 = probe.DefaultSelectTimeout).
	ProbeInterval, ProbeSelectTimeout time.Duration
	// SettleAfterRollback runs the probes once more after a rollback, so
	// that the caller's next attempt starts from a node whose external
	// probes pass again and are selected again (the handler retries; a
	// one-shot command has no next attempt). Bounded by RollbackTimeout.
	SettleAfterRollback bool
	// BeforeProbes runs once the change is applied and its checkpoint
	// pending, before the first probe (fault tests pause here).
	BeforeProbes func(ctx context.Context, tx *TxResult)
	// BeforeCommit runs once the probes passed; an error refuses the
	// change, which is rolled back (the handler records the revert state
	// a later delete applies: a change it could not undo is not kept).
	BeforeCommit func(ctx context.Context, tx *TxResult) error
}

// TxResult describes a finished Transact, also when it failed.
type TxResult struct {
	// Pending is the checkpoint nobody had committed, rolled back before
	// the apply ("" = none); PendingErr is how that rollback failed (its
	// record is gone all the same, so the apply went on).
	Pending    string
	PendingErr error
	// Probes are the probes run after the change (those selected).
	Probes []probe.Probe
	// Apply is the apply's result; nil when it failed (the error says
	// how, a *Failure if it was rolled back).
	Apply *Result
	// Refused reports that the change was applied but not kept: a probe
	// (named by Probe) or BeforeCommit failed, and the error is a
	// *Failure saying how the rollback went. Apply.Revert is what was
	// rolled back with.
	Refused bool
	Probe   string
	// SettleErr is the probes' failure after the rollback
	// (SettleAfterRollback).
	SettleErr error
	// Committed reports that the change is kept (false with nothing to
	// apply: no checkpoint was made).
	Committed bool
}

// Transact is the probe-guarded transaction of the handler and of
// nmstatectl first-boot: discard a pending checkpoint nobody committed,
// select the probes that pass now, apply under a checkpoint without
// committing, run the probes, and commit; a failed probe or BeforeCommit
// rolls the change back, even after ctx ended. A desired state that asks
// for nothing changes nothing and probes nothing. The result is never
// nil.
func Transact(ctx context.Context, b Backend, desired *nmstate.State, opts TxOptions) (*TxResult, error) {
	tx := &TxResult{}
	if opts.DryRun {
		return tx, errors.New("transaction: a dry run has nothing to probe or commit")
	}
	o := opts.Options.withDefaults()
	if o.StateDir == "" {
		return tx, errors.New("apply: no state directory for the checkpoint")
	}
	ro := RollbackOptions{VerifyRetries: o.VerifyRetries, VerifyInterval: o.VerifyInterval, Now: o.Now, engine: o.engine}
	tx.Pending, tx.PendingErr = DiscardPending(ctx, b, o.StateDir, ro)
	interval := orDefault(opts.ProbeInterval, probe.DefaultInterval)
	passed := probe.Passing(ctx, opts.Probes, orDefault(opts.ProbeSelectTimeout, probe.DefaultSelectTimeout), interval)
	tx.Probes = probe.Select(opts.Probes, passed)

	ao := o
	ao.NoCommit = true
	res, err := Apply(ctx, b, desired, ao)
	if err != nil {
		return tx, err
	}
	tx.Apply = res
	if res.Checkpoint == "" {
		return tx, nil // nothing to apply
	}
	if opts.BeforeProbes != nil {
		opts.BeforeProbes(ctx, tx)
	}
	err = probe.Run(ctx, tx.Probes, interval)
	var pf *probe.Failure
	if errors.As(err, &pf) {
		tx.Probe = pf.Probe
	}
	if err == nil && opts.BeforeCommit != nil {
		err = opts.BeforeCommit(ctx, tx)
	}
	if err != nil {
		tx.Refused = true
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.RollbackTimeout)
		defer cancel()
		_, rbErr := rollbackPending(rctx, b, o.StateDir, res.Checkpoint, o)
		if rbErr == nil && opts.SettleAfterRollback {
			tx.SettleErr = probe.Run(rctx, tx.Probes, interval)
		}
		return tx, &Failure{Err: err, Plan: res.Plan, Checkpoint: res.Checkpoint, Rollback: rbErr}
	}
	if _, err := commitBackend(ctx, b, o.StateDir, res.Checkpoint); err != nil {
		return tx, fmt.Errorf("committing checkpoint %s: %w", res.Checkpoint, err)
	}
	res.Committed, tx.Committed = true, true
	return tx, nil
}

// orDefault is d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
