// Command images builds knmstate's container images as OCI image layouts
// (internal/image): `make images` runs it on the static binaries of
// `make build`. It is a build step, not something a cluster runs, so it is
// a hack/ program rather than a knmstate subcommand; the lab needs only
// internal/image and internal/testbed/lab/registry, which it can import.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/knmstate/knmstate/internal/image"
)

type options struct {
	in    image.Inputs
	epoch int64
	out   string
}

// tagRE is the distribution spec's tag grammar.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

func main() {
	var o options
	flag.StringVar(&o.in.Knmstate, "knmstate", "bin/knmstate", "static knmstate binary")
	flag.StringVar(&o.in.Pause, "pause", "bin/pause", "static pause binary (hack/pause)")
	flag.StringVar(&o.in.CABundle, "ca-bundle", image.CABundle, "CA certificates bundle (Debian's ca-certificates)")
	flag.StringVar(&o.in.Version, "version", "", "version label and tag of the images (git describe)")
	flag.StringVar(&o.in.Revision, "revision", "", "commit label of the images")
	flag.Int64Var(&o.epoch, "created", 0, "creation time of the images and mtime of their files, seconds since 1970 (SOURCE_DATE_EPOCH: the last commit's time)")
	flag.StringVar(&o.out, "out", "bin/images", "directory of the image layouts")
	flag.Parse()
	if err := run(o, flag.Args(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(o options, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q", args)
	}
	if !tagRE.MatchString(o.in.Version) {
		return fmt.Errorf("--version %q: not a valid image tag", o.in.Version)
	}
	o.in.Created = time.Unix(o.epoch, 0).UTC()
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, img := range []struct {
		name string
		spec image.Spec
	}{
		{"knmstate", image.Knmstate(o.in)},
		{"knmstate-console-plugin", image.ConsolePlugin(o.in)},
		{"pause", image.Pause(o.in)},
	} {
		built, err := image.Build(img.spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", img.name, err))
			continue
		}
		rec, err := image.WriteLayout(o.out, img.name, o.in.Version, built)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", img.name, err))
			continue
		}
		size, err := compressedSize(built)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s:%s %s %.1f MB %s\n", rec.Name, rec.Tag, rec.Digest, float64(size)/1e6, filepath.Join(o.out, rec.Layout))
	}
	return errors.Join(errs...)
}

// compressedSize is what a pull transfers: manifest, config and layers.
func compressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	size := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, nil
}
