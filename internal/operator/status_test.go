package operator

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
)

func deployment(replicas, available, unavailable, updated int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d", Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, AvailableReplicas: available,
			UnavailableReplicas: unavailable, UpdatedReplicas: updated},
	}
}

func daemonSet(desired, available, unavailable, updated int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ds", Generation: 1},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: desired,
			NumberAvailable: available, NumberUnavailable: unavailable, UpdatedNumberScheduled: updated},
	}
}

func TestConditions(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	type want struct {
		available, progressing, degraded corev1.ConditionStatus
		reason                           shared.ConditionReason
	}
	for _, tc := range []struct {
		name    string
		deps    []*appsv1.Deployment
		dss     []*appsv1.DaemonSet
		missing []string
		err     error
		want    want
	}{
		{"all ready", []*appsv1.Deployment{deployment(2, 2, 0, 2)}, []*appsv1.DaemonSet{daemonSet(3, 3, 0, 3)}, nil, nil,
			want{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionFalse, shared.NMStateConditionSuccessfullyDeployed}},
		{"deployment unavailable", []*appsv1.Deployment{deployment(2, 1, 1, 2)}, []*appsv1.DaemonSet{daemonSet(3, 3, 0, 3)}, nil, nil,
			want{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionFalse, shared.NMStateConditionDeploying}},
		{"daemonset rolling", []*appsv1.Deployment{deployment(2, 2, 0, 2)}, []*appsv1.DaemonSet{daemonSet(3, 3, 0, 1)}, nil, nil,
			want{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionFalse, shared.NMStateConditionDeploying}},
		{"daemonset on no node yet", nil, []*appsv1.DaemonSet{daemonSet(3, 0, 0, 3)}, nil, nil,
			want{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionFalse, shared.NMStateConditionDeploying}},
		{"not created yet", nil, nil, []string{"DaemonSet knmstate-handler"}, nil,
			want{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionFalse, shared.NMStateConditionDeploying}},
		{"apply failed", nil, nil, nil, errors.New("boom"),
			want{corev1.ConditionFalse, corev1.ConditionFalse, corev1.ConditionTrue, shared.NMStateConditionInternalError}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := conditions(nil, tc.deps, tc.dss, tc.missing, tc.err, now)
			for ty, status := range map[shared.ConditionType]corev1.ConditionStatus{
				shared.NMStateConditionAvailable: tc.want.available, shared.NMStateConditionProgressing: tc.want.progressing,
				shared.NMStateConditionDegraded: tc.want.degraded,
			} {
				c := l.Find(ty)
				if c == nil || c.Status != status || c.Reason != tc.want.reason {
					t.Errorf("%s = %+v, want %s/%s", ty, c, status, tc.want.reason)
				}
			}
		})
	}
}

// Conditions computed again from an unchanged world are the same list,
// times included: nothing to write.
func TestConditionsStable(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	deps := []*appsv1.Deployment{deployment(2, 2, 0, 2)}
	first := conditions(nil, deps, nil, nil, nil, t0)
	again := conditions(first, deps, nil, nil, nil, t0.Add(time.Hour))
	if !sameConditions(first, again) {
		t.Errorf("conditions changed without a change:\n%+v\n%+v", first, again)
	}
	for i := range first {
		if !first[i].LastHeartbeatTime.Equal(&again[i].LastHeartbeatTime) {
			t.Errorf("%s heartbeat moved without a change", first[i].Type)
		}
	}
	changed := conditions(first, []*appsv1.Deployment{deployment(2, 1, 1, 2)}, nil, nil, nil, t0.Add(time.Hour))
	if sameConditions(first, changed) {
		t.Error("a workload becoming unavailable left the conditions unchanged")
	}
}
