package conformance

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTableCoversEveryExample keeps the table honest: every example file
// is either in a scenario or listed as unsupported (never both), and the
// table names no file that does not exist.
func TestTableCoversEveryExample(t *testing.T) {
	entries, err := os.ReadDir(ExamplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	inScenario := map[string]bool{}
	for _, s := range Scenarios {
		for _, f := range s.Steps {
			inScenario[f] = true
		}
	}
	var listed []string
	for f := range inScenario {
		listed = append(listed, f)
		if _, ok := Unsupported[f]; ok {
			t.Errorf("%s is both in a scenario and listed as unsupported", f)
		}
	}
	for f, why := range Unsupported {
		listed = append(listed, f)
		if strings.TrimSpace(why) == "" {
			t.Errorf("%s: unsupported without a reason", f)
		}
	}
	sort.Strings(listed)
	if diff := cmp.Diff(files, listed); diff != "" {
		t.Errorf("table vs %s (-files +table):\n%s", ExamplesDir, diff)
	}
}

// readExample reads one example file from testdata.
func readExample(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ExamplesDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
