package apply

import "github.com/knmstate/knmstate/pkg/nmstate"

// engine is the state model the orchestrator drives. It is a value, not
// direct calls, only so unit tests can script a model (with a fake
// Backend) to test the orchestrator's decisions in isolation; production
// always uses nmstateEngine.
type engine struct {
	validate func(desired, current *nmstate.State) error
	merge    func(desired, current *nmstate.State) (*nmstate.Merged, error)
	plan     func(m *nmstate.Merged) (*nmstate.Plan, error)
	revert   func(before, desired *nmstate.State) (*nmstate.State, error)
	verify   func(desired, current *nmstate.State) error
}

func nmstateEngine() *engine {
	return &engine{
		validate: func(d, c *nmstate.State) error { return nmstate.Validate(d, c).Err() },
		merge:    nmstate.Merge,
		plan:     nmstate.PlanChanges,
		revert:   nmstate.Revert,
		verify:   nmstate.Verify,
	}
}
