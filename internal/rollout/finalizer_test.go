package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/extension"
)

func finalized(p *nmstatev1.NodeNetworkConfigurationPolicy) {
	p.Finalizers = append(p.Finalizers, extension.RevertFinalizer)
}

func deleting(p *nmstatev1.NodeNetworkConfigurationPolicy) {
	p.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Minute)}
}

func reverted(status corev1.ConditionStatus) enactmentOpt {
	return func(e *v1beta1.NodeNetworkConfigurationEnactment) {
		e.Status.Conditions.SetAt(t0, extension.RevertedCondition, status, extension.RevertedReason, "")
	}
}

func TestFinalizer(t *testing.T) {
	revert := annotated(extension.RevertOnDeleteAnnotation, "true")
	tests := []struct {
		name       string
		policy     *nmstatev1.NodeNetworkConfigurationPolicy
		nodes      []corev1.Node
		enactments []v1beta1.NodeNetworkConfigurationEnactment
		want       FinalizerDecision
	}{
		{name: "annotated: added", policy: policy(revert), want: FinalizerDecision{Add: true}},
		{name: "annotated and finalized: nothing", policy: policy(revert, finalized)},
		{name: "annotation removed: removed", policy: policy(finalized), want: FinalizerDecision{Remove: true}},
		{name: "invalid annotation: none", policy: policy(annotated(extension.RevertOnDeleteAnnotation, "yes"), finalized), want: FinalizerDecision{Remove: true}},
		{name: "plain policy: nothing", policy: policy()},
		{name: "deleting, no node reported", policy: policy(revert, finalized, deleting),
			enactments: enactments(3, state(1, "available")),
			want:       FinalizerDecision{Waiting: []string{"node1", "node2", "node3"}}},
		{name: "deleting, one node left", policy: policy(revert, finalized, deleting),
			enactments: join(enactments(2, state(1, "available"), reverted(corev1.ConditionTrue)), one(enactment("node3", state(1, "available")))),
			want:       FinalizerDecision{Waiting: []string{"node3"}}},
		{name: "deleting, every node reported (one could not revert)", policy: policy(revert, finalized, deleting),
			enactments: join(enactments(2, state(1, "available"), reverted(corev1.ConditionTrue)), one(enactment("node3", reverted(corev1.ConditionFalse)))),
			want:       FinalizerDecision{Remove: true}},
		{name: "deleting, a NotReady node is not waited for", policy: policy(revert, finalized, deleting),
			nodes:      []corev1.Node{node("node1"), node("node2"), node("node3", notReadyFor(time.Minute, t0))},
			enactments: enactments(2, state(1, "available"), reverted(corev1.ConditionTrue)),
			want:       FinalizerDecision{Remove: true}},
		{name: "deleting without the finalizer: nothing", policy: policy(revert, deleting)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := tt.nodes
			if nodes == nil {
				nodes = nodes3()
			}
			got := Finalizer(Input{PolicyName: "policy1", Policy: tt.policy, Nodes: nodes, Handlers: handlers(3), Enactments: tt.enactments, Now: t0, Config: DefaultConfig})
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Finalizer (-want +got):\n%s", diff)
			}
		})
	}
}

func nodes3() []corev1.Node { return nodes(3) }
