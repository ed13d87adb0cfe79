package registry

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/knmstate/knmstate/internal/image"
)

// syncBuffer is the registry's request log, written from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startRegistry serves a registry on a free port of 127.0.0.1 for the
// test's duration and returns its host:port and request log.
func startRegistry(t *testing.T) (string, *syncBuffer) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logw := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, logw) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String(), logw
}

// layouts builds the knmstate and pause images from small fake files and
// writes their layouts; it returns the layout directories by name.
func layouts(t *testing.T) map[string]image.Record {
	t.Helper()
	src, out := t.TempDir(), t.TempDir()
	in := image.Inputs{
		Knmstate: filepath.Join(src, "knmstate"), Pause: filepath.Join(src, "pause"), CABundle: filepath.Join(src, "ca.crt"),
		Version: "test", Created: time.Unix(1700000000, 0),
	}
	for _, p := range []string{in.Knmstate, in.Pause, in.CABundle} {
		if err := os.WriteFile(p, []byte("fake "+filepath.Base(p)+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	recs := map[string]image.Record{}
	for name, spec := range map[string]image.Spec{"knmstate": image.Knmstate(in), "pause": image.Pause(in)} {
		img, err := image.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := image.WriteLayout(out, name, "test", img)
		if err != nil {
			t.Fatal(err)
		}
		rec.Layout = filepath.Join(out, rec.Layout)
		recs[name] = rec
	}
	return recs
}

// TestPushPull: images pushed from their layouts come back by tag with
// the layouts' digests, blobs included.
func TestPushPull(t *testing.T) {
	host, logw := startRegistry(t)
	ctx := context.Background()
	for name, rec := range layouts(t) {
		t.Run(name, func(t *testing.T) {
			repoTag := "knmstate/" + name + ":lab"
			pushed, err := Push(ctx, rec.Layout, host, repoTag, nil)
			if err != nil {
				t.Fatal(err)
			}
			if pushed.String() != rec.Digest {
				t.Errorf("pushed digest %v, layout's %s", pushed, rec.Digest)
			}
			img := pull(t, host+"/"+repoTag)
			if d, err := img.Digest(); err != nil || d.String() != rec.Digest {
				t.Errorf("pulled digest %v (%v), want %s", d, err, rec.Digest)
			}
			// Reading every layer checks the blobs against their digests.
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range layers {
				rc, err := l.Compressed()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					t.Errorf("layer: %v", err)
				}
				rc.Close()
			}
		})
	}
	if log := logw.String(); !strings.Contains(log, "PUT /v2/knmstate/pause/manifests/lab") {
		t.Errorf("request log lacks the manifest push:\n%s", log)
	}
}

func pull(t *testing.T, ref string) v1.Image {
	t.Helper()
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(tag, remote.WithContext(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestPushErrors(t *testing.T) {
	host, _ := startRegistry(t)
	pause := layouts(t)["pause"].Layout
	nope := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		name, layout, host, repoTag, want string
	}{
		{"no tag", pause, host, "pause", "pushing " + pause + ": tag must be"},
		{"no layout", nope, host, "pause:lab", "layout " + nope + ": "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Push(context.Background(), tc.layout, tc.host, tc.repoTag, nil)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want it to start with %q", err, tc.want)
			}
		})
	}
}

// TestServeStops: Serve returns nil when its context ends, and the port
// is closed.
func TestServeStops(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, nil) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve still running 10 s after its context ended")
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Error("port still accepts connections")
	}
}
