package rollout

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
)

// Verdict is the overall state of a policy, the one condition that is True.
type Verdict string

// The verdicts, named after the condition each one makes True.
const (
	Ignored     Verdict = "Ignored"
	Degraded    Verdict = "Degraded"
	Progressing Verdict = "Progressing"
	Available   Verdict = "Available"
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
	var available, failed, aborted, pending, finishedReady int
	for _, e := range v.enactments {
		n, ok := v.node(e)
		if !ok || !n.eligible() {
			continue
		}
		finished := true
		switch phaseOf(e, v.gen) {
		case phaseAvailable:
			available++
		case phaseFailed, phaseRetrying:
			// Retrying counts as failing, as upstream: the policy turns
			// Degraded at the first failed attempt.
			failed++
		case phaseAborted:
			aborted++
		case phasePending:
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
	changed := false
	for _, t := range shared.NodeNetworkConfigurationPolicyConditionTypes {
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
	out := make(shared.ConditionList, len(old))
	copy(out, old)
	for _, t := range shared.NodeNetworkConfigurationPolicyConditionTypes {
		w := want[t]
		out.SetAt(now, t, w.status, w.reason, w.message)
	}
	return out, true
}
