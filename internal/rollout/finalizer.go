package rollout

import (
	"slices"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/extension"
)

// FinalizerDecision is what the controller must do with a policy's
// revert-on-delete finalizer (extension.RevertFinalizer).
type FinalizerDecision struct {
	Add, Remove bool
	// Waiting are the nodes that have not yet reported the revert of a
	// deleted policy, sorted.
	Waiting []string
}

// Finalizer decides the finalizer of a policy: a live policy has it
// exactly while its knmstate.io/revert-on-delete annotation is "true"; a
// deleted one keeps it until every Ready eligible node's enactment has a
// Reverted condition (True, or False saying why it could not). A node that
// is NotReady or runs no handler cannot report and is not waited for.
func Finalizer(in Input) FinalizerDecision {
	p := in.Policy
	if p == nil {
		return FinalizerDecision{}
	}
	has := slices.Contains(p.Finalizers, extension.RevertFinalizer)
	if p.DeletionTimestamp == nil {
		s, errs := extension.Parse(p.Annotations)
		want := len(errs) == 0 && s.RevertOnDelete
		return FinalizerDecision{Add: want && !has, Remove: !want && has}
	}
	if !has {
		return FinalizerDecision{}
	}
	v := newView(in)
	reported := map[string]bool{}
	for _, e := range v.enactments {
		if e.Status.Conditions.Find(extension.RevertedCondition) != nil {
			reported[e.Labels[shared.EnactmentNodeLabel]] = true
		}
	}
	var d FinalizerDecision
	for name, n := range v.nodes {
		if n.eligible() && n.ready && !reported[name] {
			d.Waiting = append(d.Waiting, name)
		}
	}
	slices.Sort(d.Waiting)
	d.Remove = len(d.Waiting) == 0
	return d
}
