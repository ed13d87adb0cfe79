package image

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Record says which image a layout directory holds; it is written next
// to the directory as NAME.json.
type Record struct {
	Name string `json:"name"`
	Tag  string `json:"tag"`
	// Digest is the image manifest's digest (sha256:...).
	Digest string `json:"digest"`
	// Layout is the OCI image layout directory, relative to the record.
	Layout string `json:"layout"`
}

// refName is the OCI annotation that names an image of a layout; skopeo,
// podman and `ctr images import` take the tag from it.
const refName = "org.opencontainers.image.ref.name"

// WriteLayout writes img as the only image of the OCI image layout
// DIR/NAME, annotated with tag, replacing what was there, and its record
// as DIR/NAME.json.
func WriteLayout(dir, name, tag string, img v1.Image) (Record, error) {
	digest, err := img.Digest()
	if err != nil {
		return Record{}, err
	}
	rec := Record{Name: name, Tag: tag, Digest: digest.String(), Layout: name}
	ld := filepath.Join(dir, name)
	// Removed first: appending to an old layout would keep its images.
	if err := os.RemoveAll(ld); err != nil {
		return Record{}, err
	}
	p, err := layout.Write(ld, empty.Index)
	if err != nil {
		return Record{}, fmt.Errorf("layout %s: %w", ld, err)
	}
	if err := p.AppendImage(img,
		layout.WithAnnotations(map[string]string{refName: tag}),
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"})); err != nil {
		return Record{}, fmt.Errorf("layout %s: %w", ld, err)
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return Record{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(data, '\n'), 0o644); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// ReadLayout returns the image of an OCI image layout that holds exactly
// one, as WriteLayout writes them.
func ReadLayout(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("layout %s: %d images, want 1", dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", dir, err)
	}
	return img, nil
}

// ReadRecord reads the record DIR/NAME.json that WriteLayout wrote.
func ReadRecord(dir, name string) (Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		return Record{}, fmt.Errorf("image record: %w", err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, fmt.Errorf("image record %s: %w", filepath.Join(dir, name+".json"), err)
	}
	if rec.Name != name || rec.Digest == "" || rec.Layout == "" {
		return Record{}, fmt.Errorf("image record %s: name %q, digest %q, layout %q: incomplete", filepath.Join(dir, name+".json"), rec.Name, rec.Digest, rec.Layout)
	}
	return rec, nil
}
