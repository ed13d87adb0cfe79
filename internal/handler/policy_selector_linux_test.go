package handler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

func (n *polNode) setLabel(t *testing.T, key, value string, remove bool) {
	t.Helper()
	node := &corev1.Node{}
	if err := n.c.Get(context.Background(), client.ObjectKey{Name: n.name}, node); err != nil {
		t.Fatal(err)
	}
	if remove {
		delete(node.Labels, key)
	} else {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[key] = value
	}
	if err := n.c.Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
}

func (n *polNode) waitGone(t *testing.T, policy string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for n.enactment(t, policy) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("enactment of %s not deleted within %v", policy, hangGuard)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPolicySelectorFollowsNodeLabels(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-sel", ns.Path, nil)
	n.start(t, nil)
	p := n.createPolicy(t, "pol-sel", staticAddr("eth1", "198.51.100.50/24"), map[string]string{"pol-sel": "yes"}, nil)

	// Not matching: no enactment. Matching after a label change: applied.
	n.setLabel(t, "pol-sel", "yes", false)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))

	// Unmatched: the enactment goes, the network stays (upstream).
	n.setLabel(t, "pol-sel", "", true)
	n.waitGone(t, p.Name)
	if !hasAddress(n.show(t), "eth1", "198.51.100.50") {
		t.Error("unmatching removed the configuration")
	}

	// Matching again: a new enactment asks again; the old permit went with
	// the old enactment.
	n.setLabel(t, "pol-sel", "yes", false)
	e := n.waitEnactment(t, p.Name, "Pending again", phaseIs(1, phasePending))
	if len(e.Annotations) != 0 {
		t.Errorf("annotations %v on a new enactment", e.Annotations)
	}

	// The policy deleted: its enactment goes.
	if err := n.c.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	n.waitGone(t, p.Name)
}

func TestPolicyInterruptedPermitReapplied(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-crash", ns.Path, map[string]string{"pol-crash": "yes"})
	stop := n.start(t, nil)
	p := n.createPolicy(t, "pol-crash", staticAddr("eth1", "198.51.100.60/24"), map[string]string{"pol-crash": "yes"}, nil)
	e := n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	stop()
	// The handler died mid-apply: Progressing under a permit.
	setEnactmentProgressing(&e.Status.Conditions, time.Now())
	if err := n.c.Status().Update(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	n.grant(t, p.Name, 1)
	n.start(t, nil)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	if !hasAddress(n.show(t), "eth1", "198.51.100.60") {
		t.Error("eth1 lacks 198.51.100.60")
	}
}

func TestPolicyStatusHasDefaultBridgeVLANs(t *testing.T) {
	ns := nstest.New(t)
	n := newPolNode(t, "pol-br", ns.Path, map[string]string{"pol-br": "yes"})
	n.start(t, nil)
	p := n.createPolicy(t, "pol-br", `interfaces:
- name: br1
  type: linux-bridge
  state: up
  bridge:
    port:
    - name: eth1
    - name: eth2
      vlan: {}
`, map[string]string{"pol-br": "yes"}, nil)
	e := n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	got := e.Status.DesiredState.String()
	want := `{"name":"eth1","vlan":{"mode":"trunk","trunk-tags":[{"id-range":{"max":4094,"min":2}}]}},{"name":"eth2","vlan":{}}`
	if !strings.Contains(got, want) {
		t.Errorf("desiredState %s\nlacks %s", got, want)
	}
}

// On a kernel that cannot filter VLANs on bridges (this machine's), the
// handler leaves the default trunk out, and the Available condition says
// which ports and why.
func TestPolicyWithoutDefaultTrunkSaysSo(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-notrunk", ns.Path, map[string]string{"pol-notrunk": "yes"})
	n.start(t, func(o *PolicyOptions) { o.NoDefaultBridgeVLANs = true })
	p := n.createPolicy(t, "pol-notrunk", `interfaces:
- name: br1
  type: linux-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth1
`, map[string]string{"pol-notrunk": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	e := n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	c := e.Status.Conditions.Find(shared.NodeNetworkConfigurationEnactmentConditionAvailable)
	for _, want := range []string{"successfully reconciled", "default VLAN trunk (2-4094) was not applied", "br1/eth1", "CONFIG_BRIDGE_VLAN_FILTERING"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Available message %q lacks %q", c.Message, want)
		}
	}
	if got := e.Status.DesiredState.String(); strings.Contains(got, "trunk") {
		t.Errorf("desiredState %s has a trunk", got)
	}
}

// An Available policy whose configuration was removed behind the
// handler's back is applied again at the next reconcile (here: a restart),
// under the permit it still holds.
func TestPolicyDriftReapplied(t *testing.T) {
	ns := nstest.New(t)
	peer := nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "eth1p")
	n := newPolNode(t, "pol-drift", ns.Path, map[string]string{"pol-drift": "yes"})
	stop := n.start(t, nil)
	p := n.createPolicy(t, "pol-drift", staticAddr("eth1", "198.51.100.90/24"), map[string]string{"pol-drift": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	stop()
	l, err := ns.Netlink.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := netlink.ParseAddr("198.51.100.90/24")
	if err := ns.Netlink.AddrDel(l, a); err != nil {
		t.Fatal(err)
	}
	n.start(t, nil)
	deadline := time.Now().Add(hangGuard)
	for !hasAddress(n.show(t), "eth1", "198.51.100.90") {
		if time.Now().After(deadline) {
			t.Fatal("drifted configuration not applied again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	if got := n.applies.Load(); got != 2 {
		t.Errorf("%d applies, want 2", got)
	}
}
