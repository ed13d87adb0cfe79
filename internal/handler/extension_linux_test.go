package handler

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// setAnnotation sets (or, with value "", removes) one annotation of a
// policy with a merge patch.
func (n *polNode) setAnnotation(t testing.TB, p *nmstatev1.NodeNetworkConfigurationPolicy, key, value string) {
	t.Helper()
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.c.Patch(context.Background(), p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("annotating policy %s: %v", p.Name, err)
	}
}

func dryRunReported(e *enactment) bool {
	c := e.Status.Conditions.Find(extension.DryRunCondition)
	return c != nil && c.Status == condTrue
}

func stateYAML(t testing.TB, s *nmstate.State) string {
	t.Helper()
	y, err := nmstate.EncodeYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(y)
}

// A dry run reports the plan against the live state and changes nothing,
// without asking for a permit; removing the annotation applies it.
func TestPolicyDryRun(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-dry", ns.Path, map[string]string{"pol-dry": "yes"})
	n.start(t, nil)
	before := stateYAML(t, n.show(t))

	st, err := shared.NewState([]byte(staticAddr("eth1", "198.51.100.20/24")))
	if err != nil {
		t.Fatal(err)
	}
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	p.Name = "pol-dry"
	p.Annotations = map[string]string{extension.DryRunAnnotation: "true"}
	p.Spec = shared.NodeNetworkConfigurationPolicySpec{NodeSelector: map[string]string{"pol-dry": "yes"}, DesiredState: st}
	t.Cleanup(func() { _ = n.c.Delete(context.Background(), p) })
	if err := n.c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	e := n.waitEnactment(t, p.Name, "DryRun", dryRunReported)
	msg := condition(e, extension.DryRunCondition).Message
	t.Logf("dry run message:\n%s", msg)
	if !strings.HasPrefix(msg, "nothing was applied; the plan against the node's live state:\n") || !strings.Contains(msg, "198.51.100.20/24") {
		t.Errorf("DryRun message %q, want the plan with the address", msg)
	}
	for _, ty := range shared.NodeNetworkConfigurationEnactmentConditionTypes {
		if c := condition(e, ty); c.Status != condFalse || c.Reason != extension.DryRunReason {
			t.Errorf("condition %s = %+v, want False/%s", ty, c, extension.DryRunReason)
		}
	}
	if e.Status.DesiredState.IsZero() {
		t.Error("the dry run did not report the rendered desired state")
	}
	if _, ok := e.Annotations[rollout.PermitAnnotation]; ok {
		t.Error("a dry run holds a permit")
	}
	if got := stateYAML(t, n.show(t)); got != before {
		t.Errorf("the dry run changed the node (-before +after):\n%s", cmp.Diff(before, got))
	}
	if n.applies.Load() != 0 {
		t.Errorf("%d applies during the dry run", n.applies.Load())
	}

	// Removing the annotation: the node asks for a permit and applies.
	n.setAnnotation(t, p, extension.DryRunAnnotation, "")
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	e = n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	if dryRunReported(e) || e.Status.Conditions.Find(extension.DryRunCondition) != nil {
		t.Errorf("DryRun condition left after the apply: %+v", e.Status.Conditions)
	}
	if !hasAddress(n.show(t), "eth1", "198.51.100.20") {
		t.Error("eth1 lacks the address after the real apply")
	}

	// A dry run of the applied policy: nothing left to do.
	n.setAnnotation(t, p, extension.DryRunAnnotation, "true")
	e = n.waitEnactment(t, p.Name, "DryRun again", dryRunReported)
	if msg := condition(e, extension.DryRunCondition).Message; !strings.Contains(msg, "the plan is empty") {
		t.Errorf("DryRun message of an applied policy %q, want an empty plan", msg)
	}
	if n.applies.Load() != 1 {
		t.Errorf("%d applies, want 1", n.applies.Load())
	}
}

