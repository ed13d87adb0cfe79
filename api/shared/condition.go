package shared

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType names one condition of an object (Available, Degraded, ...).
type ConditionType string

// ConditionReason is the machine-readable cause of a condition's state.
type ConditionReason string

// Condition is one entry of a status condition list. The shape (and the
// separate heartbeat time) is the one kubernetes-nmstate uses, not
// metav1.Condition, so existing clients keep decoding it.
type Condition struct {
	Type   ConditionType          `json:"type"`
	Status corev1.ConditionStatus `json:"status"`
	// +optional
	Reason ConditionReason `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// LastHeartbeatTime is refreshed every time the condition is set.
	// +optional
	LastHeartbeatTime metav1.Time `json:"lastHeartbeatTime,omitempty"`
	// LastTransitionTime changes only when Status changes.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// ConditionList is the conditions of one object, in the order their types
// were first set (clients and printer columns rely on that order being
// stable).
type ConditionList []Condition

// Set records a condition at the current time; see SetAt.
func (l *ConditionList) Set(t ConditionType, status corev1.ConditionStatus, reason ConditionReason, message string) {
	l.SetAt(time.Now(), t, status, reason, message)
}

// SetAt records a condition as observed at now. A type not yet in the list
// is appended with both timestamps at now. An existing one gets the new
// status, reason and message; its transition time moves only if the status
// changed, while its heartbeat time moves on every call, even when nothing
// else changed, so readers can tell the writer is alive.
func (l *ConditionList) SetAt(now time.Time, t ConditionType, status corev1.ConditionStatus, reason ConditionReason, message string) {
	ts := metav1.NewTime(now)
	c := l.Find(t)
	if c == nil {
		*l = append(*l, Condition{
			Type:               t,
			Status:             status,
			Reason:             reason,
			Message:            message,
			LastHeartbeatTime:  ts,
			LastTransitionTime: ts,
		})
		return
	}
	if c.Status != status {
		c.LastTransitionTime = ts
	}
	c.Status = status
	c.Reason = reason
	c.Message = message
	c.LastHeartbeatTime = ts
}

// Find returns the condition of type t, or nil. The pointer aliases the
// list, so callers may modify the condition in place.
func (l ConditionList) Find(t ConditionType) *Condition {
	for i := range l {
		if l[i].Type == t {
			return &l[i]
		}
	}
	return nil
}
