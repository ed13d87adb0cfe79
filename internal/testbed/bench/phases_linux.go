package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Phase is one step of an apply with its cost.
type Phase struct {
	Name string
	Sample
}

// ApplyPhases runs the apply pipeline by hand (without checkpoint and
// rollback) on w in a fresh namespace and returns the cost of each step:
// read the node, validate+merge+plan, execute the plan, re-read,
// verify. It shows where an apply's time goes; ApplyOnce is the figure to
// compare.
func ApplyPhases(ctx context.Context, w *Workload, opts Options) ([]Phase, error) {
	o := opts.withDefaults()
	ns, err := newNamespace(ctx, o.IP)
	if err != nil {
		return nil, err
	}
	if err := settle(ctx, o.Settle); err != nil {
		return nil, errors.Join(err, ns.remove())
	}
	phases, err := phasesIn(ctx, ns.Name, w)
	return phases, errors.Join(err, ns.remove())
}

func phasesIn(ctx context.Context, netns string, w *Workload) ([]Phase, error) {
	var phases []Phase
	var start time.Time
	var cpu time.Duration
	begin := func() { start, cpu = time.Now(), selfCPU() }
	end := func(name string) {
		phases = append(phases, Phase{Name: name, Sample: Sample{Wall: time.Since(start), CPU: selfCPU() - cpu}})
	}
	begin()
	b, err := kernel.Open(ctx, kernel.Options{NetNS: netns})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	cur, err := b.Show(ctx)
	if err != nil {
		return nil, err
	}
	end("open+show")
	begin()
	desired := w.State.Clone()
	if err := nmstate.Validate(desired, cur); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	m, err := nmstate.Merge(desired, cur)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	plan, err := nmstate.PlanChanges(m)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	end(fmt.Sprintf("validate+merge+plan (%d ops)", len(plan.Ops)))
	begin()
	if err := b.Execute(ctx, plan); err != nil {
		return nil, fmt.Errorf("execute: %w", err)
	}
	end("execute")
	begin()
	after, err := b.Show(ctx)
	if err != nil {
		return nil, err
	}
	end("show again")
	begin()
	verr := nmstate.Verify(m.Desired, after)
	end("verify")
	if verr != nil {
		return phases, fmt.Errorf("verify: %w", verr)
	}
	return phases, nil
}
