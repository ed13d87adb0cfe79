package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// The files of deploy/ that this package is the source of are what it
// generates now, and every generated file in those directories is still
// generated.
func TestFilesUpToDate(t *testing.T) {
	root, err := testenv.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for path, want := range files {
		dirs[filepath.Dir(path)] = true
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%v: run `go run ./hack/manifests`", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go run ./hack/manifests`", path)
		}
	}
	for dir := range dirs {
		names, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			rel, _ := filepath.Rel(root, n)
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := files[rel]; !ok && IsGenerated(b) {
				t.Errorf("%s is no longer generated: delete it", rel)
			}
		}
	}
}

// What EncodeYAML writes decodes back to the same objects.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	objs := Standalone(Params{})
	y, err := EncodeYAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeYAML(y)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(objs) {
		t.Fatalf("%d objects back, want %d", len(back), len(objs))
	}
	again, err := EncodeYAML(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(y, again) {
		t.Errorf("encoding is not stable:\n%s\n---- vs ----\n%s", y, again)
	}
}

// No role knmstate installs grants with wildcards.
func TestNoWildcardRBAC(t *testing.T) {
	bundle, err := OperatorBundle(Params{})
	if err != nil {
		t.Fatal(err)
	}
	objs := append(append(Operands(Params{}), Standalone(Params{})...), bundle...)
	// And on OpenShift: the operands and the payload.
	objs = append(objs, Operands(Params{Namespace: OpenShiftNamespace, OpenShift: &OpenShiftParams{}})...)
	payload, _, err := OpenShiftPayload(Params{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payload {
		objs = append(objs, p...)
	}
	for _, o := range objs {
		var rules []rbacv1.PolicyRule
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			rules = r.Rules
		case *rbacv1.Role:
			rules = r.Rules
		default:
			continue
		}
		for i, rule := range rules {
			for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames, rule.NonResourceURLs} {
				if slices.Contains(field, "*") {
					t.Errorf("%T %s rules[%d]: a wildcard: %+v", o, o.GetName(), i, rule)
				}
			}
			if len(rule.Verbs) == 0 {
				t.Errorf("%T %s rules[%d]: no verbs", o, o.GetName(), i)
			}
		}
	}
}
