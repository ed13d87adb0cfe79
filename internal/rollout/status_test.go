package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
)

func TestPolicyStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name       string
		policy     *nmstatev1.NodeNetworkConfigurationPolicy
		nodes      []corev1.Node
		handlers   map[string]bool
		enactments []v1beta1.NodeNetworkConfigurationEnactment
		want       Status
	}{
		// The first cases are kubernetes-nmstate's own table.
		{
			name:  "all progressing",
			nodes: nodes(3), handlers: handlers(3),
			enactments: enactments(3, state(1, "progressing")),
			want:       Status{Progressing, "Policy is progressing 0/3 nodes finished"},
		},
		{
			name:  "all available",
			nodes: nodes(3), handlers: handlers(3),
			enactments: enactments(3, state(1, "available")),
			want:       Status{Available, "3/3 nodes successfully configured"},
		},
		{
			name:  "an enactment not created yet",
			nodes: nodes(4), handlers: handlers(4),
			enactments: enactments(3, state(1, "available")),
			want:       Status{Progressing, "Policy is progressing 3/4 nodes finished"},
		},
		{
			name:  "progressing and available",
			nodes: nodes(3), handlers: handlers(3),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "available")), enactment("node2", state(1, "progressing")), enactment("node3", state(1, "available")),
			},
			want: Status{Progressing, "Policy is progressing 2/3 nodes finished"},
		},
		{
			name:  "failed, progressing and available",
			nodes: nodes(4), handlers: handlers(4),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "available")), enactment("node2", state(1, "progressing")),
				enactment("node3", state(1, "failed")), enactment("node4", state(1, "available")),
			},
			want: Status{Degraded, "1/4 nodes failed to configure"},
		},
		{
			name:  "failed and available",
			nodes: nodes(3), handlers: handlers(3),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "failed")), enactment("node2", state(1, "failed")), enactment("node3", state(1, "available")),
			},
			want: Status{Degraded, "2/3 nodes failed to configure"},
		},
		{
			name:  "all failed",
			nodes: nodes(3), handlers: handlers(3),
			enactments: enactments(3, state(1, "failed")),
			want:       Status{Degraded, "3/3 nodes failed to configure"},
		},
		{
			name:   "no node matches the selector",
			policy: policy(selector("foo", "bar")),
			nodes:  nodes(3), handlers: handlers(3),
			want: Status{Ignored, "Policy does not match any node"},
		},
		{
			name:  "unknown enactments",
			nodes: nodes(3), handlers: handlers(3),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "unknown")), enactment("node2", state(1, "unknown")), enactment("node3", state(1, "available")),
			},
			want: Status{Progressing, "Policy is progressing 1/3 nodes finished"},
		},
		{
			name:  "node without a handler is not counted",
			nodes: nodes(4), handlers: handlers(3),
			enactments: enactments(3, state(1, "available")),
			want:       Status{Available, "3/3 nodes successfully configured"},
		},
		{
			name:  "NotReady node is ignored",
			nodes: append(nodes(3), node("node4", notReadyFor(time.Minute, now))), handlers: handlers(4),
			enactments: enactments(3, state(1, "available")),
			want:       Status{Available, "3/4 nodes successfully configured, 1 nodes ignored due to NotReady state"},
		},
		{
			name:  "pending on a NotReady node",
			nodes: append(nodes(3), node("node4", notReadyFor(time.Minute, now))), handlers: handlers(4),
			enactments: join(enactments(3, state(1, "available")), one(enactment("node4", state(1, "pending")))),
			want:       Status{Progressing, "Policy is progressing 3/3 nodes finished, 1 pending, 1 nodes ignored due to NotReady state"},
		},
		{
			name:  "pending while others finished",
			nodes: nodes(3), handlers: handlers(3),
			enactments: join(enactments(2, state(1, "available")), one(enactment("node3", state(1, "pending")))),
			want:       Status{Progressing, "Policy is progressing 2/3 nodes finished"},
		},
		// Our own rules.
		{
			name:  "aborted nodes are named",
			nodes: nodes(6), handlers: handlers(6),
			enactments: join(enactments(2, state(1, "failed")),
				[]v1beta1.NodeNetworkConfigurationEnactment{
					enactment("node3", state(1, "aborted")), enactment("node4", state(1, "aborted")),
					enactment("node5", state(1, "aborted")), enactment("node6", state(1, "aborted")),
				}),
			want: Status{Degraded, "2/6 nodes failed to configure, 4 nodes aborted configuration"},
		},
		{
			name:  "a retrying node already degrades the policy",
			nodes: nodes(3), handlers: handlers(3),
			enactments: join(one(enactment("node1", state(1, "retrying"))), []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node2", state(1, "pending")), enactment("node3", state(1, "pending")),
			}),
			want: Status{Degraded, "1/3 nodes failed to configure"},
		},
		{
			name:   "enactments of an older generation do not count",
			policy: policy(generation(2)),
			nodes:  nodes(3), handlers: handlers(3),
			enactments: join(enactments(2, state(1, "available")), one(enactment("node3", state(2, "available")))),
			want:       Status{Progressing, "Policy is progressing 1/3 nodes finished"},
		},
		{
			name:   "an old failure does not degrade the new generation",
			policy: policy(generation(2)),
			nodes:  nodes(2), handlers: handlers(2),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{enactment("node1", state(1, "failed")), enactment("node2", state(2, "available"))},
			want:       Status{Progressing, "Policy is progressing 1/2 nodes finished"},
		},
		{
			name:   "enactments of non-matching or deleted nodes do not count",
			policy: policy(selector("role", "worker")),
			nodes:  []corev1.Node{node("node1", label("role", "worker")), node("node2")}, handlers: handlers(2),
			enactments: []v1beta1.NodeNetworkConfigurationEnactment{
				enactment("node1", state(1, "available")), enactment("node2", state(1, "failed")), enactment("node9", state(1, "failed")),
			},
			want: Status{Available, "1/1 nodes successfully configured"},
		},
		{
			name:  "only NotReady nodes match",
			nodes: []corev1.Node{node("node1", notReadyFor(time.Minute, now))}, handlers: handlers(1),
			want: Status{Available, "0/1 nodes successfully configured, 1 nodes ignored due to NotReady state"},
		},
		{
			name:     "deleted policy",
			nodes:    nodes(1),
			handlers: handlers(1),
			want:     Status{Ignored, "Policy does not match any node"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy
			if p == nil && tt.name != "deleted policy" {
				p = policy()
			}
			got := PolicyStatus(Input{PolicyName: "policy1", Policy: p, Nodes: tt.nodes, Handlers: tt.handlers, Enactments: tt.enactments, Now: now, Config: DefaultConfig})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PolicyStatus (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	T, F, U := corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	const (
		prog = shared.NodeNetworkConfigurationPolicyConditionConfigurationProgressing
		ok   = shared.NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured
		fail = shared.NodeNetworkConfigurationPolicyConditionFailedToConfigure
	)
	cond := func(typ shared.ConditionType, st corev1.ConditionStatus, r shared.ConditionReason, msg string, hb, tr metav1.Time) shared.Condition {
		return shared.Condition{Type: typ, Status: st, Reason: r, Message: msg, LastHeartbeatTime: hb, LastTransitionTime: tr}
	}

	// From nothing: the four types in API order, all stamped now.
	l1, changed := Conditions(nil, Status{Progressing, "Policy is progressing 0/2 nodes finished"}, t0)
	want1 := shared.ConditionList{
		cond("Available", U, prog, "", at(0), at(0)),
		cond("Degraded", U, prog, "", at(0), at(0)),
		cond("Progressing", T, prog, "Policy is progressing 0/2 nodes finished", at(0), at(0)),
		cond("Ignored", F, prog, "", at(0), at(0)),
	}
	if diff := cmp.Diff(want1, l1); diff != "" || !changed {
		t.Fatalf("first Conditions changed=%v (-want +got):\n%s", changed, diff)
	}

	// The same status again: nothing to write, not even heartbeats.
	l2, changed := Conditions(l1, Status{Progressing, "Policy is progressing 0/2 nodes finished"}, t0.Add(time.Second))
	if diff := cmp.Diff(want1, l2); diff != "" || changed {
		t.Fatalf("repeated Conditions changed=%v (-want +got):\n%s", changed, diff)
	}

	// A new message with the same statuses: heartbeats move, transitions
	// stay.
	l3, changed := Conditions(l2, Status{Progressing, "Policy is progressing 1/2 nodes finished"}, t0.Add(2*time.Second))
	want3 := shared.ConditionList{
		cond("Available", U, prog, "", at(2*time.Second), at(0)),
		cond("Degraded", U, prog, "", at(2*time.Second), at(0)),
		cond("Progressing", T, prog, "Policy is progressing 1/2 nodes finished", at(2*time.Second), at(0)),
		cond("Ignored", F, prog, "", at(2*time.Second), at(0)),
	}
	if diff := cmp.Diff(want3, l3); diff != "" || !changed {
		t.Fatalf("new message changed=%v (-want +got):\n%s", changed, diff)
	}

	// Degraded: transitions move only where the status changed.
	l4, changed := Conditions(l3, Status{Degraded, "1/2 nodes failed to configure"}, t0.Add(3*time.Second))
	want4 := shared.ConditionList{
		cond("Available", F, fail, "", at(3*time.Second), at(3*time.Second)),
		cond("Degraded", T, fail, "1/2 nodes failed to configure", at(3*time.Second), at(3*time.Second)),
		cond("Progressing", F, prog, "", at(3*time.Second), at(3*time.Second)),
		cond("Ignored", F, fail, "", at(3*time.Second), at(0)),
	}
	if diff := cmp.Diff(want4, l4); diff != "" || !changed {
		t.Fatalf("degraded changed=%v (-want +got):\n%s", changed, diff)
	}
	// The input list was not modified.
	if diff := cmp.Diff(want3, l3); diff != "" {
		t.Fatalf("Conditions modified its input (-want +got):\n%s", diff)
	}

	l5, _ := Conditions(l4, Status{Available, "2/2 nodes successfully configured"}, t0.Add(4*time.Second))
	if c := l5.Find("Available"); c.Status != T || c.Reason != ok || c.Message != "2/2 nodes successfully configured" {
		t.Fatalf("available: %+v", c)
	}
	l6, _ := Conditions(l5, Status{Ignored, "Policy does not match any node"}, t0.Add(5*time.Second))
	if c := l6.Find("Ignored"); c.Status != T || c.Reason != shared.NodeNetworkConfigurationPolicyConditionConfigurationNoMatchingNode {
		t.Fatalf("ignored: %+v", c)
	}
}
