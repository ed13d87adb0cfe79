package nmstate_test

import (
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
}
