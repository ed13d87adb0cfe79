package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
)

func TestCollect(t *testing.T) {
	now := t0.Add(time.Hour)
	g := func(node, reason string) Garbage {
		return Garbage{Name: node + ".policy1", UID: types.UID(node + "-uid"), Reason: reason}
	}
	recreated := policy()
	recreated.UID = "policy1-new-uid"
	recreated.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
	tests := []struct {
		name       string
		policy     *nmstatev1.NodeNetworkConfigurationPolicy
		nodes      []corev1.Node
		handlers   map[string]bool
		enactments []v1beta1.NodeNetworkConfigurationEnactment
		want       GCDecision
	}{
		{
			name:   "nothing to collect",
			policy: policy(), nodes: nodes(2), handlers: handlers(2),
			enactments: enactments(2, state(1, "available")),
		},
		{
			name:  "policy deleted",
			nodes: nodes(2), handlers: handlers(2),
			enactments: enactments(2, state(1, "available")),
			want:       GCDecision{Delete: []Garbage{g("node1", "policyDeleted"), g("node2", "policyDeleted")}},
		},
		{
			name:   "node deleted",
			policy: policy(), nodes: nodes(1), handlers: handlers(2),
			enactments: enactments(2, state(1, "available")),
			want:       GCDecision{Delete: []Garbage{g("node2", "nodeDeleted")}},
		},
		{
			name:   "node no longer matches",
			policy: policy(selector("role", "worker")),
			nodes:  []corev1.Node{node("node1", label("role", "worker")), node("node2")}, handlers: handlers(2),
			enactments: enactments(2, state(1, "available")),
			want:       GCDecision{Delete: []Garbage{g("node2", "nodeNotMatching")}},
		},
		{
			name:   "node without handler keeps its enactment",
			policy: policy(), nodes: nodes(2), handlers: handlers(1),
			enactments: enactments(2, state(1, "available")),
		},
		{
			name:   "enactment of an older policy of the same name",
			policy: recreated, nodes: nodes(2), handlers: handlers(2),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "available")),
				enactment("node2", createdAt(t0.Add(2*time.Minute)), ownedByPolicy("policy1-uid")),
			},
			want: GCDecision{Delete: []Garbage{g("node1", "olderThanPolicy"), g("node2", "ownedByOtherPolicy")}},
		},
		{
			name:   "owned by the current policy",
			policy: policy(), nodes: nodes(1), handlers: handlers(1),
			enactments: one(enactment("node1", ownedByPolicy("policy1-uid"))),
		},
		{
			name:   "young garbage waits for the grace period",
			policy: policy(), nodes: nodes(1), handlers: handlers(1),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node7", createdAt(now.Add(-4*time.Second))),
				enactment("node8", createdAt(now.Add(-7*time.Second))),
				enactment("node9", createdAt(now.Add(-10*time.Second))),
			},
			want: GCDecision{Delete: []Garbage{g("node9", "nodeDeleted")}, RequeueAfter: 3 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Collect(Input{PolicyName: "policy1", Policy: tt.policy, Nodes: tt.nodes, Handlers: tt.handlers, Enactments: tt.enactments, Now: now, Config: DefaultConfig})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Collect (-want +got):\n%s", diff)
			}
		})
	}
}
