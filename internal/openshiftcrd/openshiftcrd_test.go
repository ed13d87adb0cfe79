package openshiftcrd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The copies are the module's files, byte for byte (after a go.mod bump:
// copy them again from `go list -m -f {{.Dir}} github.com/openshift/api`).
func TestCopiesMatchTheModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		t.Fatalf("locating the openshift/api module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), ModuleDir)
	fm, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(fm) < 4 {
		t.Fatalf("%d files embedded", len(fm))
	}
	for name, b := range fm {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s differs from the module's copy in %s", name, dir)
		}
	}
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if c.Spec.Group != "config.openshift.io" {
			t.Errorf("%s: group %s", c.Name, c.Spec.Group)
		}
	}
}
