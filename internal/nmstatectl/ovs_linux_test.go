package nmstatectl

import (
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
)

const ovsBridgeState = `interfaces:
- name: ovs0
  type: ovs-interface
  state: up
  ipv4:
    enabled: true
    address:
    - ip: 192.0.2.1
      prefix-length: 24
- name: ovs-br0
  type: ovs-bridge
  state: up
  bridge:
    port:
    - name: eth1
    - name: ovs0
`

// nmstatectl --ovsdb reaches the node's own OVS: apply, show, dry-run of
// the same state (empty), a rollback through the checkpoint's recorded
// socket; without a reachable OVSDB the same state fails saying so.
func TestCLIOVS(t *testing.T) {
	n := newCLINode(t)
	o := ovsrun.ForTest(t, n.ns.Path)
	ovs := []string{"--ovsdb", o.Address, "--ovs-datapath", "netdev"}
	n.mustRun(t, ovsBridgeState, append(ovs, "apply")...)
	shown := n.mustRun(t, "", append(ovs, "show")...)
	for _, want := range []string{"  - name: ovs-br0\n    type: ovs-bridge\n", "  - name: ovs0\n    type: ovs-interface\n", "controller: ovs-br0"} {
		if !strings.Contains(shown, want) {
			t.Errorf("show lacks %q:\n%s", want, shown)
		}
	}
	if plan := n.mustRun(t, ovsBridgeState, append(ovs, "apply", "--dry-run")...); plan != "" {
		t.Errorf("applying again plans:\n%s", plan)
	}
	n.mustRun(t, "interfaces:\n- name: ovs-br1\n  type: ovs-bridge\n  bridge:\n    port:\n    - name: ovs1\n", append(ovs, "apply", "--no-commit")...)
	if !strings.Contains(n.mustRun(t, "", append(ovs, "show")...), "ovs-br1") {
		t.Fatal("ovs-br1 not created")
	}
	// rollback gets no --ovsdb: the checkpoint names the database.
	n.mustRun(t, "", "rollback")
	if shown := n.mustRun(t, "", append(ovs, "show")...); strings.Contains(shown, "ovs-br1") || !strings.Contains(shown, "ovs-br0") {
		t.Errorf("after rollback:\n%s", shown)
	}

	_, errOut, code := n.run(t, strings.NewReplacer("ovs-br0", "ovs-br2", "ovs0", "ovs9").Replace(ovsBridgeState), "--ovsdb", "unix:"+t.TempDir()+"/none.sock", "apply")
	if code == 0 || !strings.Contains(errOut, "the OVS database is not reachable") {
		t.Errorf("apply without OVSDB: exit %d, stderr:\n%s", code, errOut)
	}
}
