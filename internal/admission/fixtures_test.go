package admission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/api/shared"
)

// repo is the repository root, from this package's directory.
const repo = "../.."

// policyFile is a policy spec read from a file, with its name.
type policyFile struct {
	name string
	spec shared.NodeNetworkConfigurationPolicySpec
}

// spec parses a policy spec from YAML (capture, desiredState, ...).
func spec(t testing.TB, doc string) shared.NodeNetworkConfigurationPolicySpec {
	t.Helper()
	var s shared.NodeNetworkConfigurationPolicySpec
	if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
		t.Fatalf("policy spec: %v\n%s", err, doc)
	}
	return s
}

// stateSpec is a spec whose desiredState is the given nmstate document.
func stateSpec(t testing.TB, state []byte) shared.NodeNetworkConfigurationPolicySpec {
	t.Helper()
	st, err := shared.NewState(state)
	if err != nil {
		t.Fatalf("state: %v", err)
	}
	return shared.NodeNetworkConfigurationPolicySpec{DesiredState: st}
}

// validPolicies are every valid policy the project knows of: the NNCPs of
// examples/ and of kubernetes-nmstate's examples (conformance), nmstate's
// examples as desired states, and the capture language's worked examples
// whose policies are valid before any node evaluates them.
func validPolicies(t testing.TB) []policyFile {
	t.Helper()
	var out []policyFile
	for _, pattern := range []string{
		filepath.Join(repo, "examples", "*.yaml"),
		filepath.Join(repo, "pkg", "nmstate", "testdata", "knmstate-examples", "*.yaml"),
	} {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("no files for %s: %v", pattern, err)
		}
		for _, f := range files {
			var obj struct {
				Kind string                                    `json:"kind"`
				Spec shared.NodeNetworkConfigurationPolicySpec `json:"spec"`
			}
			if err := yaml.Unmarshal(read(t, f), &obj); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if obj.Kind != "NodeNetworkConfigurationPolicy" {
				continue
			}
			out = append(out, policyFile{name: rel(f), spec: obj.Spec})
		}
	}
	files, err := filepath.Glob(filepath.Join(repo, "pkg", "nmstate", "testdata", "nmstate-examples", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no nmstate examples: %v", err)
	}
	for _, f := range files {
		out = append(out, policyFile{name: rel(f), spec: stateSpec(t, read(t, f))})
	}
	dirs, err := filepath.Glob(filepath.Join(repo, "pkg", "nmpolicy", "testdata", "*", "policy.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no capture examples: %v", err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		if staticallyInvalid[filepath.Base(dir)] {
			continue
		}
		out = append(out, policyFile{name: rel(f), spec: spec(t, string(read(t, f)))})
	}
	return out
}

// staticallyInvalid are the capture language's examples that fail for a
// reason admission can see (the others fail only against a node's state).
var staticallyInvalid = map[string]bool{
	"ex7-two-references":   true, // template syntax
	"ex9c-cycle":           true,
	"ex9d-lexical":         true,
	"ex9e-unknown-capture": true,
}

func read(t testing.TB, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rel(f string) string { return strings.TrimPrefix(filepath.ToSlash(f), repo+"/") }
