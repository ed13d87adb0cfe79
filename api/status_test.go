package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmv1beta1 "github.com/knmstate/knmstate/api/v1beta1"
)

func mustState(t *testing.T, doc string) shared.State {
	t.Helper()
	s, err := shared.NewState([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStatusRoundTrip writes every status field of enactments and node
// network states through the status subresource and reads them back: the
// schema must keep them all, free-form states included.
func TestStatusRoundTrip(t *testing.T) {
	c, _ := newClient(t)
	ctx := t.Context()
	now := metav1.Now()
	now.Time = now.Truncate(1e9) // the wire format has seconds

	nnce := &nmv1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentName("node02", "status-policy")}}
	create(t, c, nnce)
	var conds shared.ConditionList
	for _, ty := range shared.NodeNetworkConfigurationEnactmentConditionTypes {
		conds.SetAt(now.Time, ty, corev1.ConditionUnknown, "", "")
	}
	conds.SetAt(now.Time, shared.NodeNetworkConfigurationEnactmentConditionAvailable, corev1.ConditionTrue, shared.NodeNetworkConfigurationEnactmentConditionSuccessfullyConfigured, "successfully reconciled")
	wantNNCE := shared.NodeNetworkConfigurationEnactmentStatus{
		DesiredState:         mustState(t, bridgeState),
		DesiredStateMetaInfo: shared.NodeNetworkConfigurationEnactmentMetaInfo{Version: "2", TimeStamp: now},
		CapturedStates: map[string]shared.NodeNetworkConfigurationEnactmentCapturedState{
			"gw": {State: mustState(t, "routes:\n  running:\n  - destination: 0.0.0.0/0\n    next-hop-interface: eth1\n"), MetaInfo: shared.NodeNetworkConfigurationEnactmentMetaInfo{Version: "1", TimeStamp: now}},
		},
		PolicyGeneration: 3,
		Conditions:       conds,
		Features:         []string{"static_dns_name_server"},
		RetryCount:       map[string]int{"3": 2},
	}
	nnce.Status = wantNNCE
	if err := c.Status().Update(ctx, nnce); err != nil {
		t.Fatal(err)
	}
	gotNNCE := &nmv1beta1.NodeNetworkConfigurationEnactment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(nnce), gotNNCE); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantNNCE, gotNNCE.Status, stateOpt); diff != "" {
		t.Errorf("enactment status (-want +got):\n%s", diff)
	}

	nns := &nmv1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: "node02"}}
	create(t, c, nns)
	wantNNS := shared.NodeNetworkStateStatus{
		CurrentState:              mustState(t, "interfaces:\n- name: lo\n  type: loopback\n  state: up\n  mtu: 65536\n"),
		LastSuccessfulUpdateTime:  now,
		HostNetworkManagerVersion: "none",
		HandlerNmstateVersion:     "knmstate 0.1.0",
	}
	nns.Status = wantNNS
	if err := c.Status().Update(ctx, nns); err != nil {
		t.Fatal(err)
	}
	gotNNS := &nmv1beta1.NodeNetworkState{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(nns), gotNNS); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantNNS, gotNNS.Status, stateOpt); diff != "" {
		t.Errorf("node network state status (-want +got):\n%s", diff)
	}

	// The main resource ignores status: only the subresource writes it.
	gotNNS.Status.HandlerNmstateVersion = "changed"
	gotNNS.Labels = map[string]string{shared.ForceNNSRefreshLabel: "1"}
	if err := c.Update(ctx, gotNNS); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(nns), gotNNS); err != nil {
		t.Fatal(err)
	}
	if gotNNS.Status.HandlerNmstateVersion != wantNNS.HandlerNmstateVersion {
		t.Errorf("update of the main resource changed status to %q", gotNNS.Status.HandlerNmstateVersion)
	}
}

// TestEnactmentKeepsUnknownFields checks the enactment root preserves
// fields it does not declare (as kubernetes-nmstate's does), while a policy
// prunes them.
func TestEnactmentKeepsUnknownFields(t *testing.T) {
	c, _ := newClient(t)
	ctx := t.Context()
	for _, tc := range []struct {
		kind, apiVersion string
		wantKept         bool
	}{
		{"NodeNetworkConfigurationEnactment", "nmstate.io/v1beta1", true},
		{"NodeNetworkConfigurationPolicy", "nmstate.io/v1", false},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": tc.apiVersion,
				"kind":       tc.kind,
				"metadata":   map[string]any{"name": "unknown-fields"},
				"extra":      map[string]any{"note": "kept?"},
			}}
			create(t, c, u)
			got := &unstructured.Unstructured{}
			got.SetAPIVersion(tc.apiVersion)
			got.SetKind(tc.kind)
			if err := c.Get(ctx, client.ObjectKey{Name: "unknown-fields"}, got); err != nil {
				t.Fatal(err)
			}
			_, kept := got.Object["extra"]
			if kept != tc.wantKept {
				t.Errorf("unknown root field kept = %v, want %v", kept, tc.wantKept)
			}
		})
	}
}
