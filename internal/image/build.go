// Package image builds knmstate's OCI images from files of this machine:
// no base image, no container engine, one layer. It owns the layer's tar
// (sorted entries, root-owned, one fixed mtime), the image config and the
// OCI image layout directories they are written to, so that the same input
// files give the same digest on every run. It never pulls, pushes or runs
// anything; internal/testbed/lab/registry serves and pushes what it writes.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of an image's filesystem. Parent directories that are
// not listed are added with mode 0755.
type File struct {
	// Path is absolute, e.g. /usr/bin/knmstate.
	Path string
	// Mode is the type (0 for a regular file, fs.ModeDir, fs.ModeSymlink)
	// and the permissions, including fs.ModeSticky, fs.ModeSetuid and
	// fs.ModeSetgid. The source file's own mode is not used.
	Mode fs.FileMode
	// Source is the file on this machine whose content a regular file has.
	Source string
	// Link is a symlink's target.
	Link string
}

// Spec is a single-layer linux/amd64 image.
type Spec struct {
	Files      []File
	Entrypoint []string
	Env        []string
	Labels     map[string]string
	// Created is the config's creation time and every file's mtime. A
	// constant (the last commit's time) makes builds reproducible.
	Created time.Time
}

// Build returns the image of s: OCI media types, one gzip layer whose tar
// lists directories and files in path order, owned by root.
func Build(s Spec) (v1.Image, error) {
	created := s.Created.UTC().Truncate(time.Second)
	layerTar, err := layerTar(s.Files, created)
	if err != nil {
		return nil, err
	}
	// Compressed once here (the library would compress again for every
	// read); compress/gzip's output depends only on its input and level.
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(layerTar); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	cfg := &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: s.Entrypoint,
			Env:        s.Env,
			Labels:     s.Labels,
			WorkingDir: "/",
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "knmstate internal/image"},
	})
}

// layerTar is the uncompressed layer: files and their parents, sorted.
func layerTar(files []File, mtime time.Time) ([]byte, error) {
	entries := map[string]File{}
	var listed []string
	var errs []error
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			errs = append(errs, fmt.Errorf("%q: not a clean absolute path below /", f.Path))
			continue
		}
		if _, dup := entries[f.Path]; dup {
			errs = append(errs, fmt.Errorf("%s: listed twice", f.Path))
			continue
		}
		entries[f.Path] = f
		listed = append(listed, f.Path)
	}
	// Parents, after every listed file is known: a listed directory keeps
	// its own mode, a listed non-directory cannot be a parent.
	for _, p := range listed {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if parent, ok := entries[dir]; !ok {
				entries[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
			} else if !parent.Mode.IsDir() {
				errs = append(errs, fmt.Errorf("%s: parent %s is not a directory", p, dir))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	// A parent is a prefix of its children, so it sorts first.
	slices.Sort(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		if err := writeEntry(tw, entries[p], mtime); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, f File, mtime time.Time) error {
	hdr := &tar.Header{
		Name:    strings.TrimPrefix(f.Path, "/"),
		Mode:    tarMode(f.Mode),
		ModTime: mtime,
	}
	var content []byte
	switch f.Mode.Type() {
	case fs.ModeDir:
		hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
	case fs.ModeSymlink:
		if f.Link == "" {
			return fmt.Errorf("%s: symlink without a target", f.Path)
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
	case 0:
		if f.Source == "" {
			return fmt.Errorf("%s: regular file without a source", f.Path)
		}
		fi, err := os.Stat(f.Source)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: source %s is not a regular file", f.Path, f.Source)
		}
		if content, err = os.ReadFile(f.Source); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(content))
	default:
		return fmt.Errorf("%s: file type %v is not supported", f.Path, f.Mode.Type())
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if _, err := tw.Write(content); err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	return nil
}

// tarMode is f's permission bits in tar's (and stat's) encoding.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
