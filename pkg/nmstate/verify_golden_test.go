package nmstate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

func verifyCaseState(t *testing.T, path string) *nmstate.State {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := nmstate.Decode(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// TestVerifyAcceptsPerfectKernel runs every golden case through a perfect
// kernel (Simulate): what it shows after the apply, and after the rollback,
// must pass verification. A verify rule stricter than the model would make
// every real apply roll back.
func TestVerifyAcceptsPerfectKernel(t *testing.T) {
	dirs, err := filepath.Glob("testdata/cases/*/desired.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			before := verifyCaseState(t, filepath.Join(dir, "current.yaml"))
			desired := verifyCaseState(t, filepath.Join(dir, "desired.yaml"))
			m, err := nmstate.Merge(desired, before)
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			after := nmstate.Simulate(before, m)
			if err := nmstate.Verify(m.Desired, after); err != nil {
				t.Errorf("after apply: %v", err)
			}
			rev, err := nmstate.Revert(before, m.Desired)
			if err != nil {
				t.Fatalf("Revert: %v", err)
			}
			back, err := nmstate.Merge(rev, after)
			if err != nil {
				t.Fatalf("Merge(revert, after): %v", err)
			}
			if err := nmstate.Verify(back.Desired, nmstate.Simulate(after, back)); err != nil {
				t.Errorf("after rollback: %v", err)
			}
		})
	}
}
