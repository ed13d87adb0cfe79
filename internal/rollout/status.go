package rollout

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
)

// isDryRun reports whether the policy asks for a dry run. An annotation
// that does not parse is no dry run: the handlers report it as a failure.
func isDryRun(p *nmstatev1.NodeNetworkConfigurationPolicy) bool {
	s, errs := extension.Parse(p.Annotations)
	return len(errs) == 0 && s.DryRun
}

// Verdict is the overall state of a policy, the one condition that is True.
type Verdict string

// The verdicts, named after the condition each one makes True.
const (
	Ignored     Verdict = "Ignored"
	Degraded    Verdict = "Degraded"
	Progressing Verdict = "Progressing"
	Available   Verdict = "Available"
	// DryRun: the policy is a dry run (knmstate.io/dry-run) and every
	// eligible node reported its plan; nothing was applied.
	DryRun Verdict = "DryRun"
)

// Status is the aggregated state of a policy.
type Status struct {
	Verdict Verdict
	Message string
}

// PolicyStatus aggregates the enactments of the policy's current generation
// into its status, with kubernetes-nmstate's messages. Only nodes that match
// the selector and run a handler count (M); NotReady ones are left out of
// the progress (R = Ready ones) and mentioned. Enactments of other nodes or
// other generations do not count. In order:
//
//   - M = 0: Ignored, "Policy does not match any node";
//   - any Failing or Aborted: Degraded, "F/M nodes failed to configure" and
//     ", A nodes aborted configuration";
//   - fewer finished (Available, Failing, Aborted) Ready nodes than R:
//     Progressing, "Policy is progressing F/R nodes finished";
//   - any Pending: Progressing, "... finished, P pending";
//   - else Available, "A/M nodes successfully configured".
//
// The Progressing and Available messages end with ", N nodes ignored due to
// NotReady state" when N > 0.
func PolicyStatus(in Input) Status {
	v := newView(in)
	if in.Policy == nil {
		return Status{Verdict: Ignored, Message: "Policy does not match any node"}
	}
	matching, ready := v.eligibleNodes()
	if matching == 0 {
		return Status{Verdict: Ignored, Message: "Policy does not match any node"}
	}
	dryRun := isDryRun(in.Policy)
	var available, failed, aborted, pending, planned, finishedReady int
	for _, e := range v.enactments {
		n, ok := v.node(e)
		if !ok || !n.eligible() {
			continue
		}
		finished := true
		switch ph := phaseOf(e, v.gen); {
		case dryRun && ph == phaseDryRun:
			planned++
		case dryRun && ph == phaseAvailable:
			// Available before the dry run was asked for: not planned yet.
			finished = false
		case ph == phaseAvailable:
			available++
		case ph == phaseFailed || ph == phaseRetrying:
			// Retrying counts as failing, as upstream: the policy turns
			// Degraded at the first failed attempt.
			failed++
		case ph == phaseAborted:
			aborted++
		case ph == phasePending:
			pending++
			finished = false
		default:
			finished = false
		}
		if finished && n.ready {
			finishedReady++
		}
	}
	notReady := matching - ready
	notReadyNote := ""
	if notReady > 0 {
		notReadyNote = fmt.Sprintf(", %d nodes ignored due to NotReady state", notReady)
	}
	switch {
	case failed > 0 || aborted > 0:
		msg := fmt.Sprintf("%d/%d nodes failed to configure", failed, matching)
		if aborted > 0 {
			msg += fmt.Sprintf(", %d nodes aborted configuration", aborted)
		}
		return Status{Verdict: Degraded, Message: msg}
	case dryRun && finishedReady < ready:
		return Status{Verdict: Progressing, Message: fmt.Sprintf("dry run: %d/%d nodes planned%s", finishedReady, ready, notReadyNote)}
	case dryRun:
		return Status{Verdict: DryRun, Message: fmt.Sprintf("dry run: %d/%d nodes planned, nothing applied; each enactment's DryRun condition shows its plan%s", planned, matching, notReadyNote)}
	case finishedReady < ready:
		return Status{Verdict: Progressing, Message: fmt.Sprintf("Policy is progressing %d/%d nodes finished%s", finishedReady, ready, notReadyNote)}
	case pending > 0:
		return Status{Verdict: Progressing, Message: fmt.Sprintf("Policy is progressing %d/%d nodes finished, %d pending%s", finishedReady, ready, pending, notReadyNote)}
	}
	return Status{Verdict: Available, Message: fmt.Sprintf("%d/%d nodes successfully configured%s", available, matching, notReadyNote)}
}

