package apply

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultWatchPoll is how often Watch looks at the record before the
// deadline, so that it exits soon after a commit or rollback.
const DefaultWatchPoll = 500 * time.Millisecond

// OpenFunc opens a backend for the node a checkpoint names; close releases
// it.
type OpenFunc func(ctx context.Context, rec *Checkpoint) (b Backend, close func(), err error)

// Watch guards checkpoint id in stateDir: it returns (false, nil) as soon as
// the record is gone or replaced (committed or rolled back by someone
// else), and rolls the checkpoint back once Decide says so, returning
// (true, error of the rollback). It is the body of the detached watchdog
// process that nmstatectl apply starts, so that an uncommitted apply rolls
// back even after nmstatectl has exited.
func Watch(ctx context.Context, stateDir, id string, open OpenFunc, ro RollbackOptions, poll time.Duration) (rolledBack bool, err error) {
	o := ro.options()
	if poll <= 0 {
		poll = DefaultWatchPoll
	}
	for {
		rec, err := ReadCheckpoint(stateDir)
		if errors.Is(err, ErrNoCheckpoint) || (err == nil && rec.ID != id) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		now := o.Now()
		d := Decide(rec, now)
		if d.Action == RollbackNow {
			return watchRollback(ctx, stateDir, id, open, o)
		}
		wait := min(poll, d.At.Sub(now))
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// watchRollback takes the lock (an apply, commit or rollback in progress
// finishes first), checks the checkpoint is still the one guarded, and
// rolls it back.
func watchRollback(ctx context.Context, stateDir, id string, open OpenFunc, o Options) (bool, error) {
	unlock, err := lockDir(ctx, stateDir, true)
	if err != nil {
		return false, err
	}
	defer unlock()
	rec, err := ReadCheckpoint(stateDir)
	if errors.Is(err, ErrNoCheckpoint) || (err == nil && rec.ID != id) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	b, closeB, err := open(ctx, rec)
	if err != nil {
		return false, fmt.Errorf("opening the node of checkpoint %s: %w", id, err)
	}
	defer closeB()
	return true, rollbackAndRemove(ctx, b, stateDir, rec, o)
}
