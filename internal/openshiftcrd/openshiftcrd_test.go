package openshiftcrd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The copies are the module's files, byte for byte (after a go.mod bump:
// copy them again from `go list -m -f {{.Dir}} github.com/openshift/api`).
func TestCopiesMatchTheModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		t.Fatalf("locating the openshift/api module: %v", err)
	}
	module := strings.TrimSpace(string(out))
	fm, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(fm) < 6 {
		t.Fatalf("%d files embedded", len(fm))
	}
	for name, b := range fm {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sub, ok := ModuleDirs[crd.Spec.Group]
		if !ok {
			t.Errorf("%s: group %s has no module directory", name, crd.Spec.Group)
			continue
		}
		dir := filepath.Join(module, sub)
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
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	for _, want := range []string{"clusterversions.config.openshift.io", "consoleplugins.console.openshift.io", "consoles.operator.openshift.io"} {
		if !slices.Contains(names, want) {
			t.Errorf("no CRD %s among %v", want, names)
		}
	}
}
