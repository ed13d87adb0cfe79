package image

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// created is the fixed time of the test images.
var created = time.Unix(1700000000, 0).UTC()

// entry is a tar entry as the tests compare it.
type entry struct {
	Name    string
	Type    byte
	Mode    int64
	Link    string
	Content string // sha256 of a regular file's content, first 8 hex digits
	UID     int
	GID     int
	ModTime time.Time
}

// layerEntries lists the entries of img's only layer.
func layerEntries(t *testing.T, img v1.Image) []entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []entry
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		e := entry{Name: hdr.Name, Type: hdr.Typeflag, Mode: hdr.Mode, Link: hdr.Linkname,
			UID: hdr.Uid, GID: hdr.Gid, ModTime: hdr.ModTime.UTC()}
		if hdr.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			e.Content = contentHash(string(data))
		}
		got = append(got, e)
	}
}

func contentHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// writeFile writes a source file with a mode and mtime of its own, which
// the image must not take over.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	return p
}

func dirEntry(name string, mode int64) entry {
	return entry{Name: name, Type: tar.TypeDir, Mode: mode, ModTime: created}
}

func regEntry(name string, mode int64, content string) entry {
	return entry{Name: name, Type: tar.TypeReg, Mode: mode, Content: contentHash(content), ModTime: created}
}

