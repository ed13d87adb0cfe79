package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/extension"
)

func annotated(k, v string) policyOpt {
	return func(p *nmstatev1.NodeNetworkConfigurationPolicy) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

// planned sets an enactment's conditions as the handler's dry run does.
func planned(gen int64) enactmentOpt {
	return func(e *v1beta1.NodeNetworkConfigurationEnactment) {
		e.Status.PolicyGeneration = gen
		var l shared.ConditionList
		for _, t := range shared.NodeNetworkConfigurationEnactmentConditionTypes {
			l.SetAt(t0, t, corev1.ConditionFalse, extension.DryRunReason, "")
		}
		l.SetAt(t0, extension.DryRunCondition, corev1.ConditionTrue, extension.DryRunReason, "plan")
		e.Status.Conditions = l
	}
}

func TestPolicyStatusDryRun(t *testing.T) {
	now := t0.Add(time.Hour)
	dry := policy(annotated(extension.DryRunAnnotation, "true"))
	tests := []struct {
		name       string
		policy     *nmstatev1.NodeNetworkConfigurationPolicy
		enactments []v1beta1.NodeNetworkConfigurationEnactment
		want       Status
	}{{
		name: "every node planned", policy: dry,
		enactments: enactments(3, planned(1)),
		want:       Status{DryRun, "dry run: 3/3 nodes planned, nothing applied; each enactment's DryRun condition shows its plan"},
	}, {
		name: "one node still Available from before the dry run", policy: dry,
		enactments: join(enactments(2, planned(1)), one(enactment("node3", state(1, "available")))),
		want:       Status{Progressing, "dry run: 2/3 nodes planned"},
	}, {
		name: "a node that cannot render fails the dry run", policy: dry,
		enactments: join(enactments(2, planned(1)), one(enactment("node3", state(1, "failed")))),
		want:       Status{Degraded, "1/3 nodes failed to configure"},
	}, {
		name: "dry run turned off: planned nodes are not finished", policy: policy(annotated(extension.DryRunAnnotation, "false")),
		enactments: enactments(3, planned(1)),
		want:       Status{Progressing, "Policy is progressing 0/3 nodes finished"},
	}, {
		name: "an invalid value is no dry run", policy: policy(annotated(extension.DryRunAnnotation, "yes")),
		enactments: enactments(3, state(1, "available")),
		want:       Status{Available, "3/3 nodes successfully configured"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PolicyStatus(Input{PolicyName: "policy1", Policy: tt.policy, Nodes: nodes(3), Handlers: handlers(3), Enactments: tt.enactments, Now: now, Config: DefaultConfig})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PolicyStatus (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConditionsDryRun: the DryRun condition appears with the DryRun
// verdict and goes when the verdict changes; the four upstream conditions
// are all False meanwhile.
func TestConditionsDryRun(t *testing.T) {
	dry := Status{DryRun, "dry run: 3/3 nodes planned"}
	l, changed := Conditions(nil, dry, t0)
	if !changed {
		t.Fatal("first dry run status: no change")
	}
	c := l.Find(extension.DryRunCondition)
	if c == nil || c.Status != corev1.ConditionTrue || c.Message != dry.Message {
		t.Fatalf("DryRun condition = %+v", c)
	}
	for _, ty := range shared.NodeNetworkConfigurationPolicyConditionTypes {
		if c := l.Find(ty); c == nil || c.Status != corev1.ConditionFalse {
			t.Errorf("%s = %+v, want False", ty, c)
		}
	}
	if _, changed := Conditions(l, dry, t0.Add(time.Minute)); changed {
		t.Error("same dry run status again: changed")
	}
	l, changed = Conditions(l, Status{Available, "3/3 nodes successfully configured"}, t0.Add(time.Minute))
	if !changed {
		t.Fatal("dry run → Available: no change")
	}
	if c := l.Find(extension.DryRunCondition); c != nil {
		t.Errorf("DryRun condition left after the dry run: %+v", c)
	}
	if len(l) != len(shared.NodeNetworkConfigurationPolicyConditionTypes) {
		t.Errorf("conditions %+v, want upstream's four", l)
	}
}

// TestPermitsDryRun: a dry run grants no permit and aborts nobody, even
// with nodes asking and failures past the limit.
func TestPermitsDryRun(t *testing.T) {
	in := Input{PolicyName: "policy1", Policy: policy(annotated(extension.DryRunAnnotation, "true")), Nodes: nodes(3), Handlers: handlers(3),
		Enactments: join(enactments(2, state(1, "pending")), one(enactment("node3", state(1, "failed")))),
		Now:        t0, Config: DefaultConfig}
	got := Permits(in)
	if len(got.Grant) != 0 || len(got.Abort) != 0 || len(got.Revoke) != 0 {
		t.Errorf("Permits of a dry run = %+v, want nothing", got)
	}
	in.Policy.Annotations = nil
	if got := Permits(in); len(got.Grant)+len(got.Abort) == 0 {
		t.Errorf("Permits without the dry run = %+v, want grants or aborts (the fixture must exercise the decision)", got)
	}
}

func drifted(e *v1beta1.NodeNetworkConfigurationEnactment) {
	e.Status.Conditions.SetAt(t0, extension.DriftedCondition, corev1.ConditionTrue, extension.DriftedReason, "br1 is missing")
}

func TestPolicyDrift(t *testing.T) {
	in := Input{PolicyName: "policy1", Policy: policy(), Nodes: nodes(3), Handlers: handlers(3), Now: t0, Config: DefaultConfig,
		Enactments: join(
			one(enactment("node1", state(1, "available"))),
			one(enactment("node2", state(1, "available"), drifted)),
			// A drift report of an older generation does not count.
			one(enactment("node3", state(1, "progressing"), drifted)),
		)}
	d := PolicyDrift(in)
	if diff := cmp.Diff(Drift{Nodes: []string{"node2"}, Matching: 3}, d); diff != "" {
		t.Fatalf("PolicyDrift (-want +got):\n%s", diff)
	}
	base, _ := Conditions(nil, PolicyStatus(in), t0)
	l, changed := DriftCondition(base, d, t0)
	c := l.Find(extension.DriftedCondition)
	if !changed || c == nil || c.Status != corev1.ConditionTrue || c.Message != "1/3 nodes no longer show the policy: node2" {
		t.Fatalf("DriftCondition = %+v (changed %v)", c, changed)
	}
	if _, changed := DriftCondition(l, d, t0.Add(time.Minute)); changed {
		t.Error("same drift again: changed")
	}
	l, changed = DriftCondition(l, Drift{Matching: 3}, t0.Add(time.Minute))
	if !changed || l.Find(extension.DriftedCondition) != nil || len(l) != len(base) {
		t.Errorf("drift gone: %+v (changed %v), want upstream's conditions only", l, changed)
	}
	if _, changed := DriftCondition(base, Drift{Matching: 3}, t0); changed {
		t.Error("no drift on a policy that never drifted: changed")
	}
}
