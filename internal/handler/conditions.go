package handler

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
)

// Enactment condition setters, one per row of upstream's matrix
// (reference §1.5): each sets all five condition types, in the order a
// new enactment gets them, so clients see upstream's combinations. Only the
// condition that explains the state carries the message; the quirks (the
// SuccessfullyConfigured reason on Aborted=False after a failure) are
// upstream's and kept for clients that match on them.

type enactmentConditions struct {
	available, failing, progressing, pending, aborted corev1.ConditionStatus
	reason                                            shared.ConditionReason
	abortedReason                                     shared.ConditionReason
	// messages by condition type
	messages map[shared.ConditionType]string
}

const (
	condTrue    = corev1.ConditionTrue
	condFalse   = corev1.ConditionFalse
	condUnknown = corev1.ConditionUnknown
)

func (e enactmentConditions) apply(l *shared.ConditionList, now time.Time) {
	st := []corev1.ConditionStatus{e.available, e.failing, e.progressing, e.pending, e.aborted}
	for i, t := range shared.NodeNetworkConfigurationEnactmentConditionTypes {
		reason := e.reason
		if t == shared.NodeNetworkConfigurationEnactmentConditionAborted && e.abortedReason != "" {
			reason = e.abortedReason
		}
		l.SetAt(now, t, st[i], reason, e.messages[t])
	}
}

// setEnactmentUnknown is a new enactment's state.
func setEnactmentUnknown(l *shared.ConditionList, now time.Time) {
	enactmentConditions{available: condUnknown, failing: condUnknown, progressing: condUnknown, pending: condUnknown, aborted: condUnknown}.apply(l, now)
}

func setEnactmentPending(l *shared.ConditionList, now time.Time) {
	const msg = "Waiting for progressing nodes to finish"
	enactmentConditions{
		available: condFalse, failing: condFalse, progressing: condFalse, pending: condTrue, aborted: condFalse,
		reason: shared.NodeNetworkConfigurationEnactmentConditionMaxUnavailableLimitReached,
		messages: map[shared.ConditionType]string{
			shared.NodeNetworkConfigurationEnactmentConditionPending:     msg,
			shared.NodeNetworkConfigurationEnactmentConditionProgressing: msg,
		},
	}.apply(l, now)
}

func setEnactmentProgressing(l *shared.ConditionList, now time.Time) {
	enactmentConditions{
		available: condUnknown, failing: condUnknown, progressing: condTrue, pending: condFalse, aborted: condFalse,
		reason: shared.NodeNetworkConfigurationEnactmentConditionConfigurationProgressing,
		messages: map[shared.ConditionType]string{
			shared.NodeNetworkConfigurationEnactmentConditionProgressing: "Applying desired state",
		},
	}.apply(l, now)
}

// successMessage is upstream's "successfully reconciled", followed by what
// the node could not do of upstream's defaults (out.NoDefaultTrunk).
func successMessage(out rendered) string {
	const msg = "successfully reconciled"
	if len(out.NoDefaultTrunk) == 0 {
		return msg
	}
	return fmt.Sprintf("%s; the default VLAN trunk (2-4094) was not applied to linux-bridge ports %s: "+
		"this node's kernel cannot filter VLANs on bridges (CONFIG_BRIDGE_VLAN_FILTERING), so the bridges pass untagged traffic only",
		msg, strings.Join(out.NoDefaultTrunk, ", "))
}

func setEnactmentSuccess(l *shared.ConditionList, now time.Time, message string) {
	enactmentConditions{
		available: condTrue, failing: condFalse, progressing: condFalse, pending: condFalse, aborted: condFalse,
		reason: shared.NodeNetworkConfigurationEnactmentConditionSuccessfullyConfigured,
		messages: map[shared.ConditionType]string{
			shared.NodeNetworkConfigurationEnactmentConditionAvailable: message,
		},
	}.apply(l, now)
}

func setEnactmentFailedToConfigure(l *shared.ConditionList, now time.Time, message string) {
	enactmentConditions{
		available: condFalse, failing: condTrue, progressing: condFalse, pending: condFalse, aborted: condFalse,
		reason:        shared.NodeNetworkConfigurationEnactmentConditionFailedToConfigure,
		abortedReason: shared.NodeNetworkConfigurationEnactmentConditionSuccessfullyConfigured,
		messages: map[shared.ConditionType]string{
			shared.NodeNetworkConfigurationEnactmentConditionFailing: message,
		},
	}.apply(l, now)
}

