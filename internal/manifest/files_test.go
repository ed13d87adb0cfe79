package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/knmstate/knmstate/internal/testenv"
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