// condition is one condition as a verdict sets it.
type condition struct {
	status  corev1.ConditionStatus
	reason  shared.ConditionReason
	message string
}

// conditionsOf returns the four policy conditions of a status, with the
// reasons kubernetes-nmstate uses (including its quirk of giving a Degraded
// policy's Progressing=False the reason ConfigurationProgressing), so
// existing tooling reading reasons keeps working.
func conditionsOf(s Status) map[shared.ConditionType]condition {
	const (
		avail = shared.NodeNetworkConfigurationPolicyConditionAvailable
		degr  = shared.NodeNetworkConfigurationPolicyConditionDegraded
		prog  = shared.NodeNetworkConfigurationPolicyConditionProgressing
		ign   = shared.NodeNetworkConfigurationPolicyConditionIgnored
	)
	T, F, U := corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	switch s.Verdict {
	case Ignored:
		r := shared.NodeNetworkConfigurationPolicyConditionConfigurationNoMatchingNode
		return map[shared.ConditionType]condition{avail: {F, r, ""}, degr: {F, r, ""}, prog: {F, r, ""}, ign: {T, r, s.Message}}
	case Degraded:
		r := shared.NodeNetworkConfigurationPolicyConditionFailedToConfigure
		return map[shared.ConditionType]condition{avail: {F, r, ""}, degr: {T, r, s.Message},
			prog: {F, shared.NodeNetworkConfigurationPolicyConditionConfigurationProgressing, ""}, ign: {F, r, ""}}
	case DryRun:
		r := shared.ConditionReason(extension.DryRunReason)
		return map[shared.ConditionType]condition{avail: {F, r, ""}, degr: {F, r, ""}, prog: {F, r, ""}, ign: {F, r, ""},
			extension.DryRunCondition: {T, r, s.Message}}
	case Progressing:
		r := shared.NodeNetworkConfigurationPolicyConditionConfigurationProgressing
		return map[shared.ConditionType]condition{avail: {U, r, ""}, degr: {U, r, ""}, prog: {T, r, s.Message}, ign: {F, r, ""}}
	default:
		r := shared.NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured
		return map[shared.ConditionType]condition{avail: {T, r, s.Message}, degr: {F, r, ""}, prog: {F, r, ""}, ign: {F, r, ""}}
	}
}

// Conditions returns the policy's condition list after recording s at now,
// and whether anything but heartbeat times changed. When nothing changed the
// caller must not write: the old list is returned untouched, so heartbeat
// times only move when the status does. Transition times follow
// shared.ConditionList.SetAt: they move only when a condition's status does.
func Conditions(old shared.ConditionList, s Status, now time.Time) (shared.ConditionList, bool) {
	want := conditionsOf(s)
	types := shared.NodeNetworkConfigurationPolicyConditionTypes[:]
	_, dry := want[extension.DryRunCondition]
	if dry {
		types = append(slices.Clone(types), extension.DryRunCondition)
	}
	// The DryRun condition exists only while the verdict is DryRun, so a
	// policy that never was one keeps upstream's four conditions.
	changed := !dry && old.Find(extension.DryRunCondition) != nil
	for _, t := range types {
		if changed {
			break
		}
		c := old.Find(t)
		w := want[t]
		if c == nil || c.Status != w.status || c.Reason != w.reason || c.Message != w.message {
			changed = true
			break
		}
	}
	if !changed {
		return old, false
	}
	out := slices.DeleteFunc(slices.Clone(old), func(c shared.Condition) bool { return c.Type == extension.DryRunCondition && !dry })
	for _, t := range types {
		w := want[t]
		out.SetAt(now, t, w.status, w.reason, w.message)
	}
	return out, true
}
