package nmstate_test

import (
	"strings"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// A bridge port with `vlan: {}` asks for no VLAN filtering (upstream's way to
// opt a port out of kubernetes-nmstate's default trunk): the plan sets no
// port VLAN, and a current port without VLAN configuration satisfies it.
func TestEmptyPortVLAN(t *testing.T) {
	current, err := nmstate.Decode([]byte(`
interfaces:
- name: eth1
  type: veth
  state: up
  controller: br1
  veth: {peer: eth1p}
- name: br1
  type: linux-bridge
  state: up
  bridge:
    port:
    - name: eth1
`))
	if err != nil {
		t.Fatal(err)
	}
	desired, err := nmstate.Decode([]byte(`
interfaces:
- name: br1
  type: linux-bridge
  state: up
  bridge:
    port:
    - name: eth1
      vlan: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("empty port vlan plans no vlan change", func(t *testing.T) {
		m, err := nmstate.Merge(desired, current)
		if err != nil {
			t.Fatal(err)
		}
		p, err := nmstate.PlanChanges(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range p.Ops {
			if _, ok := op.(nmstate.BridgeVLANSet); ok {
				t.Errorf("plan has %q, want no port VLAN operation", op)
			}
		}
	})
	t.Run("empty desired section matches an unreported one", func(t *testing.T) {
		if err := nmstate.Verify(desired, current); err != nil {
			t.Errorf("Verify = %v, want nil", err)
		}
	})
	t.Run("non-empty port vlan still differs", func(t *testing.T) {
		withTag, err := nmstate.Decode([]byte(`
interfaces:
- name: br1
  type: linux-bridge
  bridge:
    port:
    - name: eth1
      vlan: {mode: access, tag: 10}
`))
		if err != nil {
			t.Fatal(err)
		}
		if err := nmstate.Verify(withTag, current); err == nil {
			t.Error("Verify = nil, want a mismatch for the missing access VLAN")
		}
	})
	t.Run("reset of a filtered port", func(t *testing.T) {
		trunk, err := nmstate.Decode([]byte(`
interfaces:
- name: eth1
  type: veth
  state: up
  controller: br1
  veth: {peer: eth1p}
- name: br1
  type: linux-bridge
  state: up
  bridge:
    port:
    - name: eth1
      vlan: {mode: trunk, enable-native: true, tag: 1, trunk-tags: [{id-range: {min: 2, max: 4094}}]}
`))
		if err != nil {
			t.Fatal(err)
		}
		m, err := nmstate.Merge(desired, trunk)
		if err != nil {
			t.Fatal(err)
		}
		p, err := nmstate.PlanChanges(m)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := bridgeOps(p), "bridge vlan set eth1 master br1 none\nbridge vlan-filtering br1 off"; got != want {
			t.Errorf("bridge operations:\n%s\nwant:\n%s", got, want)
		}
		// After the reset the kernel reports no port VLAN: the fixed point.
		m, err = nmstate.Merge(desired, current)
		if err != nil {
			t.Fatal(err)
		}
		p, err = nmstate.PlanChanges(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := bridgeOps(p); got != "" {
			t.Errorf("planning the reset again: %s; want no bridge operation", got)
		}
	})
}

// bridgeOps are a plan's bridge VLAN operations, one per line.
func bridgeOps(p *nmstate.Plan) string {
	var out []string
	for _, op := range p.Ops {
		switch op.(type) {
		case nmstate.BridgeVLANSet, nmstate.BridgeVLANFiltering:
			out = append(out, op.String())
		}
	}
	return strings.Join(out, "\n")
}
