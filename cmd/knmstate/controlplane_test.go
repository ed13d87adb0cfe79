//go:build !notestbed

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestControlplaneRun runs a command against the throw-away control plane
// and checks it sees the nmstate.io API through KUBECONFIG, that its exit
// status comes back, and that nothing is left in --dir afterwards.
func TestControlplaneRun(t *testing.T) {
	t.Chdir("../..") // the repository root, like `make demo`
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	script := `kubectl get crd nodenetworkconfigurationpolicies.nmstate.io -o name >"$1" && echo "$KUBECONFIG" >>"$1" && exit 7`
	code, err := runControlplane(t.Context(), controlplaneRunOptions{
		dir:     dir,
		command: []string{"sh", "-c", script, "sh", out},
	})
	if err != nil {
		t.Fatal(err)
	}
	if code != 7 {
		t.Errorf("exit code = %d, want the command's 7", code)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != 2 || lines[0] != "customresourcedefinition.apiextensions.k8s.io/nodenetworkconfigurationpolicies.nmstate.io" ||
		!strings.HasPrefix(lines[1], dir+"/") {
		t.Errorf("command output = %q, want the NNCP CRD and a kubeconfig under %s", lines, dir)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("left in --dir after the run: %v", left)
	}
}