func TestBuildLayer(t *testing.T) {
	dir := t.TempDir()
	bin := writeFile(t, dir, "knmstate", "fake knmstate binary")
	ca := writeFile(t, dir, "ca.crt", "fake CA bundle")
	pause := writeFile(t, dir, "pause", "fake pause binary")
	in := Inputs{Knmstate: bin, Pause: pause, CABundle: ca, Version: "v1", Created: created}
	tests := []struct {
		name  string
		files []File
		want  []entry
	}{{
		name:  "knmstate image",
		files: KnmstateFiles(in),
		want: []entry{
			dirEntry("etc/", 0o755),
			dirEntry("etc/ssl/", 0o755),
			dirEntry("etc/ssl/certs/", 0o755),
			regEntry("etc/ssl/certs/ca-certificates.crt", 0o644, "fake CA bundle"),
			dirEntry("tmp/", 0o1777),
			dirEntry("usr/", 0o755),
			dirEntry("usr/bin/", 0o755),
			regEntry("usr/bin/knmstate", 0o755, "fake knmstate binary"),
			{Name: "usr/bin/nmstatectl", Type: tar.TypeSymlink, Mode: 0o777, Link: "knmstate", ModTime: created},
		},
	}, {
		name:  "pause image",
		files: Pause(in).Files,
		want:  []entry{regEntry("pause", 0o755, "fake pause binary")},
	}, {
		name: "a listed parent keeps its mode, special bits kept",
		files: []File{
			{Path: "/opt/x/tool", Mode: fs.ModeSetuid | fs.ModeSetgid | 0o750, Source: bin},
			{Path: "/opt", Mode: fs.ModeDir | 0o700},
		},
		want: []entry{
			dirEntry("opt/", 0o700),
			dirEntry("opt/x/", 0o755),
			regEntry("opt/x/tool", 0o6750, "fake knmstate binary"),
		},
	}, {
		// Byte order of the paths ('-' < '/'); a parent is a prefix of
		// its children, so it still comes first.
		name: "sorted by path, parents first",
		files: []File{
			{Path: "/b", Mode: 0o644, Source: ca},
			{Path: "/a/z", Mode: 0o644, Source: ca},
			{Path: "/a-b", Mode: 0o644, Source: ca},
		},
		want: []entry{
			dirEntry("a/", 0o755),
			regEntry("a-b", 0o644, "fake CA bundle"),
			regEntry("a/z", 0o644, "fake CA bundle"),
			regEntry("b", 0o644, "fake CA bundle"),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img, err := Build(Spec{Files: tc.files, Created: created})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, layerEntries(t, img)); diff != "" {
				t.Errorf("layer (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "f", "x")
	tests := []struct {
		name  string
		files []File
		want  string
	}{
		{"relative path", []File{{Path: "usr/bin/x", Mode: 0o755, Source: src}}, `"usr/bin/x": not a clean absolute path below /`},
		{"unclean path", []File{{Path: "/usr//x", Mode: 0o755, Source: src}}, `"/usr//x": not a clean absolute path below /`},
		{"root", []File{{Path: "/", Mode: fs.ModeDir | 0o755}}, `"/": not a clean absolute path below /`},
		{"listed twice", []File{{Path: "/x", Mode: 0o644, Source: src}, {Path: "/x", Mode: 0o644, Source: src}}, "/x: listed twice"},
		{"parent not a directory", []File{{Path: "/x", Mode: 0o644, Source: src}, {Path: "/x/y", Mode: 0o644, Source: src}}, "/x/y: parent /x is not a directory"},
		{"missing source", []File{{Path: "/x", Mode: 0o644, Source: filepath.Join(dir, "nope")}}, "/x: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"source is a directory", []File{{Path: "/x", Mode: 0o644, Source: dir}}, "/x: source " + dir + " is not a regular file"},
		{"no source", []File{{Path: "/x", Mode: 0o644}}, "/x: regular file without a source"},
		{"symlink without target", []File{{Path: "/x", Mode: fs.ModeSymlink | 0o777}}, "/x: symlink without a target"},
		{"device", []File{{Path: "/dev/null", Mode: fs.ModeDevice | 0o666}}, "/dev/null: file type D--------- is not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(Spec{Files: tc.files, Created: created})
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	in := Inputs{Knmstate: writeFile(t, dir, "knmstate", "k"), Pause: writeFile(t, dir, "pause", "p"),
		CABundle: writeFile(t, dir, "ca", "c"), Version: "v0.1.0-3-gabc", Revision: "abc", Created: created}
	for _, tc := range []struct {
		name string
		spec Spec
		want v1.Config
	}{{
		name: "knmstate",
		spec: Knmstate(in),
		want: v1.Config{
			Entrypoint: []string{"/usr/bin/knmstate"},
			Env:        []string{"PATH=/usr/bin"},
			WorkingDir: "/",
			Labels: map[string]string{
				"org.opencontainers.image.title":       "knmstate",
				"org.opencontainers.image.description": "Declarative node networking for Kubernetes (nmstate.io API); also nmstatectl",
				"org.opencontainers.image.source":      "https://github.com/knmstate/knmstate",
				"org.opencontainers.image.version":     "v0.1.0-3-gabc",
				"org.opencontainers.image.revision":    "abc",
				"org.opencontainers.image.created":     "2023-11-14T22:13:20Z",
			},
		},
	}, {
		name: "pause",
		spec: Pause(in),
		want: v1.Config{
			Entrypoint: []string{"/pause"},
			WorkingDir: "/",
			Labels: map[string]string{
				"org.opencontainers.image.title":       "pause",
				"org.opencontainers.image.description": "Holds a pod's namespaces: waits for SIGTERM/SIGINT and reaps zombies",
				"org.opencontainers.image.source":      "https://github.com/knmstate/knmstate",
				"org.opencontainers.image.version":     "v0.1.0-3-gabc",
				"org.opencontainers.image.revision":    "abc",
				"org.opencontainers.image.created":     "2023-11-14T22:13:20Z",
			},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := Build(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cf.Config); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(created) || len(cf.RootFS.DiffIDs) != 1 {
				t.Errorf("os %q, architecture %q, created %v, %d diff ids; want linux, amd64, %v, 1",
					cf.OS, cf.Architecture, cf.Created.Time, len(cf.RootFS.DiffIDs), created)
			}
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			got := []types.MediaType{m.MediaType, m.Config.MediaType}
			for _, l := range m.Layers {
				got = append(got, l.MediaType)
			}
			if diff := cmp.Diff([]types.MediaType{types.OCIManifestSchema1, types.OCIConfigJSON, types.OCILayer}, got); diff != "" {
				t.Errorf("media types (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReproducible: the same contents give the same digest, whatever the
// source files' own modes, mtimes and names; another Created does not.
func TestReproducible(t *testing.T) {
	digest := func(dir string, mode fs.FileMode, mtime, created time.Time) v1.Hash {
		t.Helper()
		in := Inputs{Version: "v1", Created: created}
		for _, f := range []struct {
			p       *string
			content string
		}{{&in.Knmstate, "knmstate"}, {&in.CABundle, "ca"}} {
			*f.p = filepath.Join(dir, strings.Repeat("x", len(dir)%7+1)+f.content)
			if err := os.WriteFile(*f.p, []byte(f.content), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(*f.p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
		img, err := Build(Knmstate(in))
		if err != nil {
			t.Fatal(err)
		}
		h, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := digest(t.TempDir(), 0o600, time.Unix(1, 0), created)
	b := digest(t.TempDir(), 0o755, time.Now(), created)
	if a != b {
		t.Errorf("same contents, digests %v and %v", a, b)
	}
	if c := digest(t.TempDir(), 0o600, time.Unix(1, 0), created.Add(time.Second)); c == a {
		t.Errorf("another creation time, same digest %v", c)
	}
}
