package handler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/probe"
)

// transaction is the node's one nmstate transaction at a time. The
// sequence (pending checkpoint, probe selection, apply without commit,
// probes, commit or roll back) is apply.Transact's, shared with nmstatectl
// first-boot; this adds the policy's probes, the metrics and the logs. The
// mutex serialises transactions of this handler; pkg/apply's
// lock on the state directory serialises them with nmstatectl on the node.
type transaction struct {
	mu       sync.Mutex
	backend  apply.Backend
	stateDir string
	// netns, resolvConf and utsNS are recorded in the checkpoint.
	netns, resolvConf, utsNS string
	// ovsdb is the node's OVS database socket, recorded likewise.
	ovsdb  string
	probes probe.Options
	// noProbes skips probing entirely (a node without external
	// connectivity to check, tests of the apply path).
	noProbes       bool
	timeout        time.Duration
	verifyRetries  int
	verifyInterval time.Duration
	log            logr.Logger
	// node and metrics: the apply, rollback and probe failure metrics.
	node    string
	metrics *metrics.Handler
	// onApply, when set, is called right before each apply (tests count
	// applies with it).
	onApply func()
}

// txOutcome is how a transaction ended: the metrics' result and, when it
// was rolled back (or tried to be), why.
type txOutcome struct {
	result metrics.ApplyResult
	// reason is set when the transaction rolled back (or tried to).
	reason metrics.RollbackReason
	// probe names the probe that failed (reason probe).
	probe string
}

// applyErrorOutcome classifies an error of apply.Apply: a *Failure
// happened after the first change and was rolled back; anything else
// failed before it.
func applyErrorOutcome(err error) txOutcome {
	var f *apply.Failure
	if !errors.As(err, &f) {
		return txOutcome{result: metrics.ApplyFailed}
	}
	o := txOutcome{result: metrics.ApplyRolledBack, reason: metrics.RollbackError}
	if nmstate.KindOf(f.Err) == nmstate.Verification {
		o.reason = metrics.RollbackVerification
	}
	if f.Rollback != nil {
		o.result = metrics.ApplyRollbackFailed
	}
	return o
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
	id, err := apply.DiscardPending(ctx, t.backend, t.stateDir, t.rollbackOptions())
	if err != nil {
		return fmt.Errorf("rolling back pending checkpoint %s: %w", id, err)
	}
	if id != "" {
		t.metrics.RolledBack(t.node, metrics.RollbackPendingCheckpoint)
		t.log.Info("rolled back pending checkpoint", "checkpoint", id)
	}
	return nil
}

// run applies desired and keeps it only if the probes pass afterwards,
// and records how it went in the metrics. pp are the policy's own probe
// settings (knmstate.io/probes) over the handler's. record, when set, is
// given the apply's revert state once the probes passed, before the
// commit; its failure rolls the apply back (knmstate.io/revert-on-delete
// must not commit a change it could not undo later).
func (t *transaction) run(ctx context.Context, desired *nmstate.State, pp extension.Probes, record func(revert *nmstate.State) error) (txOutcome, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	start := time.Now()
	o, err := t.transact(ctx, desired, pp, record)
	t.metrics.ObserveApply(t.node, o.result, time.Since(start))
	if o.reason != "" {
		t.metrics.RolledBack(t.node, o.reason)
	}
	if o.probe != "" {
		t.metrics.ProbeFailed(t.node, o.probe)
	}
	return o, err
}

