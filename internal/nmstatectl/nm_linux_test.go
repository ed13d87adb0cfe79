package nmstatectl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
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

// runWithEditor runs nmstatectl with EDITOR set.
func (n *cliNode) runWithEditor(t *testing.T, editor string, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("EDITOR", editor)
	return n.run(t, "", args...)
}

// TestCLIEdit: edit opens eth1's running configuration in $EDITOR and
// applies what was saved, on the kernel and the NetworkManager backend;
// an unchanged file applies nothing; a broken one is reported and kept.
func TestCLIEdit(t *testing.T) {
	newState := filepath.Join(t.TempDir(), "new.yml")
	if err := os.WriteFile(newState, []byte("interfaces:\n- name: eth1\n  type: ethernet\n  ipv4: {enabled: true, address: [{ip: 198.51.100.44, prefix-length: 24}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := filepath.Join(t.TempDir(), "seen.yml")
	editor := "cp \"$1\" " + seen + " && cp " + newState
	for _, backend := range []string{"kernel", "networkmanager"} {
		t.Run(backend, func(t *testing.T) {
			var n *cliNode
			var in *nmrun.Instance
			if backend == "networkmanager" {
				n, in = newNMCLINode(t)
				n.nmstatectl = append(n.nmstatectl, "--backend", "networkmanager")
			} else {
				n = newCLINode(t)
			}
			if _, errOut, code := n.runWithEditor(t, "true", "edit", "eth1"); code != 0 || !strings.Contains(errOut, "no change") {
				t.Fatalf("unchanged edit: exit %d, stderr %q", code, errOut)
			}
			if _, errOut, code := n.runWithEditor(t, editor, "edit", "eth1"); code != 0 {
				t.Fatalf("edit: exit %d\n%s", code, errOut)
			}
			if data, err := os.ReadFile(seen); err != nil || !strings.Contains(string(data), "name: eth1") || strings.Contains(string(data), "name: lo") {
				t.Errorf("the editor saw %q (%v), want eth1's state only", data, err)
			}
			if show := n.show(t); !strings.Contains(show, "198.51.100.44") {
				t.Errorf("eth1 lacks the edited address:\n%s", show)
			}
			if in != nil {
				out, err := nmrun.Nmcli(context.Background(), in.Bus, "-g", "IP4.ADDRESS", "device", "show", "eth1")
				if err != nil || !strings.Contains(out, "198.51.100.44/24") {
					t.Errorf("NetworkManager's eth1: %q (%v)", out, err)
				}
			}
			_, errOut, code := n.runWithEditor(t, "echo 'interfaces: [' >", "edit", "eth1")
			if code == 0 || !strings.Contains(errOut, "the edited state is kept in") {
				t.Errorf("broken edit: exit %d, stderr %q", code, errOut)
			}
			if i := strings.Index(errOut, "kept in "); i >= 0 {
				os.RemoveAll(filepath.Dir(strings.TrimSpace(errOut[i+len("kept in "):])))
			}
		})
	}
}
