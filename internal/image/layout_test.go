package image

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

func TestWriteReadLayout(t *testing.T) {
	src := t.TempDir()
	in := Inputs{Knmstate: writeFile(t, src, "knmstate", "k"), CABundle: writeFile(t, src, "ca", "c"), Version: "v1", Created: created}
	img, err := Build(Knmstate(in))
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Twice: the second write replaces the first, it does not add to it.
	for range 2 {
		if _, err := WriteLayout(dir, "knmstate", "v1", img); err != nil {
			t.Fatal(err)
		}
	}
	rec := readRecord(t, filepath.Join(dir, "knmstate.json"))
	if diff := cmp.Diff(Record{Name: "knmstate", Tag: "v1", Digest: want.String(), Layout: "knmstate"}, rec); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	got, err := ReadLayout(filepath.Join(dir, rec.Layout))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := got.Digest(); err != nil || d != want {
		t.Errorf("layout image digest %v (%v), want %v", d, err, want)
	}
	p, err := layout.FromPath(filepath.Join(dir, "knmstate"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations[refName] != "v1" ||
		m.Manifests[0].Platform == nil || m.Manifests[0].Platform.String() != "linux/amd64" {
		t.Errorf("index manifests %+v, want one, tagged v1, linux/amd64", m.Manifests)
	}
}

func TestReadLayoutWantsOneImage(t *testing.T) {
	src := t.TempDir()
	in := Inputs{Pause: writeFile(t, src, "pause", "p"), Created: created}
	img, err := Build(Pause(in))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := WriteLayout(dir, "pause", "v1", img); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(filepath.Join(dir, "pause"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	_, err = ReadLayout(filepath.Join(dir, "pause"))
	if want := "layout " + filepath.Join(dir, "pause") + ": 2 images, want 1"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestLayoutReproducible: two layouts of the same inputs are the same
// bytes, file by file.
func TestLayoutReproducible(t *testing.T) {
	src := t.TempDir()
	in := Inputs{Knmstate: writeFile(t, src, "knmstate", "k"), CABundle: writeFile(t, src, "ca", "c"), Version: "v1", Created: created}
	var trees [2]map[string]string
	for i := range trees {
		img, err := Build(Knmstate(in))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if _, err := WriteLayout(dir, "knmstate", "v1", img); err != nil {
			t.Fatal(err)
		}
		trees[i] = readTree(t, dir)
	}
	if diff := cmp.Diff(trees[0], trees[1]); diff != "" {
		t.Errorf("layouts differ (-first +second):\n%s", diff)
	}
}

func readRecord(t *testing.T, path string) Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// readTree maps each file below dir to its content's hash.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		tree[rel] = contentHash(string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}
