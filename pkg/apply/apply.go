package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Backend is what the orchestrator needs from a node: read its whole state
// and execute a plan in order (stopping at the first failing operation).
// pkg/backend/kernel's *Backend implements it.
type Backend interface {
	Show(ctx context.Context) (*nmstate.State, error)
	Execute(ctx context.Context, p *nmstate.Plan) error
}

// MergedExecutor is a backend that applies the merged state itself rather
// than the plan's operations: NetworkManager keeps whole profiles per
// interface. The plan is passed for logging and for what the backend
// leaves to the kernel.
type MergedExecutor interface {
	ExecuteMerged(ctx context.Context, m *nmstate.Merged, p *nmstate.Plan) error
}

// Checkpointer is a backend with checkpoints of its own (NetworkManager's
// Checkpoint API): Apply creates one with the rollback timeout next to its
// record, so the backend rolls back by itself if every process of ours is
// gone; rollback goes through it first, commit destroys it.
type Checkpointer interface {
	CheckpointCreate(ctx context.Context, timeout time.Duration) (string, error)
	CheckpointRollback(ctx context.Context, id string) error
	CheckpointDestroy(ctx context.Context, id string) error
}

// IEEE8021XRemover is a backend that runs a supplicant per interface with
// an 802.1x section: a rollback removes the sections the apply added,
// which a revert state cannot say (nmstate has no "no 802.1x";
// NetworkManager's checkpoint restores whole profiles instead).
type IEEE8021XRemover interface {
	RemoveIEEE8021X(ctx context.Context, iface string) error
}

// MemoryOnlyBackend is a backend that keeps what it applies in memory
// only (NetworkManager's in-memory profiles): Apply then turns absent
// interfaces into down, as Options.MemoryOnly does (nmstate's
// --memory-only removes nothing persistent).
type MemoryOnlyBackend interface{ MemoryOnly() bool }

// Named is a backend that says its name (and, with Address, how to reach
// it) for the checkpoint record.
type Named interface{ Name() string }

// Addressed is a backend reached at an address another process needs to
// roll back (a D-Bus address).
type Addressed interface{ Address() string }

// execute runs a plan (or the merged state, for a MergedExecutor).
func execute(ctx context.Context, b Backend, m *nmstate.Merged, p *nmstate.Plan) error {
	if me, ok := b.(MergedExecutor); ok {
		return me.ExecuteMerged(ctx, m, p)
	}
	return b.Execute(ctx, p)
}

// Defaults (nmstate's DEFAULT_ROLLBACK_TIMEOUT and verification retries).
const (
	DefaultTimeout        = 60 * time.Second
	DefaultVerifyRetries  = 5
	DefaultVerifyInterval = time.Second
	// DefaultRollbackTimeout bounds a rollback that runs after the
	// caller's context ended (SIGINT during apply still rolls back).
	DefaultRollbackTimeout = 2 * time.Minute
)

