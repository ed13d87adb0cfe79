package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmv1beta1 "github.com/knmstate/knmstate/api/v1beta1"
)

// TestPrinterColumns reads objects as the server-side Table kubectl prints
// and checks the columns show the condition that is True and its reason.
func TestPrinterColumns(t *testing.T) {
	c, _ := newClient(t)
	ctx := t.Context()

	p := policy("printer-policy")
	create(t, c, p)
	setPolicyStatus(t, c, p,
		condition(shared.NodeNetworkConfigurationPolicyConditionAvailable, corev1.ConditionTrue, shared.NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured),
		condition(shared.NodeNetworkConfigurationPolicyConditionDegraded, corev1.ConditionFalse, shared.NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured),
		condition(shared.NodeNetworkConfigurationPolicyConditionProgressing, corev1.ConditionFalse, shared.NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured),
	)

	nnce := &nmv1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
		Name:   shared.EnactmentName("node01", p.Name),
		Labels: map[string]string{shared.EnactmentPolicyLabel: p.Name, shared.EnactmentNodeLabel: "node01"},
	}}
	create(t, c, nnce)
	nnce.Status.Conditions.Set(shared.NodeNetworkConfigurationEnactmentConditionAvailable, corev1.ConditionFalse, "", "")
	nnce.Status.Conditions.Set(shared.NodeNetworkConfigurationEnactmentConditionFailing, corev1.ConditionTrue, shared.NodeNetworkConfigurationEnactmentConditionFailedToConfigure, "boom")
	if err := c.Status().Update(ctx, nnce); err != nil {
		t.Fatal(err)
	}

	nns := &nmv1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: "node01"}}
	create(t, c, nns)

	for _, tc := range []struct {
		name, path string
		want       map[string]string // expected cells; "*" = any non-empty text
	}{{
		name: "nncp v1",
		path: "/apis/nmstate.io/v1/nodenetworkconfigurationpolicies/" + p.Name,
		want: map[string]string{"Name": p.Name, "Status": "Available", "Reason": "SuccessfullyConfigured"},
	}, {
		name: "nncp v1beta1",
		path: "/apis/nmstate.io/v1beta1/nodenetworkconfigurationpolicies/" + p.Name,
		want: map[string]string{"Name": p.Name, "Status": "Available", "Reason": "SuccessfullyConfigured"},
	}, {
		name: "nnce",
		path: "/apis/nmstate.io/v1beta1/nodenetworkconfigurationenactments/" + nnce.Name,
		want: map[string]string{"Name": nnce.Name, "Status": "Failing", "Status Age": "*", "Reason": "FailedToConfigure"},
	}, {
		name: "nns",
		path: "/apis/nmstate.io/v1beta1/nodenetworkstates/" + nns.Name,
		want: map[string]string{"Name": nns.Name, "Age": "*"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			rows := table(t, tc.path)
			if len(rows) != 1 {
				t.Fatalf("table rows = %v, want one", rows)
			}
			got := rows[0]
			for col, want := range tc.want {
				if want == "*" && got[col] != "" && got[col] != "<nil>" {
					got[col] = "*"
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
		})
	}
}
