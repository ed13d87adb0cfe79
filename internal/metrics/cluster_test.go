package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
)

// conditions returns a condition list in the writers' order with the
// named types True and the others False.
func conditions(types []shared.ConditionType, trueTypes ...shared.ConditionType) shared.ConditionList {
	var l shared.ConditionList
	for _, t := range types {
		st := corev1.ConditionFalse
		for _, tt := range trueTypes {
			if t == tt {
				st = corev1.ConditionTrue
			}
		}
		l.Set(t, st, "", "")
	}
	return l
}

func policy(name string, trueTypes ...shared.ConditionType) nmstatev1.NodeNetworkConfigurationPolicy {
	p := nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if trueTypes != nil {
		p.Status.Conditions = conditions(shared.NodeNetworkConfigurationPolicyConditionTypes[:], trueTypes...)
	}
	return p
}

// enactment builds the enactment of policy p on node (no node label when
// node is ""), with features and the True condition types.
func enactment(node, p string, features []string, trueTypes ...shared.ConditionType) v1beta1.NodeNetworkConfigurationEnactment {
	e := v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
		Name:   shared.EnactmentName(node, p),
		Labels: map[string]string{shared.EnactmentPolicyLabel: p},
	}}
	if node != "" {
		e.Labels[shared.EnactmentNodeLabel] = node
	}
	e.Status.Features = features
	if trueTypes != nil {
		e.Status.Conditions = conditions(shared.NodeNetworkConfigurationEnactmentConditionTypes[:], trueTypes...)
	}
	return e
}

const (
	available   = shared.NodeNetworkConfigurationEnactmentConditionAvailable
	failing     = shared.NodeNetworkConfigurationEnactmentConditionFailing
	progressing = shared.NodeNetworkConfigurationEnactmentConditionProgressing
	pending     = shared.NodeNetworkConfigurationEnactmentConditionPending
	aborted     = shared.NodeNetworkConfigurationEnactmentConditionAborted
	degraded    = shared.NodeNetworkConfigurationPolicyConditionDegraded
	ignored     = shared.NodeNetworkConfigurationPolicyConditionIgnored
)

func s(v float64, labels ...string) Sample { return Sample{Labels: labels, Value: v} }

func TestFeaturesApplied(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []v1beta1.NodeNetworkConfigurationEnactment
		want []Sample
	}{
		{"none", nil, nil},
		{"no features", []v1beta1.NodeNetworkConfigurationEnactment{enactment("n1", "p", nil, available)}, nil},
		{
			"presence, not a count",
			[]v1beta1.NodeNetworkConfigurationEnactment{
				enactment("n1", "p", []string{"dhcpv4-custom-hostname", "ovs-bond"}, available),
				enactment("n2", "p", []string{"dhcpv4-custom-hostname"}, failing),
				enactment("n1", "q", []string{"dhcpv4-custom-hostname", ""}),
			},
			[]Sample{s(1, "dhcpv4-custom-hostname"), s(1, "ovs-bond")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, FeaturesAppliedSamples(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPoliciesStatus(t *testing.T) {
	zero := []Sample{s(0, "Available"), s(0, "Degraded"), s(0, "Ignored"), s(0, "Progressing")}
	for _, tc := range []struct {
		name string
		in   []nmstatev1.NodeNetworkConfigurationPolicy
		want []Sample
	}{
		{"no policies: all four at 0", nil, zero},
		{"no status yet: counted nowhere", []nmstatev1.NodeNetworkConfigurationPolicy{policy("p")}, zero},
		{
			"first True condition",
			[]nmstatev1.NodeNetworkConfigurationPolicy{
				policy("a", available), policy("b", available), policy("c", degraded),
				policy("d", ignored), policy("e", progressing),
				// Two True: the first in list order counts (upstream).
				policy("f", degraded, progressing),
			},
			[]Sample{s(2, "Available"), s(2, "Degraded"), s(1, "Ignored"), s(1, "Progressing")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PoliciesStatusSamples(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnactmentsStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []v1beta1.NodeNetworkConfigurationEnactment
		want []Sample
	}{
		{"none: no series", nil, nil},
		{"no node label: not counted", []v1beta1.NodeNetworkConfigurationEnactment{enactment("", "p", nil, available)}, nil},
		{
			"per node, all five types once the node has an enactment",
			[]v1beta1.NodeNetworkConfigurationEnactment{
				enactment("n1", "p", nil, available),
				enactment("n1", "q", nil, available),
				// Retrying: Failing and Progressing True, Failing first.
				enactment("n1", "r", nil, failing, progressing),
				enactment("n2", "p", nil, pending),
				enactment("n2", "q", nil, aborted),
				// A new enactment: no True condition, the node still shows.
				enactment("n3", "p", nil),
			},
			[]Sample{
				s(0, "n1", "Aborted"), s(2, "n1", "Available"), s(1, "n1", "Failing"), s(0, "n1", "Pending"), s(0, "n1", "Progressing"),
				s(1, "n2", "Aborted"), s(0, "n2", "Available"), s(0, "n2", "Failing"), s(1, "n2", "Pending"), s(0, "n2", "Progressing"),
				s(0, "n3", "Aborted"), s(0, "n3", "Available"), s(0, "n3", "Failing"), s(0, "n3", "Pending"), s(0, "n3", "Progressing"),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, EnactmentsStatusSamples(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