// Options tune one Apply.
type Options struct {
	// NoVerify skips verification after execution (an execution error still
	// rolls back).
	NoVerify bool
	// NoCommit leaves the checkpoint pending after a successful apply; the
	// caller commits or rolls back later, or the watchdog rolls back at
	// the deadline.
	NoCommit bool
	// Timeout is the time from checkpoint creation to automatic rollback
	// (0 = DefaultTimeout).
	Timeout time.Duration
	// MemoryOnly turns every absent interface into down (nothing
	// persistent is removed).
	MemoryOnly bool
	// DryRun stops after planning: no checkpoint, no change.
	DryRun bool
	// StateDir holds the checkpoint record and the lock; required unless
	// DryRun.
	StateDir string
	// VerifyRetries is the number of verification attempts (0 =
	// DefaultVerifyRetries); VerifyInterval the pause between them (0 =
	// DefaultVerifyInterval).
	VerifyRetries  int
	VerifyInterval time.Duration
	// RollbackTimeout bounds a rollback this apply (or transaction) runs
	// itself, which goes on after ctx ended: a change half made must not
	// stay because the caller gave up (0 = DefaultRollbackTimeout).
	RollbackTimeout time.Duration
	// Now is the clock (nil = time.Now).
	Now func() time.Time
	// NetNS, ResolvConf and UTSNS are recorded in the checkpoint so a
	// rollback from another process reaches the same node.
	NetNS, ResolvConf, UTSNS string
	// OVSDB is recorded likewise (the node's Open vSwitch database).
	OVSDB string
	// OnCheckpoint runs after the record is written and before the first
	// change (nmstatectl starts its watchdog here). An error aborts the
	// apply with nothing changed.
	OnCheckpoint func(ctx context.Context, rec *Checkpoint) error

	// engine is the state model; nil = pkg/nmstate.
	engine *engine
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.VerifyRetries <= 0 {
		o.VerifyRetries = DefaultVerifyRetries
	}
	if o.VerifyInterval <= 0 {
		o.VerifyInterval = DefaultVerifyInterval
	}
	if o.RollbackTimeout <= 0 {
		o.RollbackTimeout = DefaultRollbackTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.engine == nil {
		o.engine = nmstateEngine()
	}
	return o
}

// Result describes a finished apply.
type Result struct {
	// Desired is the desired state as applied (memory-only conversion done,
	// interface types resolved).
	Desired *nmstate.State
	// Plan is what was executed (or, with DryRun, would be).
	Plan *nmstate.Plan
	// Checkpoint is the id of the checkpoint record ("" for DryRun and for
	// an empty desired state).
	Checkpoint string
	// Deadline is when a pending (NoCommit) checkpoint rolls back.
	Deadline time.Time
	// Revert is the state that undoes the change, as the checkpoint
	// record holds it (nil without a checkpoint).
	Revert *nmstate.State
	// Committed reports whether the checkpoint was committed.
	Committed bool
}

// Failure is the error of an apply that failed after the first change: what
// failed, and how the rollback went.
type Failure struct {
	// Err is the execution or verification error.
	Err error
	// Plan is the plan whose execution failed.
	Plan *nmstate.Plan
	// Checkpoint is the id that was rolled back.
	Checkpoint string
	// Rollback is nil when the pre-apply state was restored.
	Rollback error
}

func (f *Failure) Error() string {
	var b strings.Builder
	b.WriteString(f.Err.Error())
	if f.Rollback == nil {
		fmt.Fprintf(&b, "\nrolled back checkpoint %s: the previous state is restored", f.Checkpoint)
	} else {
		fmt.Fprintf(&b, "\nrollback of checkpoint %s failed: %v", f.Checkpoint, f.Rollback)
	}
	return b.String()
}

// Unwrap exposes both errors (the failure's kind comes first).
func (f *Failure) Unwrap() []error {
	if f.Rollback == nil {
		return []error{f.Err}
	}
	return []error{f.Err, f.Rollback}
}

// IsEmpty reports whether a desired state asks for nothing.
func IsEmpty(s *nmstate.State) bool {
	return s == nil || (len(s.Interfaces) == 0 && s.Routes == nil && s.RouteRules == nil &&
		s.DNSResolver == nil && s.Hostname == nil && s.OVSDB == nil && s.OVN == nil)
}

// Apply makes the node reached through b look like desired, or leaves it as
// it was. Invalid input fails before anything changes; any failure after the
// first change rolls back and returns a *Failure.
func Apply(ctx context.Context, b Backend, desired *nmstate.State, opts Options) (*Result, error) {
	o := opts.withDefaults()
	if IsEmpty(desired) {
		return &Result{Desired: &nmstate.State{}, Plan: &nmstate.Plan{}}, nil
	}
	if mo, ok := b.(MemoryOnlyBackend); o.MemoryOnly || ok && mo.MemoryOnly() {
		desired = memoryOnly(desired)
	}
	if o.DryRun {
		_, m, plan, err := prepare(ctx, b, desired, o)
		if err != nil {
			return nil, err
		}
		return &Result{Desired: m.Desired, Plan: plan}, nil
	}
	if o.StateDir == "" {
		return nil, errors.New("apply: no state directory for the checkpoint")
	}
	unlock, err := lockDir(ctx, o.StateDir, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if rec, err := ReadCheckpoint(o.StateDir); err == nil {
		return nil, fmt.Errorf("%w: %s (rolls back at %s); commit or roll it back first",
			ErrCheckpointExists, rec.ID, rec.Deadline.UTC().Format(time.RFC3339))
	} else if !errors.Is(err, ErrNoCheckpoint) {
		return nil, err
	}

	before, m, err := prepareMerged(ctx, b, desired, o)
	if err != nil {
		return nil, err
	}
	// From here on the record's states are encoded and the plan is made in
	// the background while the revert state is computed: all of them only
	// read before and m. A failed plan is still reported before a failed
	// revert, as when they ran one after the other.
	enc := &recordEncoding{encodeState("before", before, true), encodeState("desired", m.Desired, true)}
	type planned struct {
		plan *nmstate.Plan
		err  error
	}
	planc := make(chan planned, 1)
	go func() {
		p, err := o.engine.plan(m)
		planc <- planned{p, err}
	}()
	revert, err := o.engine.revert(before, m.Desired)
	pl := <-planc
	if pl.err != nil {
		enc.wait()
		return nil, pl.err
	}
	plan := pl.plan
	if err != nil {
		enc.wait()
		return nil, fmt.Errorf("computing the revert state: %w", err)
	}
	now := o.Now()
	id, err := newID(now)
	if err != nil {
		enc.wait()
		return nil, err
	}
	rec := &Checkpoint{
		ID: id, Created: now, Deadline: now.Add(o.Timeout),
		NetNS: o.NetNS, ResolvConf: o.ResolvConf, UTSNS: o.UTSNS, OVSDB: o.OVSDB,
		Before: before, Desired: m.Desired, Revert: revert,
	}
	if n, ok := b.(Named); ok {
		rec.Backend = n.Name()
	}
	if a, ok := b.(Addressed); ok {
		rec.BackendAddress = a.Address()
	}
	if cp, ok := b.(Checkpointer); ok {
		bid, err := cp.CheckpointCreate(ctx, o.Timeout)
		if err != nil {
			enc.wait()
			return nil, err
		}
		rec.BackendCheckpoint = bid
	}
	if err := writeEncodedCheckpoint(o.StateDir, rec, rec.startEncoding(true, enc)); err != nil {
		return nil, errors.Join(err, destroyBackendCheckpoint(context.WithoutCancel(ctx), b, rec))
	}
	if o.OnCheckpoint != nil {
		if err := o.OnCheckpoint(ctx, rec); err != nil {
			if rmErr := removeCheckpoint(o.StateDir); rmErr != nil {
				return nil, errors.Join(err, rmErr)
			}
			return nil, err
		}
	}
	res := &Result{Desired: m.Desired, Plan: plan, Checkpoint: id, Deadline: rec.Deadline, Revert: revert}

	err = execute(ctx, b, m, plan)
	if err == nil && !o.NoVerify {
		err = verifyWithRetry(ctx, b, m.Desired, o)
	}
	if err != nil {
		// The rollback must run even when ctx was cancelled (SIGINT).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.RollbackTimeout)
		defer cancel()
		rbErr := rollback(rctx, b, rec, o)
		if rmErr := removeCheckpoint(o.StateDir); rmErr != nil {
			rbErr = errors.Join(rbErr, rmErr)
		}
		return nil, &Failure{Err: err, Plan: plan, Checkpoint: id, Rollback: rbErr}
	}
	if !o.NoCommit {
		if err := destroyBackendCheckpoint(ctx, b, rec); err != nil {
			return nil, fmt.Errorf("committing checkpoint %s: %w", id, err)
		}
		if err := removeCheckpoint(o.StateDir); err != nil {
			return nil, fmt.Errorf("committing checkpoint %s: %w", id, err)
		}
		res.Committed = true
	}
	return res, nil
}

// prepare reads the node, validates and merges desired into it and plans
// the change: everything that can fail without touching the node.
func prepare(ctx context.Context, b Backend, desired *nmstate.State, o Options) (*nmstate.State, *nmstate.Merged, *nmstate.Plan, error) {
	before, m, err := prepareMerged(ctx, b, desired, o)
	if err != nil {
		return nil, nil, nil, err
	}
	plan, err := o.engine.plan(m)
	if err != nil {
		return nil, nil, nil, err
	}
	return before, m, plan, nil
}

// prepareMerged is prepare up to the merge.
func prepareMerged(ctx context.Context, b Backend, desired *nmstate.State, o Options) (*nmstate.State, *nmstate.Merged, error) {
	before, err := b.Show(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the current state: %w", err)
	}
	if err := o.engine.validate(desired, before); err != nil {
		return nil, nil, err
	}
	m, err := o.engine.merge(desired, before)
	if err != nil {
		return nil, nil, err
	}
	return before, m, nil
}

// verifyWithRetry re-reads the node until it shows desired, at most
// o.VerifyRetries times; the kernel settles some changes asynchronously
// (carrier, DAD, bridge port states).
func verifyWithRetry(ctx context.Context, b Backend, desired *nmstate.State, o Options) error {
	var err error
	for i := 0; i < o.VerifyRetries; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("verifying: %w (last: %w)", ctx.Err(), err)
			case <-time.After(o.VerifyInterval):
			}
		}
		var cur *nmstate.State
		cur, err = b.Show(ctx)
		if err != nil {
			err = fmt.Errorf("reading the state to verify: %w", err)
			continue
		}
		if err = o.engine.verify(desired, cur); err == nil {
			return nil
		}
	}
	return err
}

