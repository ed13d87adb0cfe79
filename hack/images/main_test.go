package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/image"
)

// TestReproducible: two runs on the same binaries write the same layouts
// and records, byte for byte, and print the same digests.
func TestReproducible(t *testing.T) {
	src := t.TempDir()
	in := image.Inputs{
		Knmstate: filepath.Join(src, "knmstate"), Pause: filepath.Join(src, "pause"), CABundle: filepath.Join(src, "ca.crt"),
		Version: "v0.1.0-1-gabcdef0", Revision: "abcdef0",
	}
	for _, p := range []string{in.Knmstate, in.Pause, in.CABundle} {
		if err := os.WriteFile(p, []byte("fake "+filepath.Base(p)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var trees [2]map[string]string
	var outs [2]string
	for i := range trees {
		out := t.TempDir()
		// The sources' mtimes change between runs, as a rebuild does.
		for _, p := range []string{in.Knmstate, in.Pause, in.CABundle} {
			mtime := time.Now().Add(time.Duration(i) * time.Hour)
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
		var stdout bytes.Buffer
		if err := run(options{in: in, epoch: 1700000000, out: out}, nil, &stdout); err != nil {
			t.Fatal(err)
		}
		trees[i], outs[i] = tree(t, out), strings.ReplaceAll(stdout.String(), out, "OUT")
	}
	if diff := cmp.Diff(trees[0], trees[1]); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
	if outs[0] != outs[1] || strings.Count(outs[0], "sha256:") != 3 {
		t.Errorf("outputs differ or lack the three digests:\n%s\n%s", outs[0], outs[1])
	}
	for _, name := range []string{"knmstate.json", "pause.json", "knmstate-console-plugin.json", "knmstate/index.json", "pause/oci-layout", "knmstate-console-plugin/index.json"} {
		if _, ok := trees[0][name]; !ok {
			t.Errorf("%s not written", name)
		}
	}
}

func TestBadVersion(t *testing.T) {
	err := run(options{in: image.Inputs{Version: "v1+dirty"}, out: t.TempDir()}, nil, &bytes.Buffer{})
	if want := `--version "v1+dirty": not a valid image tag`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// tree maps each file below dir to its content's hash.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(data)
		files[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
