package nmstate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// planCaseDirs lists testdata/cases/<case> directories (M owns their
// current.yaml and desired.yaml; plan.txt is written here).
func planCaseDirs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/cases/*/desired.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden cases in testdata/cases")
	}
	for i, f := range files {
		files[i] = filepath.Dir(f)
	}
	return files
}

func planDecode(t *testing.T, path string) *nmstate.State {
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

// TestPlanGolden: plan.txt = PlanChanges(Merge(desired, current)).String();
// `go test ./pkg/nmstate -run TestPlanGolden -update` rewrites them.
func TestPlanGolden(t *testing.T) {
	for _, dir := range planCaseDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cur := planDecode(t, filepath.Join(dir, "current.yaml"))
			des := planDecode(t, filepath.Join(dir, "desired.yaml"))
			m, err := nmstate.Merge(des, cur)
			if err != nil {
				t.Skipf("merge rejects this case: %v", err)
			}
			var got string
			p, err := nmstate.PlanChanges(m)
			if err != nil {
				got = "error: " + err.Error() + "\n"
			} else {
				got = p.String()
			}
			path := filepath.Join(dir, "plan.txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create): %v", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", path, diff)
			}
		})
	}
}

// TestPlanFixedPoint: after a perfect backend applied the plan (Simulate),
// merging the same desired state again and planning gives an empty plan.
func TestPlanFixedPoint(t *testing.T) {
	for _, dir := range planCaseDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cur := planDecode(t, filepath.Join(dir, "current.yaml"))
			des := planDecode(t, filepath.Join(dir, "desired.yaml"))
			m, err := nmstate.Merge(des, cur)
			if err != nil {
				t.Skipf("merge rejects this case: %v", err)
			}
			if _, err := nmstate.PlanChanges(m); err != nil {
				t.Skipf("plan rejects this case: %v", err)
			}
			after := nmstate.Simulate(cur, m)
			m2, err := nmstate.Merge(des, after)
			if err != nil {
				t.Fatalf("merge against the simulated state: %v", err)
			}
			p, err := nmstate.PlanChanges(m2)
			if err != nil {
				t.Fatalf("plan against the simulated state: %v", err)
			}
			if !p.Empty() {
				t.Errorf("plan against the simulated state is not empty:\n%s", p)
			}
		})
	}
}

// FuzzPlanFixedPoint: for any current and desired state that merge and
// plan accept, planning again after a perfect apply (Simulate) is empty.
func FuzzPlanFixedPoint(f *testing.F) {
	files, err := filepath.Glob("testdata/cases/*/desired.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, d := range files {
		des, err := os.ReadFile(d)
		if err != nil {
			f.Fatal(err)
		}
		cur, err := os.ReadFile(filepath.Join(filepath.Dir(d), "current.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(cur, des)
	}
	f.Fuzz(func(t *testing.T, curText, desText []byte) {
		cur, err := nmstate.Decode(curText)
		if err != nil {
			return
		}
		des, err := nmstate.Decode(desText)
		if err != nil {
			return
		}
		m, err := nmstate.Merge(des, cur)
		if err != nil {
			return
		}
		if _, err := nmstate.PlanChanges(m); err != nil {
			return
		}
		after := nmstate.Simulate(cur, m)
		m2, err := nmstate.Merge(des, after)
		if err != nil {
			t.Fatalf("merge against the simulated state: %v", err)
		}
		p, err := nmstate.PlanChanges(m2)
		if err != nil {
			t.Fatalf("plan against the simulated state: %v", err)
		}
		if !p.Empty() {
			t.Fatalf("plan after a perfect apply is not empty:\n%s", p)
		}
	})
}
