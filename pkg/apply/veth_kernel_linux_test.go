package apply_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Regression tests for nmstate's veth/ethernet unification against the
// real kernel: the node's NIC eth1 is a veth (its peer lives in the switch
// namespace), as in the lab.

// planTouchesLink reports plan lines that delete or create the named link.
func planTouchesLink(p *nmstate.Plan, name string) []string {
	var out []string
	for _, op := range p.Ops {
		l := op.String()
		if strings.HasPrefix(l, "link delete "+name+" ") || strings.HasPrefix(l, "link add "+name+" ") {
			out = append(out, l)
		}
	}
	return out
}

func shownIface(t *testing.T, n *kernelNode, name string) *nmstate.Interface {
	t.Helper()
	s := n.show(t)
	for i := range s.Interfaces {
		if s.Interfaces[i].Name == name && !s.Interfaces[i].Type.IsUserSpace() {
			return &s.Interfaces[i]
		}
	}
	return nil
}

func TestKernelEthernetOverVethModifiedInPlace(t *testing.T) {
	n := newKernelNode(t)
	desired := decode(t, `
interfaces:
- name: eth1
  type: ethernet
  state: up
  mtu: 1400
  ipv4:
    enabled: true
    dhcp: false
    address:
    - {ip: 192.0.2.10, prefix-length: 24}
`)
	res, err := apply.Apply(context.Background(), n.backend, desired, n.options())
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if l := planTouchesLink(res.Plan, "eth1"); len(l) > 0 {
		t.Errorf("plan re-creates the NIC: %q", l)
	}
	e := shownIface(t, n, "eth1")
	if e == nil || e.Type != nmstate.TypeVeth || e.MTU == nil || *e.MTU != 1400 {
		t.Fatalf("eth1 after apply = %+v, want the veth with mtu 1400", e)
	}
	if e.Veth == nil || e.Veth.Peer != "sw-eth1" {
		t.Errorf("eth1 peer = %+v, want sw-eth1 (the original pair)", e.Veth)
	}
	assertFixedPoint(t, n, desired)
}

func TestKernelAdminDownVethPortComesUpAndRollsBackDown(t *testing.T) {
	n := newKernelNode(t)
	down := decode(t, `
interfaces:
- name: eth1
  type: ethernet
  state: down
`)
	res, err := apply.Apply(context.Background(), n.backend, down, n.options())
	if err != nil {
		t.Fatalf("Apply down: %v", err)
	}
	if l := planTouchesLink(res.Plan, "eth1"); len(l) > 0 {
		t.Errorf("down plan deletes or creates the NIC: %q", l)
	}
	if e := shownIface(t, n, "eth1"); e == nil || e.State != nmstate.StateDown {
		t.Fatalf("eth1 after down = %+v, want it present and down", e)
	}
	before := snapshot(t, n.show(t))

	o := n.options()
	o.NoCommit = true
	res, err = apply.Apply(context.Background(), n.backend, decode(t, `
interfaces:
- name: br0
  type: linux-bridge
  state: up
  bridge:
    options:
      stp: {enabled: false}
    port:
    - name: eth1
`), o)
	if err != nil {
		t.Fatalf("Apply bridge: %v", err)
	}
	if l := planTouchesLink(res.Plan, "eth1"); len(l) > 0 {
		t.Errorf("bridge plan re-creates the port: %q", l)
	}
	e := shownIface(t, n, "eth1")
	if e == nil || e.State != nmstate.StateUp || e.Controller == nil || *e.Controller != "br0" {
		t.Fatalf("eth1 after the bridge apply = %+v, want up in br0", e)
	}
	if _, err := apply.RollbackWithOptions(context.Background(), n.backend, n.stateDir, apply.RollbackOptions{VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if diff := cmp.Diff(before, snapshot(t, n.show(t))); diff != "" {
		t.Errorf("state after rollback differs from before (-before +after):\n%s", diff)
	}
}