// retryingMessage is upstream's text: the failure, where, and n/N.
func retryingMessage(enactment, node string, err error, n, max int) string {
	return fmt.Sprintf("failed to reconcile %s on node %s: %v. Retrying %d/%d", enactment, node, err, n, max)
}

func setEnactmentRetrying(l *shared.ConditionList, now time.Time, message string) {
	enactmentConditions{
		available: condFalse, failing: condTrue, progressing: condTrue, pending: condFalse, aborted: condFalse,
		reason:        shared.NodeNetworkConfigurationEnactmentConditionRetrying,
		abortedReason: shared.NodeNetworkConfigurationEnactmentConditionSuccessfullyConfigured,
		messages: map[shared.ConditionType]string{
			shared.NodeNetworkConfigurationEnactmentConditionFailing:     message,
			shared.NodeNetworkConfigurationEnactmentConditionProgressing: message,
		},
	}.apply(l, now)
}

func abortedMessage(enactment string) string {
	return fmt.Sprintf("reconciliation of enactment %q has aborted", enactment)
}

func setEnactmentAborted(l *shared.ConditionList, now time.Time, message string) {
	enactmentConditions{
		available: condFalse, failing: condFalse, progressing: condFalse, pending: condFalse, aborted: condTrue,
		reason: shared.NodeNetworkConfigurationEnactmentConditionConfigurationAborted,
		messages: map[shared.ConditionType]string{
			shared.NodeNetworkConfigurationEnactmentConditionAborted: message,
		},
	}.apply(l, now)
}

// enactmentPhase is how this handler reads its own enactment for a
// generation (the same table as docs/rollout.md).
type enactmentPhase int

const (
	phaseNone enactmentPhase = iota // stale or not asked yet
	phasePending
	phaseProgressing
	phaseRetrying
	phaseAvailable
	phaseFailed
	phaseAborted
)

func (p enactmentPhase) ended() bool {
	return p == phaseAvailable || p == phaseFailed || p == phaseAborted
}

func phaseOf(st *shared.NodeNetworkConfigurationEnactmentStatus, gen int64) enactmentPhase {
	if st.PolicyGeneration != gen {
		return phaseNone
	}
	is := func(t shared.ConditionType) bool {
		c := st.Conditions.Find(t)
		return c != nil && c.Status == corev1.ConditionTrue
	}
	switch {
	case is(shared.NodeNetworkConfigurationEnactmentConditionAborted):
		return phaseAborted
	case is(shared.NodeNetworkConfigurationEnactmentConditionAvailable):
		return phaseAvailable
	case is(shared.NodeNetworkConfigurationEnactmentConditionFailing) && is(shared.NodeNetworkConfigurationEnactmentConditionProgressing):
		return phaseRetrying
	case is(shared.NodeNetworkConfigurationEnactmentConditionFailing):
		return phaseFailed
	case is(shared.NodeNetworkConfigurationEnactmentConditionProgressing):
		return phaseProgressing
	case is(shared.NodeNetworkConfigurationEnactmentConditionPending):
		return phasePending
	}
	return phaseNone
}

func (p enactmentPhase) String() string {
	switch p {
	case phasePending:
		return "Pending"
	case phaseProgressing:
		return "Progressing"
	case phaseRetrying:
		return "Retrying"
	case phaseAvailable:
		return "Available"
	case phaseFailed:
		return "Failed"
	case phaseAborted:
		return "Aborted"
	}
	return "Unknown"
}

// Enactment phases a handler writes on the way to Available, by name, for
// PhaseConditions.
const (
	PhasePending     = "Pending"
	PhaseProgressing = "Progressing"
	PhaseAvailable   = "Available"
)

// PhaseConditions returns the conditions this handler writes for an
// enactment in the named phase: what a load generator playing the handler's
// API side (the bench's simulated nodes, `policy.rollout1000`) must write
// for the controller to see the same enactments.
func PhaseConditions(phase string, now time.Time) (shared.ConditionList, error) {
	var l shared.ConditionList
	switch phase {
	case PhasePending:
		setEnactmentPending(&l, now)
	case PhaseProgressing:
		setEnactmentProgressing(&l, now)
	case PhaseAvailable:
		setEnactmentSuccess(&l, now, successMessage(rendered{}))
	default:
		return nil, fmt.Errorf("enactment phase %q: not one of %s, %s, %s", phase, PhasePending, PhaseProgressing, PhaseAvailable)
	}
	return l, nil
}