// rollback restores rec.Before on everything the apply touched: merge the
// revert state into what the node shows now (a partial apply is fine:
// plans converge), execute, and verify the reverted objects.
func rollback(ctx context.Context, b Backend, rec *Checkpoint, o Options) error {
	// A backend with its own checkpoint rolls back first; ours then only
	// finds what it missed. It settles asynchronously (devices being
	// deleted, addresses restored), so the revert plan is re-read a few
	// times before ours runs. Until then a read can also show what no
	// valid state has (NetworkManager re-activating a device has flushed
	// its addresses, so a route's next hop has IPv4 disabled): a merge or
	// plan that fails is retried as well. A checkpoint the backend
	// already rolled back by its own timer is gone: that is not an error
	// either.
	attempts := 1
	if cp, ok := b.(Checkpointer); ok && rec.BackendCheckpoint != "" {
		if cp.CheckpointRollback(ctx, rec.BackendCheckpoint) == nil {
			attempts = o.VerifyRetries
		}
	}
	for i := 0; ; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("rolling back: %w", ctx.Err())
			case <-time.After(o.VerifyInterval):
			}
		}
		now, err := b.Show(ctx)
		if err != nil {
			return fmt.Errorf("reading the state to roll back: %w", err)
		}
		if IsEmpty(rec.Revert) {
			return nil
		}
		settling := i+1 < attempts
		m, err := o.engine.merge(rec.Revert, now)
		if err != nil {
			if settling {
				continue
			}
			return fmt.Errorf("merging the revert state: %w", err)
		}
		plan, err := o.engine.plan(m)
		if err != nil {
			if settling {
				continue
			}
			return fmt.Errorf("planning the rollback: %w", err)
		}
		if !plan.Empty() && settling {
			continue
		}
		if !plan.Empty() {
			if err := execute(ctx, b, m, plan); err != nil {
				return fmt.Errorf("executing the rollback: %w", err)
			}
		}
		if err := verifyWithRetry(ctx, b, m.Desired, o); err != nil {
			return fmt.Errorf("verifying the rollback: %w", err)
		}
		return removeAdded8021X(ctx, b, rec.Before, now)
	}
}