func (t *transaction) transact(ctx context.Context, desired *nmstate.State, pp extension.Probes, record func(*nmstate.State) error) (txOutcome, error) {
	po := pp.Options(t.probes).WithDefaults()
	// The rollback deadline follows the probes this apply really waits for.
	timeout := t.timeout
	if pt := checkpointTimeout(po); pt > timeout {
		timeout = pt
	}
	// A fault test's pause must not eat the probes' share of the deadline.
	timeout += pp.TestPause
	var probes []probe.Probe
	if !t.noProbes {
		probes = pp.Select(po.All())
	}
	if t.onApply != nil {
		t.onApply()
	}
	var onCheckpoint func(context.Context, *apply.Checkpoint) error
	if f, ok := t.backend.(checkpointFollower); ok {
		onCheckpoint = f.OnCheckpoint
	}
	tx, err := apply.Transact(ctx, t.backend, desired, apply.TxOptions{
		Options: apply.Options{
			OnCheckpoint:   onCheckpoint,
			Timeout:        timeout,
			StateDir:       t.stateDir,
			NetNS:          t.netns,
			ResolvConf:     t.resolvConf,
			UTSNS:          t.utsNS,
			OVSDB:          t.ovsdb,
			VerifyRetries:  t.verifyRetries,
			VerifyInterval: t.verifyInterval,
		},
		Probes:              probes,
		ProbeInterval:       po.Interval,
		ProbeSelectTimeout:  po.SelectTimeout,
		SettleAfterRollback: true,
		BeforeProbes:        t.pauseBeforeProbes(pp.TestPause),
		BeforeCommit:        recordRevert(record),
	})
	t.noteTransaction(tx)
	return transactionOutcome(tx, err)
}

// pauseBeforeProbes is the fault tests' pause (knmstate.io/test-pause-
// before-probes): they act while the change is applied, the checkpoint
// pending and nothing committed.
func (t *transaction) pauseBeforeProbes(pause time.Duration) func(context.Context, *apply.TxResult) {
	if pause <= 0 {
		return nil
	}
	return func(ctx context.Context, tx *apply.TxResult) {
		t.log.Info("pausing before the probes (knmstate.io/test-pause-before-probes)", "checkpoint", tx.Apply.Checkpoint, "pause", pause)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// noteTransaction logs (and counts) what the transaction did besides its
// outcome: a pending checkpoint it discarded first, the probes it ran,
// whether the node settled after a rollback.
func (t *transaction) noteTransaction(tx *apply.TxResult) {
	switch {
	case tx.PendingErr != nil:
		t.log.Error(tx.PendingErr, "rolling back a pending checkpoint before applying", "checkpoint", tx.Pending)
	case tx.Pending != "":
		t.metrics.RolledBack(t.node, metrics.RollbackPendingCheckpoint)
		t.log.Info("rolled back a pending checkpoint before applying", "checkpoint", tx.Pending)
	}
	t.log.V(1).Info("probes selected", "probes", probe.Names(tx.Probes))
	if tx.SettleErr != nil {
		t.log.Info("probes still failing after rollback", "error", tx.SettleErr.Error())
	}
}

// transactionOutcome is how a transaction ended, for the metrics and the
// rollback event, and its error: a change refused after the apply is
// worded as upstream words it ("rolling back desired state configuration:
// ..."); other errors are apply.Transact's.
func transactionOutcome(tx *apply.TxResult, err error) (txOutcome, error) {
	if err == nil {
		return txOutcome{result: metrics.ApplySuccess}, nil
	}
	o := applyErrorOutcome(err)
	var f *apply.Failure
	if !tx.Refused || !errors.As(err, &f) {
		return o, err
	}
	if tx.Probe != "" {
		o.reason, o.probe = metrics.RollbackProbe, tx.Probe
	}
	if f.Rollback != nil {
		return o, fmt.Errorf("rolling back desired state configuration: %w (rollback failed: %w)", f.Err, f.Rollback)
	}
	return o, fmt.Errorf("rolling back desired state configuration: %w", f.Err)
}

// recordRevert hands the applied change's revert state to record before
// the commit (nil without record).
func recordRevert(record func(*nmstate.State) error) func(context.Context, *apply.TxResult) error {
	if record == nil {
		return nil
	}
	return func(_ context.Context, tx *apply.TxResult) error {
		if err := record(tx.Apply.Revert); err != nil {
			return fmt.Errorf("recording what to revert on delete: %w", err)
		}
		return nil
	}
}
