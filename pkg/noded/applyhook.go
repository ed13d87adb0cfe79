package noded

import (
	"context"
	"fmt"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// FollowFunc tells the node runtime the state the node should now have:
// Runtime.Update for a runtime in this process, Submit for one in another
// process, AcquireOnce when none runs.
type FollowFunc func(ctx context.Context, applied *nmstate.State) error

// ApplyBackend wraps the backend the apply sequence drives so that the node
// runtime follows every apply without pkg/apply knowing about it:
//
//   - after the plan of an apply has executed, the runtime learns the
//     applied state, before verification runs;
//   - after a rollback's plan, it learns the reverted state;
//   - Show reports what the runtime record says (dhcp: true and the auto-*
//     flags as applied, dynamic DNS as running only), so verification sees
//     a dynamic interface as configured even before its first lease, and
//     the checkpoint's pre-apply state keeps it dynamic for a rollback.
//
// Pass OnCheckpoint as (or call it from) apply.Options.OnCheckpoint. One
// ApplyBackend serves one Apply at a time.
type ApplyBackend struct {
	Inner    apply.Backend
	StateDir string
	Follow   FollowFunc

	rec      *apply.Checkpoint
	executed int
}

// OnCheckpoint remembers the checkpoint of the apply that starts.
func (b *ApplyBackend) OnCheckpoint(_ context.Context, rec *apply.Checkpoint) error {
	b.rec, b.executed = rec, 0
	return nil
}

// Show reads the node and annotates it with the runtime record.
func (b *ApplyBackend) Show(ctx context.Context) (*nmstate.State, error) {
	st, err := b.Inner.Show(ctx)
	if err != nil {
		return nil, err
	}
	rec, err := ReadRecord(b.StateDir)
	if err != nil {
		return nil, err
	}
	rec.Annotate(st)
	return st, nil
}

// Execute runs a plan, then tells the runtime about the state it leads
// to: the first plan after a checkpoint is the apply's, any later one a
// rollback.
func (b *ApplyBackend) Execute(ctx context.Context, p *nmstate.Plan) error {
	err := b.Inner.Execute(ctx, p)
	b.executed++
	if b.rec == nil || b.Follow == nil {
		return err
	}
	target := b.rec.Desired
	if b.executed > 1 {
		target = b.rec.Revert
	} else if err != nil {
		// The apply failed part way: the rollback that follows tells the
		// runtime where the node ends up.
		return err
	}
	if ferr := b.Follow(ctx, target); ferr != nil {
		return fmt.Errorf("node runtime: %w", ferr)
	}
	return err
}
