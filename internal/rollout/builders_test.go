package rollout

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
)

// t0 is the time every fixture is created at; tests decide at t0 + some
// duration.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type nodeOpt func(*corev1.Node)

func notReadyFor(d time.Duration, now time.Time) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-d))}}
	}
}

func label(k, v string) nodeOpt {
	return func(n *corev1.Node) { n.Labels[k] = v }
}

func node(name string, opts ...nodeOpt) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}, CreationTimestamp: metav1.NewTime(t0)},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
		}},
	}
	for _, o := range opts {
		o(&n)
	}
	return n
}

// nodes returns node1..nodeN, all Ready.
func nodes(n int) []corev1.Node {
	var out []corev1.Node
	for i := 1; i <= n; i++ {
		out = append(out, node(fmt.Sprintf("node%d", i)))
	}
	return out
}

// handlers returns node1..nodeN as running a handler.
func handlers(n int) map[string]bool {
	out := map[string]bool{}
	for i := 1; i <= n; i++ {
		out[fmt.Sprintf("node%d", i)] = true
	}
	return out
}

type policyOpt func(*nmstatev1.NodeNetworkConfigurationPolicy)

func maxUnavailable(v intstr.IntOrString) policyOpt {
	return func(p *nmstatev1.NodeNetworkConfigurationPolicy) { p.Spec.MaxUnavailable = &v }
}

func selector(k, v string) policyOpt {
	return func(p *nmstatev1.NodeNetworkConfigurationPolicy) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}

func generation(g int64) policyOpt {
	return func(p *nmstatev1.NodeNetworkConfigurationPolicy) { p.Generation = g }
}

func policy(opts ...policyOpt) *nmstatev1.NodeNetworkConfigurationPolicy {
	p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: "policy1", UID: "policy1-uid", Generation: 1, CreationTimestamp: metav1.NewTime(t0),
	}}
	for _, o := range opts {
		o(p)
	}
	return p
}

type enactmentOpt func(*v1beta1.NodeNetworkConfigurationEnactment)

// state sets the enactment's conditions the way the handler's setters do
// (docs/rollout.md), for generation gen.
func state(gen int64, s string) enactmentOpt {
	return func(e *v1beta1.NodeNetworkConfigurationEnactment) {
		e.Status.PolicyGeneration = gen
		T, F := corev1.ConditionTrue, corev1.ConditionFalse
		set := func(avail, failing, prog, pending, aborted corev1.ConditionStatus) {
			l := shared.ConditionList{}
			for i, st := range []corev1.ConditionStatus{avail, failing, prog, pending, aborted} {
				l.SetAt(t0, shared.NodeNetworkConfigurationEnactmentConditionTypes[i], st, "", "")
			}
			e.Status.Conditions = l
		}
		switch s {
		case "pending":
			set(F, F, F, T, F)
		case "progressing":
			set(corev1.ConditionUnknown, corev1.ConditionUnknown, T, F, F)
		case "retrying":
			set(F, T, T, F, F)
		case "failed":
			set(F, T, F, F, F)
		case "available":
			set(T, F, F, F, F)
		case "aborted":
			set(F, F, F, F, T)
		case "unknown":
			u := corev1.ConditionUnknown
			set(u, u, u, u, u)
		default:
			panic("unknown state " + s)
		}
	}
}

func permit(gen int64) enactmentOpt {
	return func(e *v1beta1.NodeNetworkConfigurationEnactment) {
		e.Annotations[PermitAnnotation] = strconv.FormatInt(gen, 10)
	}
}

func abort(gen int64) enactmentOpt {
	return func(e *v1beta1.NodeNetworkConfigurationEnactment) {
		e.Annotations[AbortAnnotation] = strconv.FormatInt(gen, 10)
	}
}

func createdAt(t time.Time) enactmentOpt {
	return func(e *v1beta1.NodeNetworkConfigurationEnactment) { e.CreationTimestamp = metav1.NewTime(t) }
}

func ownedByPolicy(uid types.UID) enactmentOpt {
	return func(e *v1beta1.NodeNetworkConfigurationEnactment) {
		e.OwnerReferences = append(e.OwnerReferences, metav1.OwnerReference{
			APIVersion: "nmstate.io/v1", Kind: "NodeNetworkConfigurationPolicy", Name: "policy1", UID: uid,
		})
	}
}

// enactment returns the enactment of policy1 on node.
func enactment(node string, opts ...enactmentOpt) v1beta1.NodeNetworkConfigurationEnactment {
	e := v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
		Name:              shared.EnactmentName(node, "policy1"),
		UID:               types.UID(node + "-uid"),
		CreationTimestamp: metav1.NewTime(t0),
		Labels:            map[string]string{shared.EnactmentPolicyLabel: "policy1", shared.EnactmentNodeLabel: node},
		Annotations:       map[string]string{},
	}}
	for _, o := range opts {
		o(&e)
	}
	return e
}

// enactments returns the enactments of node1..nodeN, each with opts.
func enactments(n int, opts ...enactmentOpt) []v1beta1.NodeNetworkConfigurationEnactment {
	var out []v1beta1.NodeNetworkConfigurationEnactment
	for i := 1; i <= n; i++ {
		out = append(out, enactment(fmt.Sprintf("node%d", i), opts...))
	}
	return out
}

func join(lists ...[]v1beta1.NodeNetworkConfigurationEnactment) []v1beta1.NodeNetworkConfigurationEnactment {
	var out []v1beta1.NodeNetworkConfigurationEnactment
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func one(e v1beta1.NodeNetworkConfigurationEnactment) []v1beta1.NodeNetworkConfigurationEnactment {
	return []v1beta1.NodeNetworkConfigurationEnactment{e}
}
