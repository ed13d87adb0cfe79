package api

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmv1 "github.com/knmstate/knmstate/api/v1"
)

const (
	msgName       = "must be no more than 63 characters or match label value format"
	msgInProgress = " is still in progress"
	msgCapture    = "invalid policy operation: capture field cannot be modified"
	msgSelector   = "nodeSelector values must be valid label values"
)

func TestAdmissionOnCreate(t *testing.T) {
	c, _ := newClient(t)
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name    string
		obj     client.Object
		wantErr string
	}{
		{"name of 63 characters", policy(long[:63]), ""},
		{"name of 64 characters", policy(long), `invalid policy name: "` + long + `": ` + msgName},
		{"v1beta1 name of 64 characters", policyV1beta1(long), msgName},
		{"dotted name", policy("br1.eth1"), ""},
		{"valid selector values", policy("sel-ok", nodeSelector("kubernetes.io/hostname", "node01", "node-role.kubernetes.io/worker", "")), ""},
		{"selector value with a space", policy("sel-bad-space", nodeSelector("role", "not valid")), msgSelector},
		{"selector value with a slash", policy("sel-bad-slash", nodeSelector("role", "a/b")), msgSelector},
		{"selector value too long", policy("sel-bad-long", nodeSelector("role", long)), msgSelector},
		{"v1beta1 bad selector value", policyV1beta1("sel-bad-beta", nodeSelector("role", "-x")), msgSelector},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(t.Context(), tc.obj)
			if err == nil {
				t.Cleanup(func() { _ = c.Delete(t.Context(), tc.obj) })
			}
			checkErr(t, err, tc.wantErr)
			if tc.wantErr != "" && !apierrors.IsInvalid(err) {
				t.Errorf("reason = %v, want Invalid", apierrors.ReasonForError(err))
			}
		})
	}
}

// settled is the status the controller writes once a policy has been
// applied: a spec change is allowed again.
func settled() []shared.Condition {
	return []shared.Condition{
		condition(shared.NodeNetworkConfigurationPolicyConditionAvailable, corev1.ConditionTrue, shared.NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured),
		condition(shared.NodeNetworkConfigurationPolicyConditionProgressing, corev1.ConditionFalse, shared.NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured),
	}
}

// progressing is the status while nodes apply the policy.
func progressing() []shared.Condition {
	return []shared.Condition{
		condition(shared.NodeNetworkConfigurationPolicyConditionAvailable, corev1.ConditionUnknown, shared.NodeNetworkConfigurationPolicyConditionConfigurationProgressing),
		condition(shared.NodeNetworkConfigurationPolicyConditionProgressing, corev1.ConditionTrue, shared.NodeNetworkConfigurationPolicyConditionConfigurationProgressing),
	}
}

