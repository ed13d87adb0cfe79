package operator

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
)

// progressing says why a workload is not yet fully rolled out, "" when it
// is (upstream's rules, reference §4.5).
func deploymentProgressing(d *appsv1.Deployment) string {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	switch {
	case d.Status.ObservedGeneration < d.Generation:
		return fmt.Sprintf("Deployment %q update being processed", d.Name)
	case d.Status.UnavailableReplicas > 0:
		return fmt.Sprintf("Deployment %q is not available (awaiting %d nodes)", d.Name, d.Status.UnavailableReplicas)
	case want > 0 && d.Status.AvailableReplicas == 0:
		return fmt.Sprintf("Deployment %q is not yet scheduled on any nodes", d.Name)
	case d.Status.UpdatedReplicas < want:
		return fmt.Sprintf("Deployment %q is rolling out (%d of %d updated)", d.Name, d.Status.UpdatedReplicas, want)
	}
	return ""
}

func daemonSetProgressing(ds *appsv1.DaemonSet) string {
	switch {
	case ds.Status.ObservedGeneration < ds.Generation:
		return fmt.Sprintf("DaemonSet %q update being processed", ds.Name)
	case ds.Status.NumberUnavailable > 0:
		return fmt.Sprintf("DaemonSet %q is not available (awaiting %d nodes)", ds.Name, ds.Status.NumberUnavailable)
	case ds.Status.DesiredNumberScheduled != 0 && ds.Status.NumberAvailable == 0:
		return fmt.Sprintf("DaemonSet %q is not yet scheduled on any nodes", ds.Name)
	case ds.Status.UpdatedNumberScheduled < ds.Status.DesiredNumberScheduled:
		return fmt.Sprintf("DaemonSet %q update is rolling out (%d out of %d updated)", ds.Name, ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled)
	}
	return ""
}

// conditions computes the NMState's conditions from the workloads it
// deployed (nil when missing: not created yet) or from the error that
// stopped the reconcile, on top of the old ones (their times kept when
// nothing changed).
func conditions(old shared.ConditionList, deployments []*appsv1.Deployment, daemonSets []*appsv1.DaemonSet, missing []string, reconcileErr error, now time.Time) shared.ConditionList {
	l := append(shared.ConditionList(nil), old...)
	set := func(t shared.ConditionType, s corev1.ConditionStatus, r shared.ConditionReason, msg string) {
		if c := l.Find(t); c != nil && c.Status == s && c.Reason == r && c.Message == msg {
			return // unchanged: no write, not even a heartbeat
		}
		l.SetAt(now, t, s, r, msg)
	}
	if reconcileErr != nil {
		msg := reconcileErr.Error()
		set(shared.NMStateConditionDegraded, corev1.ConditionTrue, shared.NMStateConditionInternalError, msg)
		set(shared.NMStateConditionAvailable, corev1.ConditionFalse, shared.NMStateConditionInternalError, msg)
		set(shared.NMStateConditionProgressing, corev1.ConditionFalse, shared.NMStateConditionInternalError, msg)
		return l
	}
	var why []string
	for _, m := range missing {
		why = append(why, fmt.Sprintf("%s is not created yet", m))
	}
	for _, d := range deployments {
		if msg := deploymentProgressing(d); msg != "" {
			why = append(why, msg)
		}
	}
	for _, ds := range daemonSets {
		if msg := daemonSetProgressing(ds); msg != "" {
			why = append(why, msg)
		}
	}
	if len(why) > 0 {
		msg := strings.Join(why, "\n")
		set(shared.NMStateConditionProgressing, corev1.ConditionTrue, shared.NMStateConditionDeploying, msg)
		set(shared.NMStateConditionAvailable, corev1.ConditionFalse, shared.NMStateConditionDeploying, msg)
		set(shared.NMStateConditionDegraded, corev1.ConditionFalse, shared.NMStateConditionDeploying, msg)
		return l
	}
	const ok = "All components are available and ready"
	set(shared.NMStateConditionProgressing, corev1.ConditionFalse, shared.NMStateConditionSuccessfullyDeployed, ok)
	set(shared.NMStateConditionAvailable, corev1.ConditionTrue, shared.NMStateConditionSuccessfullyDeployed, ok)
	set(shared.NMStateConditionDegraded, corev1.ConditionFalse, shared.NMStateConditionSuccessfullyDeployed, ok)
	return l
}

// sameConditions compares two lists ignoring heartbeat times.
func sameConditions(a, b shared.ConditionList) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return false
		}
	}
	return true
}
