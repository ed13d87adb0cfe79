package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenShiftRender runs the command on the golden install-configs: the
// files written are the golden manifests; a bad install-config writes
// nothing and names the host and the path.
func TestOpenShiftRender(t *testing.T) {
	golden := filepath.Join("..", "..", "internal", "openshift", "testdata", "static")
	out := filepath.Join(t.TempDir(), "manifests")
	cmd := newOpenShiftRenderCmd()
	var stdout bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetArgs([]string{"--install-config", filepath.Join(golden, "install-config.yaml"), "--dir", out})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("wrote %d files, want 2 (master and worker)", len(entries))
	}
	for _, e := range entries {
		got, _ := os.ReadFile(filepath.Join(out, e.Name()))
		want, err := os.ReadFile(filepath.Join(golden, "out", e.Name()))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (%v)", e.Name(), err)
		}
	}

	in, err := os.ReadFile(filepath.Join(golden, "install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "install-config.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(in), "prefix-length: 24", "prefix-length: 33", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	badOut := filepath.Join(t.TempDir(), "bad")
	cmd = newOpenShiftRenderCmd()
	cmd.SetOut(&stdout)
	cmd.SetArgs([]string{"--install-config", bad, "--dir", badOut})
	err = cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "host master-0: networking.hostConfig[0].networkConfig.interfaces[2].ipv4.address[0]") {
		t.Errorf("bad install-config: error %v, want one naming master-0 and the address's path", err)
	}
	if _, err := os.Stat(badOut); !os.IsNotExist(err) {
		t.Errorf("a failed render created %s (%v)", badOut, err)
	}
}