func TestAdmissionOnUpdate(t *testing.T) {
	const name = "update-policy"
	base := []policyOpt{capture("gw", `routes.running.destination=="0.0.0.0/0"`), nodeSelector("role", "edge")}
	for _, tc := range []struct {
		name    string
		status  []shared.Condition // old status; nil = never written
		change  func(*nmv1.NodeNetworkConfigurationPolicy)
		wantErr string
	}{
		// Rule: spec changes wait for the previous change to settle.
		{"spec change, no status yet", nil, setDesired(`{"interfaces":[]}`), "policy " + name + msgInProgress},
		{"spec change while progressing", progressing(), setDesired(`{"interfaces":[]}`), "policy " + name + msgInProgress},
		{"spec change, Available without reason", []shared.Condition{condition("Available", corev1.ConditionTrue, "")}, setDesired(`{"interfaces":[]}`), msgInProgress},
		{"spec change once settled", settled(), setDesired(`{"interfaces":[]}`), ""},
		{"spec change after a failure", []shared.Condition{
			condition("Available", corev1.ConditionFalse, shared.NodeNetworkConfigurationPolicyConditionFailedToConfigure),
			condition("Degraded", corev1.ConditionTrue, shared.NodeNetworkConfigurationPolicyConditionFailedToConfigure),
		}, setDesired(`{"interfaces":[]}`), ""},
		{"selector change once settled", settled(), func(p *nmv1.NodeNetworkConfigurationPolicy) { p.Spec.NodeSelector["role"] = "core" }, ""},

		// Rule: capture is immutable.
		{"capture edited", settled(), func(p *nmv1.NodeNetworkConfigurationPolicy) { p.Spec.Capture["gw"] = "routes.running" }, msgCapture},
		{"capture entry added", settled(), func(p *nmv1.NodeNetworkConfigurationPolicy) { p.Spec.Capture["dns"] = "dns-resolver.running" }, msgCapture},
		{"capture removed", settled(), func(p *nmv1.NodeNetworkConfigurationPolicy) { p.Spec.Capture = nil }, msgCapture},

		// Rule: selector values are label values, on update too.
		{"selector value made invalid", settled(), func(p *nmv1.NodeNetworkConfigurationPolicy) { p.Spec.NodeSelector["role"] = "no good" }, msgSelector},

		// Metadata-only updates pass whatever the status.
		{"labels while progressing", progressing(), func(p *nmv1.NodeNetworkConfigurationPolicy) { p.Labels = map[string]string{"team": "net"} }, ""},
		{"annotations, no status yet", nil, func(p *nmv1.NodeNetworkConfigurationPolicy) {
			p.Annotations = map[string]string{shared.WebhookMutatingTimestampAnnotation: "1"}
		}, ""},
		{"finalizers while progressing", progressing(), func(p *nmv1.NodeNetworkConfigurationPolicy) { p.Finalizers = []string{"example.com/keep"} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newClient(t)
			ctx := t.Context()
			p := policy(name, base...)
			create(t, c, p)
			t.Cleanup(func() {
				// Drop test finalizers so the deletion in create's cleanup completes.
				_ = c.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			})
			if tc.status != nil {
				setPolicyStatus(t, c, p, tc.status...)
			}
			tc.change(p)
			err := c.Update(ctx, p)
			checkErr(t, err, tc.wantErr)
			switch {
			case strings.Contains(tc.wantErr, msgInProgress) && !apierrors.IsForbidden(err):
				t.Errorf("reason = %v, want Forbidden", apierrors.ReasonForError(err))
			case tc.wantErr != "" && !strings.Contains(tc.wantErr, msgInProgress) && !apierrors.IsInvalid(err):
				t.Errorf("reason = %v, want Invalid", apierrors.ReasonForError(err))
			}
		})
	}
}

func setDesired(doc string) func(*nmv1.NodeNetworkConfigurationPolicy) {
	return func(p *nmv1.NodeNetworkConfigurationPolicy) { p.Spec.DesiredState = shared.State{Raw: []byte(doc)} }
}

// TestAdmissionNeverBlocksStatus checks status writes pass while a policy
// is progressing and whatever its spec, and that a merge patch of
// metadata passes too.
func TestAdmissionNeverBlocksStatus(t *testing.T) {
	c, _ := newClient(t)
	ctx := t.Context()
	p := policy("status-policy", capture("gw", "routes.running"))
	create(t, c, p)
	setPolicyStatus(t, c, p, progressing()...)
	// Progressing -> progressing again (heartbeat) -> failed -> settled.
	for i, conds := range [][]shared.Condition{progressing(), {condition("Degraded", corev1.ConditionTrue, "FailedToConfigure")}, settled()} {
		setPolicyStatus(t, c, p, conds...)
		if i == 0 {
			patch := []byte(`{"metadata":{"labels":{"touched":"yes"},"annotations":{"note":"x"}}}`)
			if err := c.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatalf("metadata merge patch while progressing: %v", err)
			}
		}
	}
	got := &nmv1.NodeNetworkConfigurationPolicy{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	if a := got.Status.Conditions.Find("Available"); a == nil || a.Status != corev1.ConditionTrue {
		t.Errorf("final status = %+v, want Available True", got.Status.Conditions)
	}
}
