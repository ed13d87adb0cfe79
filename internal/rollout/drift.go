package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/extension"
)

// Drift is how many of a policy's nodes no longer show it.
type Drift struct {
	// Nodes are the eligible nodes whose enactment is Available for the
	// current generation with a Drifted condition, sorted.
	Nodes []string
	// Matching counts the eligible nodes.
	Matching int
}

// PolicyDrift finds the nodes on which the policy drifted (their handler's
// drift detection set the enactment's Drifted condition).
func PolicyDrift(in Input) Drift {
	if in.Policy == nil {
		return Drift{}
	}
	v := newView(in)
	var d Drift
	d.Matching, _ = v.eligibleNodes()
	for _, e := range v.enactments {
		n, ok := v.node(e)
		if !ok || !n.eligible() || phaseOf(e, v.gen) != phaseAvailable || !isTrue(e.Status.Conditions, extension.DriftedCondition) {
			continue
		}
		d.Nodes = append(d.Nodes, e.Labels[shared.EnactmentNodeLabel])
	}
	slices.Sort(d.Nodes)
	return d
}

// DriftCondition returns the policy's conditions with its Drifted
// condition for d: True, saying how many and which nodes, while any node
// drifted; absent otherwise (so a policy that never drifted keeps
// upstream's four conditions). changed is false, and the list untouched,
// when nothing but heartbeat times would change.
func DriftCondition(l shared.ConditionList, d Drift, now time.Time) (shared.ConditionList, bool) {
	old := l.Find(extension.DriftedCondition)
	if len(d.Nodes) == 0 {
		if old == nil {
			return l, false
		}
		return slices.DeleteFunc(slices.Clone(l), func(c shared.Condition) bool { return c.Type == extension.DriftedCondition }), true
	}
	msg := fmt.Sprintf("%d/%d nodes no longer show the policy: %s", len(d.Nodes), d.Matching, strings.Join(d.Nodes, ", "))
	if old != nil && old.Status == corev1.ConditionTrue && old.Message == msg {
		return l, false
	}
	out := slices.Clone(l)
	out.SetAt(now, extension.DriftedCondition, corev1.ConditionTrue, extension.DriftedReason, msg)
	return out, true
}
