package nmstatectl

import (
	"strings"
	"testing"
)

// TestCLIAltNames applies nmstate 2.2.51's alt-names to a NIC, then
// removes one: apply verifies, show reports them, the same state plans
// nothing more, and a rollback (--no-commit then rollback) takes added
// names away again.
func TestCLIAltNames(t *testing.T) {
	n := newCLINode(t)
	n.mustRun(t, "interfaces:\n- name: eth1\n  type: ethernet\n  alt-names:\n  - name: uplink\n  - name: port-a-long-name-beyond-fifteen\n", "apply")
	shown := n.mustRun(t, "", "show", "eth1")
	for _, want := range []string{"    alt-names:\n      - name: port-a-long-name-beyond-fifteen\n      - name: uplink\n"} {
		if !strings.Contains(shown, want) {
			t.Errorf("show eth1 lacks %q:\n%s", want, shown)
		}
	}
	remove := "interfaces:\n- name: eth1\n  type: ethernet\n  alt-names:\n  - name: uplink\n    state: absent\n"
	if plan := n.mustRun(t, remove, "apply", "--dry-run"); !strings.Contains(plan, "altnames [port-a-long-name-beyond-fifteen]") {
		t.Errorf("plan of a removal:\n%s", plan)
	}
	n.mustRun(t, remove, "apply")
	if shown := n.mustRun(t, "", "show", "eth1"); strings.Contains(shown, "uplink") || !strings.Contains(shown, "port-a-long-name-beyond-fifteen") {
		t.Errorf("after the removal:\n%s", shown)
	}
	if plan := n.mustRun(t, remove, "apply", "--dry-run"); plan != "" {
		t.Errorf("applying the removal again plans:\n%s", plan)
	}
	n.mustRun(t, "interfaces:\n- name: eth1\n  type: ethernet\n  alt-names: [{name: extra0}]\n", "apply", "--no-commit")
	n.mustRun(t, "", "rollback")
	if shown := n.mustRun(t, "", "show", "eth1"); strings.Contains(shown, "extra0") {
		t.Errorf("rolled back alt name still there:\n%s", shown)
	}
}
