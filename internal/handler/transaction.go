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
	t.metrics.RolledBack(t.node, metrics.RollbackPendingCheckpoint)
	t.log.Info("rolled back pending checkpoint", "checkpoint", id)
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
	var selected []probe.Probe
	if !t.noProbes {
		all := pp.Select(po.All())
		passed := probe.Passing(ctx, all, po.SelectTimeout, po.Interval)
		selected = probe.Select(all, passed)
		t.log.V(1).Info("probes selected", "passedBefore", passed)
	}
	// A checkpoint nobody committed (an interrupted run of nmstatectl or of
	// this handler) is discarded first, as upstream does.
	if id, err := apply.RollbackWithOptions(ctx, t.backend, t.stateDir, t.rollbackOptions()); err == nil {
		t.metrics.RolledBack(t.node, metrics.RollbackPendingCheckpoint)
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
		Timeout:        timeout,
		StateDir:       t.stateDir,
		NetNS:          t.netns,
		ResolvConf:     t.resolvConf,
		UTSNS:          t.utsNS,
		OVSDB:          t.ovsdb,
		VerifyRetries:  t.verifyRetries,
		VerifyInterval: t.verifyInterval,
	})
	if err != nil {
		return applyErrorOutcome(err), err
	}
	success := txOutcome{result: metrics.ApplySuccess}
	if res.Checkpoint == "" {
		return success, nil // nothing to apply
	}
	if pp.TestPause > 0 {
		// Fault tests act on this line: the change is applied, the
		// checkpoint pending, nothing committed.
		t.log.Info("pausing before the probes (knmstate.io/test-pause-before-probes)", "checkpoint", res.Checkpoint, "pause", pp.TestPause)
		select {
		case <-ctx.Done():
		case <-time.After(pp.TestPause):
		}
	}
	err = probe.Run(ctx, selected, po.Interval)
	if err == nil && record != nil {
		err = recordRevert(t.stateDir, record)
	}
	if err != nil {
		o := txOutcome{result: metrics.ApplyRolledBack, reason: metrics.RollbackError}
		var pf *probe.Failure
		if errors.As(err, &pf) {
			o.reason, o.probe = metrics.RollbackProbe, pf.Probe
		}
		// The rollback must happen even when ctx ended meanwhile.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		_, rbErr := apply.RollbackWithOptions(rctx, t.backend, t.stateDir, t.rollbackOptions())
		if rbErr != nil {
			o.result = metrics.ApplyRollbackFailed
			return o, fmt.Errorf("rolling back desired state configuration: %w (rollback failed: %w)", err, rbErr)
		}
		// Let the node settle before the next attempt; the outcome only
		// goes to the log.
		if serr := probe.Run(rctx, selected, po.Interval); serr != nil {
			t.log.Info("probes still failing after rollback", "error", serr.Error())
		}
		return o, fmt.Errorf("rolling back desired state configuration: %w", err)
	}
	if _, err := apply.CommitBackend(ctx, t.backend, t.stateDir); err != nil {
		return txOutcome{result: metrics.ApplyFailed}, fmt.Errorf("committing checkpoint %s: %w", res.Checkpoint, err)
	}
	return success, nil
}

// recordRevert hands the pending checkpoint's revert state to record.
func recordRevert(stateDir string, record func(*nmstate.State) error) error {
	rec, err := apply.ReadCheckpoint(stateDir)
	if err != nil {
		return fmt.Errorf("recording what to revert on delete: %w", err)
	}
	if err := record(rec.Revert); err != nil {
		return fmt.Errorf("recording what to revert on delete: %w", err)
	}
	return nil
}