// removeAdded8021X removes the 802.1x sections of interfaces that had none
// before the apply.
func removeAdded8021X(ctx context.Context, b Backend, before, now *nmstate.State) error {
	r, ok := b.(IEEE8021XRemover)
	if !ok || now == nil {
		return nil
	}
	for i := range now.Interfaces {
		n := &now.Interfaces[i]
		if n.IEEE8021X == nil {
			continue
		}
		had := false
		if before != nil {
			for j := range before.Interfaces {
				if bi := &before.Interfaces[j]; bi.Name == n.Name && bi.IEEE8021X != nil {
					had = true
				}
			}
		}
		if had {
			continue
		}
		if err := r.RemoveIEEE8021X(ctx, n.Name); err != nil {
			return fmt.Errorf("rolling back: removing the 802.1x configuration of %s: %w", n.Name, err)
		}
	}
	return nil
}

// memoryOnly turns absent interfaces into down (nmstate --memory-only):
// nothing persistent is removed; virtual interfaces still go away, since a
// virtual interface that is down does not exist in the kernel.
func memoryOnly(s *nmstate.State) *nmstate.State {
	c := s.Clone()
	for i := range c.Interfaces {
		if c.Interfaces[i].State == nmstate.StateAbsent {
			c.Interfaces[i].State = nmstate.StateDown
		}
	}
	return c
}

// destroyBackendCheckpoint commits the backend's own checkpoint of rec,
// if any.
func destroyBackendCheckpoint(ctx context.Context, b Backend, rec *Checkpoint) error {
	cp, ok := b.(Checkpointer)
	if !ok || rec.BackendCheckpoint == "" {
		return nil
	}
	return cp.CheckpointDestroy(ctx, rec.BackendCheckpoint)
}

// CommitBackend is Commit for a record that may hold a backend
// checkpoint: b destroys it, so the backend does not roll back at the
// deadline.
func CommitBackend(ctx context.Context, b Backend, stateDir string) (string, error) {
	return commitBackend(ctx, b, stateDir, "")
}