// An annotation the handler cannot read fails the enactment, naming the
// annotation, and applies nothing (the webhook may not be installed).
func TestPolicyInvalidAnnotationFails(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-badann", ns.Path, map[string]string{"pol-badann": "yes"})
	n.start(t, nil)
	p := n.createPolicy(t, "pol-badann", staticAddr("eth1", "198.51.100.21/24"), map[string]string{"pol-badann": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.setAnnotation(t, p, extension.ProbesAnnotation, "dns=maybe")
	e := n.waitEnactment(t, p.Name, "Failed", phaseIs(1, phaseFailed))
	want := `metadata.annotations[knmstate.io/probes]: Invalid value: "dns=maybe": dns must be "on" or "off"`
	if msg := condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing).Message; msg != want {
		t.Errorf("Failing message %q, want %q", msg, want)
	}
	if n.applies.Load() != 0 || hasAddress(n.show(t), "eth1", "198.51.100.21") {
		t.Error("a policy with an invalid annotation was applied")
	}
}

// The same policy as TestPolicyWrongNameServerRolledBack (which rolls
// back on the DNS probe) with the DNS probe turned off commits.
func TestPolicyDNSProbeOff(t *testing.T) {
	n := probeNode(t, "pol-dnsoff")
	m := newTestMetrics(t)
	n.start(t, func(o *PolicyOptions) { withProbes(o); o.Metrics = m.Handler })
	before := n.show(t)
	if before.DNSResolver == nil || before.DNSResolver.Running == nil || len(before.DNSResolver.Running.Server) == 0 {
		t.Fatalf("setup: no name servers reported: %+v", before.DNSResolver)
	}
	st, err := shared.NewState([]byte("dns-resolver:\n  config:\n    server:\n    - 192.0.2.77\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	p.Name = "pol-dnsoff"
	p.Annotations = map[string]string{extension.ProbesAnnotation: "dns=off"}
	p.Spec = shared.NodeNetworkConfigurationPolicySpec{NodeSelector: map[string]string{"pol-dnsoff": "yes"}, DesiredState: st}
	t.Cleanup(func() { _ = n.c.Delete(context.Background(), p) })
	if err := n.c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	after := n.show(t)
	if diff := cmp.Diff([]netip.Addr{netip.MustParseAddr("192.0.2.77")}, after.DNSResolver.Running.Server, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("name servers (-want +got):\n%s", diff)
	}
	if got := m.value(t, "knmstate_handler_rollbacks_total", "node", n.name); got != 0 {
		t.Errorf("%v rollbacks, want 0", got)
	}
}

// ping.target replaces the default gateway as the ping probe's target:
// the policy of TestPolicyUnreachableGatewayRolledBack (a default route
// through nobody) commits when the probe pings the on-link 192.0.2.1.
func TestPolicyPingTarget(t *testing.T) {
	n := probeNode(t, "pol-pingtgt")
	n.start(t, withProbes)
	st, err := shared.NewState([]byte(`routes:
  config:
  - destination: 0.0.0.0/0
    state: absent
  - destination: 0.0.0.0/0
    next-hop-address: 192.0.2.77
    next-hop-interface: eth0
`))
	if err != nil {
		t.Fatal(err)
	}
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	p.Name = "pol-pingtgt"
	p.Annotations = map[string]string{extension.ProbesAnnotation: "ping.target=192.0.2.1"}
	p.Spec = shared.NodeNetworkConfigurationPolicySpec{NodeSelector: map[string]string{"pol-pingtgt": "yes"}, DesiredState: st}
	t.Cleanup(func() { _ = n.c.Delete(context.Background(), p) })
	if err := n.c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	found := false
	for _, r := range n.show(t).Routes.Running {
		found = found || r.NextHopAddress != nil && r.NextHopAddress.String() == "192.0.2.77"
	}
	if !found {
		t.Error("the default route through 192.0.2.77 was not kept")
	}
}

// Per-node values: {{ node.labels.KEY }} and {{ node.name }} are filled
// with the node's own; a label the node lacks fails the enactment at its
// path and applies nothing.
func TestPolicyNodeValues(t *testing.T) {
	ns := nstest.New(t)
	n := newPolNode(t, "pol-nodeval", ns.Path, map[string]string{"pol-nodeval": "yes", "rack": "r7"})
	n.start(t, nil)
	p := n.createPolicy(t, "pol-nodeval", `interfaces:
- name: br-{{ node.labels.rack }}
  type: linux-bridge
  state: up
  description: "{{ node.name }}"
  ipv4: {enabled: false}
  ipv6: {enabled: false}
  bridge: {options: {stp: {enabled: false}}, port: []}
`, map[string]string{"pol-nodeval": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	br := n.show(t).Find("br-r7")
	if len(br) != 1 || br[0].Description == nil || *br[0].Description != "pol-nodeval" {
		t.Fatalf("br-r7: %+v, want the bridge described as the node", br)
	}

	q := n.createPolicy(t, "pol-nodeval-zone", `interfaces:
- {name: "br-{{ node.labels.zone }}", type: linux-bridge, state: up}
`, map[string]string{"pol-nodeval": "yes"}, nil)
	e := n.waitEnactment(t, q.Name, "Failed", phaseIs(1, phaseFailed))
	want := `failure generating desiredState and capturedStates: desiredState.interfaces[0].name: "br-{{ node.labels.zone }}": node pol-nodeval has no label "zone"`
	if msg := condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing).Message; msg != want {
		t.Errorf("Failing message %q, want %q", msg, want)
	}
	if n.applies.Load() != 1 {
		t.Errorf("%d applies, want 1", n.applies.Load())
	}
}

// The address pool on the node's side: without its address in the
// controller's record the node waits; with it, the address is added to
// the pool's interface, and stays after a restart of the handler.
func TestPolicyAddressPool(t *testing.T) {
	ns := nstest.New(t)
	n := newPolNode(t, "pol-pool", ns.Path, map[string]string{"pol-pool": "yes"})
	stop := n.start(t, nil)
	st, err := shared.NewState([]byte(`interfaces:
- name: br-pool
  type: linux-bridge
  state: up
  ipv4: {enabled: true, dhcp: false}
  ipv6: {enabled: false}
  bridge: {options: {stp: {enabled: false}}, port: []}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	p.Name = "pol-pool"
	p.Annotations = map[string]string{extension.PoolAnnotation: "198.51.100.64/26 br-pool"}
	p.Spec = shared.NodeNetworkConfigurationPolicySpec{NodeSelector: map[string]string{"pol-pool": "yes"}, DesiredState: st}
	t.Cleanup(func() { _ = n.c.Delete(context.Background(), p) })
	if err := n.c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	e := n.waitEnactment(t, p.Name, "Waiting for an address", waiting)
	if c := condition(e, extension.WaitingCondition); c.Reason != extension.WaitingPoolReason {
		t.Errorf("Waiting condition %+v, want reason %s", c, extension.WaitingPoolReason)
	}
	// As the controller: the record.
	n.setAnnotation(t, p, extension.PoolAddressesAnnotation, "other=198.51.100.65,pol-pool=198.51.100.70")
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	if !hasAddress(n.show(t), "br-pool", "198.51.100.70") {
		t.Fatalf("br-pool lacks the node's pool address: %+v", n.show(t).Find("br-pool"))
	}
	stop()
	n.start(t, nil)
	e = n.waitEnactment(t, p.Name, "Available after the restart", phaseIs(1, phaseAvailable))
	if !hasAddress(n.show(t), "br-pool", "198.51.100.70") || hasAddress(n.show(t), "br-pool", "198.51.100.65") {
		t.Errorf("br-pool after the restart: %+v", n.show(t).Find("br-pool"))
	}
	if n.applies.Load() != 1 {
		t.Errorf("%d applies, want 1 (the restart finds the policy applied)", n.applies.Load())
	}
}
