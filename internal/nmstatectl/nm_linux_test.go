package nmstatectl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/nmrun"
)

// newNMCLINode is a cliNode whose namespace a private NetworkManager
// manages; nmstatectl reaches it with --dbus-address.
func newNMCLINode(t *testing.T) (*cliNode, *nmrun.Instance) {
	t.Helper()
	n := newCLINode(t)
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: n.ns.Path, Dir: filepath.Join(t.TempDir(), "nm")})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	n.nmstatectl = append(n.nmstatectl, "--dbus-address", in.Bus)
	return n, in
}

const nmCLIBridge = `interfaces:
- name: br7
  type: linux-bridge
  state: up
  ipv4: {enabled: true, address: [{ip: 198.51.100.7, prefix-length: 24}]}
  bridge: {options: {stp: {enabled: false}}, port: []}
`

// TestCLINetworkManagerBackendNoCommitThenCommit: --backend auto picks
// NetworkManager on the given bus; apply --no-commit leaves a
// NetworkManager checkpoint pending, commit destroys it and the bridge
// stays as a NetworkManager profile.
func TestCLINetworkManagerBackendNoCommitThenCommit(t *testing.T) {
	n, in := newNMCLINode(t)
	ctx := context.Background()
	n.mustRun(t, nmCLIBridge, "apply", "--no-commit", "--timeout", "60")
	out, err := nmrun.Checkpoints(in.Bus)
	if err != nil || out == 0 {
		t.Fatalf("NetworkManager checkpoints after apply --no-commit: %d (%v), want one", out, err)
	}
	n.mustRun(t, "", "commit")
	if out, err := nmrun.Checkpoints(in.Bus); err != nil || out != 0 {
		t.Fatalf("NetworkManager checkpoints after commit: %d (%v), want none", out, err)
	}
	prof, err := nmrun.Nmcli(ctx, in.Bus, "-g", "GENERAL.CONNECTION", "device", "show", "br7")
	if err != nil || strings.TrimSpace(prof) != "br7" {
		t.Errorf("br7 profile active in NetworkManager: %q (%v)", prof, err)
	}
	if show := n.show(t); !strings.Contains(show, "198.51.100.7") {
		t.Errorf("show does not report br7's address:\n%s", show)
	}
}

// TestCLINetworkManagerBackendRollback: apply --no-commit, then rollback
// restores the state through the NetworkManager checkpoint.
func TestCLINetworkManagerBackendRollback(t *testing.T) {
	n, in := newNMCLINode(t)
	ctx := context.Background()
	before := n.show(t)
	n.mustRun(t, nmCLIBridge, "apply", "--no-commit")
	n.mustRun(t, "", "rollback")
	if after := n.show(t); after != before {
		t.Errorf("show after rollback differs:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if out, err := nmrun.Nmcli(ctx, in.Bus, "-g", "NAME", "connection", "show"); err != nil || strings.Contains(out, "br7") {
		t.Errorf("profiles after rollback: %q (%v)", out, err)
	}
}

// TestCLIBackendFlagRejectsUnknown: a wrong --backend is an error naming
// the flag.
func TestCLIBackendFlagRejectsUnknown(t *testing.T) {
	n := newCLINode(t)
	_, errOut, code := n.run(t, "", "--backend", "systemd", "show")
	if code == 0 || !strings.Contains(errOut, `--backend: "systemd" is not one of auto, kernel, networkmanager`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// TestCLIGC: gc prints upstream's NetworkManager: [[name, content]] form
// and --output-dir writes the same files with mode 0600.
func TestCLIGC(t *testing.T) {
	n := newCLINode(t)
	out := n.mustRun(t, nmCLIBridge, "gc", "-")
	if !strings.HasPrefix(out, "NetworkManager:\n  - - br7.nmconnection\n    - |\n      [connection]\n") || !strings.Contains(out, "address1=198.51.100.7/24") {
		t.Errorf("gc output:\n%s", out)
	}
	dir := t.TempDir()
	n.mustRun(t, nmCLIBridge, "gc", "--output-dir", dir, "-")
	st, err := os.Stat(filepath.Join(dir, "br7.nmconnection"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("keyfile: %v, mode %v", err, st)
	}
}