// commitBackend is CommitBackend of checkpoint id ("" = whichever is
// pending): a transaction commits only its own.
func commitBackend(ctx context.Context, b Backend, stateDir, id string) (string, error) {
	unlock, err := lockDir(ctx, stateDir, true)
	if err != nil {
		return "", err
	}
	defer unlock()
	rec, err := readPending(stateDir, id)
	if err != nil {
		return "", err
	}
	if err := destroyBackendCheckpoint(ctx, b, rec); err != nil {
		return "", fmt.Errorf("committing checkpoint %s: %w", rec.ID, err)
	}
	if err := removeCheckpoint(stateDir); err != nil {
		return "", fmt.Errorf("committing checkpoint %s: %w", rec.ID, err)
	}
	return rec.ID, nil
}

// Commit makes the pending checkpoint of stateDir permanent (removes its
// record) and returns its id.
func Commit(ctx context.Context, stateDir string) (string, error) {
	unlock, err := lockDir(ctx, stateDir, true)
	if err != nil {
		return "", err
	}
	defer unlock()
	rec, err := ReadCheckpoint(stateDir)
	if errors.Is(err, ErrNoCheckpoint) {
		return "", err
	}
	if err != nil {
		// Keeping the changes needs nothing from the record; dropping an
		// unreadable one unblocks later applies.
		if rmErr := removeCheckpoint(stateDir); rmErr != nil {
			return "", errors.Join(err, rmErr)
		}
		return "", fmt.Errorf("discarded an unreadable checkpoint record: %w", err)
	}
	if err := removeCheckpoint(stateDir); err != nil {
		return "", fmt.Errorf("committing checkpoint %s: %w", rec.ID, err)
	}
	return rec.ID, nil
}

// RollbackOptions tune Rollback and Watch.
type RollbackOptions struct {
	VerifyRetries  int
	VerifyInterval time.Duration
	Now            func() time.Time
	engine         *engine
}

func (r RollbackOptions) options() Options {
	return Options{VerifyRetries: r.VerifyRetries, VerifyInterval: r.VerifyInterval, Now: r.Now, engine: r.engine}.withDefaults()
}

// Rollback restores the state from before the pending checkpoint of
// stateDir and removes the record; it returns the checkpoint's id. b must
// reach the node the record names (Checkpoint.NetNS etc.). The record is
// removed even when the rollback fails, so a broken rollback does not block
// every later apply; the error says what failed.
func Rollback(ctx context.Context, b Backend, stateDir string) (string, error) {
	return RollbackWithOptions(ctx, b, stateDir, RollbackOptions{})
}

// RollbackWithOptions is Rollback with tuned verification.
func RollbackWithOptions(ctx context.Context, b Backend, stateDir string, ro RollbackOptions) (string, error) {
	return rollbackPending(ctx, b, stateDir, "", ro.options())
}

// rollbackPending is RollbackWithOptions of checkpoint id ("" = whichever
// is pending): a transaction rolls back only its own.
func rollbackPending(ctx context.Context, b Backend, stateDir, id string, o Options) (string, error) {
	unlock, err := lockDir(ctx, stateDir, true)
	if err != nil {
		return "", err
	}
	defer unlock()
	rec, err := readPending(stateDir, id)
	if err != nil {
		return "", err
	}
	return rec.ID, rollbackAndRemove(ctx, b, stateDir, rec, o)
}

// readPending reads the pending record, which must be checkpoint id
// unless id is "". Another id means ours is gone (its deadline passed and
// a watchdog rolled it back) and someone else's is pending: that one is
// not ours to touch.
func readPending(stateDir, id string) (*Checkpoint, error) {
	rec, err := ReadCheckpoint(stateDir)
	if err != nil {
		return nil, err
	}
	if id != "" && rec.ID != id {
		return nil, fmt.Errorf("checkpoint %s is gone, %s is pending: %w", id, rec.ID, ErrNoCheckpoint)
	}
	return rec, nil
}

// DiscardPending rolls back a checkpoint nobody committed (an interrupted
// run of nmstatectl or of the handler): the change it guards was never
// confirmed. It returns the checkpoint's id, or "" and nil when none is
// pending.
func DiscardPending(ctx context.Context, b Backend, stateDir string, ro RollbackOptions) (string, error) {
	id, err := RollbackWithOptions(ctx, b, stateDir, ro)
	if errors.Is(err, ErrNoCheckpoint) {
		return "", nil
	}
	return id, err
}

func rollbackAndRemove(ctx context.Context, b Backend, stateDir string, rec *Checkpoint, o Options) error {
	err := rollback(ctx, b, rec, o)
	if rmErr := removeCheckpoint(stateDir); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	if err != nil {
		return fmt.Errorf("rolling back checkpoint %s: %w", rec.ID, err)
	}
	return nil
}
