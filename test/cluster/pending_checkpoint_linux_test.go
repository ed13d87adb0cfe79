package cluster

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/pkg/apply"
)

// pendingNode is where the pending checkpoint test leaves nmstatectl's
// checkpoint.
const pendingNode = "node02"

// bridgeNoPorts is upstream's linuxBrUpNoPorts: a linux bridge without
// ports (and without IP).
const bridgeNoPorts = `interfaces:
- name: brpending
  type: linux-bridge
  state: up
  bridge:
    options:
      stp:
        enabled: false
    port: []
`

// TestPendingCheckpointRolledBackByNextPolicy is upstream's
// pending_checkpoint_test: `nmstatectl apply --no-commit` run by hand on a
// node (as in the handler pod: the same state directory, nmstatectl's
// default there) leaves a checkpoint pending while the handler runs; the
// next policy for the node rolls it back first and becomes Available.
func TestPendingCheckpointRolledBackByNextPolicy(t *testing.T) {
	c := sharedLab(t)
	n := c.node(t, pendingNode)
	stateDir := c.stateDir(pendingNode)
	args := []string{"nmstatectl", "--netns", n.NetNS, "--resolv-conf", n.ResolvConf, "--state-dir", stateDir,
		"apply", "--no-commit", "--timeout", "60"}
	cmd := exec.Command(kit.Knmstate, args...)
	cmd.Stdin = strings.NewReader(bridgeNoPorts)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Registered first: the watchdog nmstatectl leaves behind stops with
	// the test, and the bridge goes.
	t.Cleanup(func() {
		pids, _ := filepath.Glob(filepath.Join(stateDir, "watchdog-*.pid"))
		for _, f := range pids {
			b, _ := os.ReadFile(f)
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		clean := exec.Command(kit.Knmstate, "nmstatectl", "--netns", n.NetNS, "--resolv-conf", n.ResolvConf,
			"--state-dir", stateDir, "apply", "-")
		clean.Stdin = strings.NewReader("interfaces:\n- {name: brpending, type: linux-bridge, state: absent}\n")
		if out, err := clean.CombinedOutput(); err != nil {
			t.Errorf("cleanup: removing brpending: %v\n%s", err, out)
		}
	})
	if err := cmd.Run(); err != nil {
		t.Fatalf("nmstatectl %v: %v\n%s", args, err, stderr.String())
	}
	rec, err := apply.ReadCheckpoint(stateDir)
	if err != nil {
		t.Fatalf("no pending checkpoint after apply --no-commit: %v\n%s", err, stderr.String())
	}
	p := policyYAML(t, "pending-checkpoint", map[string]string{"kubernetes.io/hostname": pendingNode}, bridgeNoPorts)
	c.create(t, p)
	c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 45*time.Second)
	if _, err := apply.ReadCheckpoint(stateDir); err == nil {
		t.Errorf("checkpoint still pending after the policy is Available")
	}
	if !strings.Contains(string(c.handlerLogText(t, pendingNode)), rec.ID) {
		t.Errorf("the handler's log does not mention rolling back checkpoint %s", rec.ID)
	}
	c.deletePolicy(t, p.Name)
}
