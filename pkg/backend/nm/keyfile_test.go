package nm

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

var update = flag.Bool("update", false, "rewrite the golden keyfiles")

// TestGenerateKeyfilesGolden renders each testdata/gc/<case>.yml into
// testdata/gc/<case>.keyfiles (every file, with its name as a header).
func TestGenerateKeyfilesGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/gc/*.yml")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, c := range cases {
		t.Run(filepath.Base(c), func(t *testing.T) {
			data, err := os.ReadFile(c)
			if err != nil {
				t.Fatal(err)
			}
			st, err := nmstate.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			files, err := GenerateKeyfiles(st)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, f := range files {
				b.WriteString("# " + f.Name + "\n")
				b.Write(f.Data)
				b.WriteString("\n")
			}
			golden := strings.TrimSuffix(c, ".yml") + ".keyfiles"
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// Rendering twice gives the same files (stable UUIDs).
			again, _ := GenerateKeyfiles(st)
			if diff := cmp.Diff(files, again); diff != "" {
				t.Errorf("second rendering differs:\n%s", diff)
			}
		})
	}
}

// TestStableUUIDIsVersion5: nmstate's gc UUIDs are name-based (SHA-1).
func TestStableUUIDIsVersion5(t *testing.T) {
	u := StableUUID(nmstate.TypeEthernet, "eth1")
	if len(u) != 36 || u[14] != '5' || !strings.ContainsAny(u[19:20], "89ab") {
		t.Errorf("uuid %s is not a version 5 UUID", u)
	}
	if u == StableUUID(nmstate.TypeEthernet, "eth2") {
		t.Errorf("two interfaces share uuid %s", u)
	}
}
