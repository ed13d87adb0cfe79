package nmpolicy

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

// goldenNow is the evaluation time of every golden case, so captured.yaml is
// stable.
var goldenNow = time.Date(2025, 3, 4, 10, 15, 0, 0, time.UTC)

// TestGolden runs every case directory under testdata (the worked examples
// of spec §13 and the lldp example):
//
//	policy.yaml   capture + desiredState (or nncp.yaml: a whole NNCP)
//	current.yaml  the node's current state
//	cache.yaml    optional captured states given as cache
//
// and compares with captured.yaml and generated.yaml, or error.txt for cases
// that must fail (captured.yaml then holds what was captured before the
// template error, if anything).
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/current.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 19 {
		t.Fatalf("found %d golden cases, want at least 19", len(dirs))
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			policy := readPolicy(t, dir)
			current := readDoc(t, filepath.Join(dir, "current.yaml"))
			var cache CapturedStates
			if _, err := os.Stat(filepath.Join(dir, "cache.yaml")); err == nil {
				cache, err = ParseCapturedStates(readDoc(t, filepath.Join(dir, "cache.yaml")))
				if err != nil {
					t.Fatal(err)
				}
			}
			gen, err := GenerateState(policy, current, cache, goldenNow)
			if err != nil {
				var perr *Error
				if !errors.As(err, &perr) {
					t.Errorf("error %v is not an *Error", err)
				}
				checkGolden(t, filepath.Join(dir, "error.txt"), []byte(err.Error()+"\n"))
				assertAbsent(t, filepath.Join(dir, "generated.yaml"))
			} else {
				assertAbsent(t, filepath.Join(dir, "error.txt"))
				compareYAML(t, filepath.Join(dir, "generated.yaml"), gen.DesiredState)
			}
			if gen.CapturedStates != nil {
				compareYAML(t, filepath.Join(dir, "captured.yaml"), gen.CapturedStates.Document())
			} else {
				assertAbsent(t, filepath.Join(dir, "captured.yaml"))
			}
		})
	}
}

func readPolicy(t *testing.T, dir string) Policy {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "nncp.yaml")); err == nil {
		nncp := readDoc(t, filepath.Join(dir, "nncp.yaml")).(map[string]any)
		spec := nncp["spec"].(map[string]any)
		capture := map[string]string{}
		for k, v := range spec["capture"].(map[string]any) {
			capture[k] = v.(string)
		}
		return Policy{Capture: capture, DesiredState: spec["desiredState"]}
	}
	data, err := os.ReadFile(filepath.Join(dir, "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pf, err := ParsePolicyFile(data)
	if err != nil {
		t.Fatal(err)
	}
	return pf.Policy
}

func readDoc(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := DecodeDocument(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

func assertAbsent(t *testing.T, path string) {
	t.Helper()
	if *update {
		os.Remove(path)
		return
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s exists but the case produced no such output", path)
	}
}

// compareYAML compares a document with a golden YAML file as documents, so
// that hand-written goldens may order keys as the spec does; -update writes
// the canonical form.
func compareYAML(t *testing.T, path string, got any) {
	t.Helper()
	if *update {
		data, err := yaml.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readDoc(t, path)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
