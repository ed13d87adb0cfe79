package shared

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConditionListSetAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	at := metav1.NewTime
	cond := func(ty ConditionType, s corev1.ConditionStatus, r ConditionReason, msg string, heartbeat, transition time.Time) Condition {
		return Condition{Type: ty, Status: s, Reason: r, Message: msg, LastHeartbeatTime: at(heartbeat), LastTransitionTime: at(transition)}
	}
	type set struct {
		ty     ConditionType
		status corev1.ConditionStatus
		reason ConditionReason
		msg    string
	}
	for _, tc := range []struct {
		name string
		list ConditionList
		set  set
		want ConditionList
	}{{
		name: "new type into an empty list gets both times",
		set:  set{"Available", corev1.ConditionTrue, "SuccessfullyConfigured", "done"},
		want: ConditionList{cond("Available", corev1.ConditionTrue, "SuccessfullyConfigured", "done", t1, t1)},
	}, {
		name: "new type is appended after existing ones",
		list: ConditionList{
			cond("Progressing", corev1.ConditionTrue, "ConfigurationProgressing", "", t0, t0),
			cond("Available", corev1.ConditionUnknown, "", "", t0, t0),
		},
		set: set{"Degraded", corev1.ConditionFalse, "", ""},
		want: ConditionList{
			cond("Progressing", corev1.ConditionTrue, "ConfigurationProgressing", "", t0, t0),
			cond("Available", corev1.ConditionUnknown, "", "", t0, t0),
			cond("Degraded", corev1.ConditionFalse, "", "", t1, t1),
		},
	}, {
		name: "status change moves the transition time, keeps the position",
		list: ConditionList{
			cond("Available", corev1.ConditionUnknown, "", "", t0, t0),
			cond("Degraded", corev1.ConditionUnknown, "", "", t0, t0),
		},
		set: set{"Available", corev1.ConditionTrue, "SuccessfullyConfigured", "ok"},
		want: ConditionList{
			cond("Available", corev1.ConditionTrue, "SuccessfullyConfigured", "ok", t1, t1),
			cond("Degraded", corev1.ConditionUnknown, "", "", t0, t0),
		},
	}, {
		name: "reason and message change without status change keep the transition time",
		list: ConditionList{cond("Failing", corev1.ConditionTrue, "FailedToConfigure", "boom", t0, t0)},
		set:  set{"Failing", corev1.ConditionTrue, "Retrying", "retry 1/3"},
		want: ConditionList{cond("Failing", corev1.ConditionTrue, "Retrying", "retry 1/3", t1, t0)},
	}, {
		name: "identical values still refresh the heartbeat",
		list: ConditionList{cond("Available", corev1.ConditionTrue, "SuccessfullyConfigured", "ok", t0, t0)},
		set:  set{"Available", corev1.ConditionTrue, "SuccessfullyConfigured", "ok"},
		want: ConditionList{cond("Available", corev1.ConditionTrue, "SuccessfullyConfigured", "ok", t1, t0)},
	}, {
		name: "empty reason and message overwrite old ones",
		list: ConditionList{cond("Available", corev1.ConditionTrue, "SuccessfullyConfigured", "ok", t0, t0)},
		set:  set{"Available", corev1.ConditionUnknown, "", ""},
		want: ConditionList{cond("Available", corev1.ConditionUnknown, "", "", t1, t1)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.list
			got.SetAt(t1, tc.set.ty, tc.set.status, tc.set.reason, tc.set.msg)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SetAt (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConditionListSetUsesNow(t *testing.T) {
	var l ConditionList
	before := time.Now().Truncate(time.Second)
	l.Set("Available", corev1.ConditionTrue, "", "")
	c := l.Find("Available")
	if c == nil {
		t.Fatal("Find(Available) = nil after Set")
	}
	if c.LastHeartbeatTime.Time.Before(before) || !c.LastTransitionTime.Equal(&c.LastHeartbeatTime) {
		t.Errorf("Set times = heartbeat %v transition %v, want both now (>= %v)", c.LastHeartbeatTime, c.LastTransitionTime, before)
	}
}

func TestConditionListFind(t *testing.T) {
	l := ConditionList{{Type: "Available", Status: corev1.ConditionTrue}, {Type: "Degraded", Status: corev1.ConditionFalse}}
	if got := l.Find("Progressing"); got != nil {
		t.Errorf("Find(Progressing) = %+v, want nil", got)
	}
	got := l.Find("Degraded")
	if got == nil || got.Status != corev1.ConditionFalse {
		t.Fatalf("Find(Degraded) = %+v, want the Degraded condition", got)
	}
	// The result aliases the list, so callers can edit in place.
	got.Status = corev1.ConditionTrue
	if l[1].Status != corev1.ConditionTrue {
		t.Errorf("edit through Find did not reach the list: %+v", l[1])
	}
}
