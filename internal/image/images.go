package image

import (
	"io/fs"
	"time"
)

// Source is where the images say they come from.
const Source = "https://github.com/knmstate/knmstate"

// CABundle is Debian's CA certificates bundle (package ca-certificates),
// the file the knmstate image carries and Go's crypto/x509 reads.
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// Inputs are the files of this machine the images are made of, and what
// their labels say.
type Inputs struct {
	// Knmstate is a static knmstate binary (CGO_ENABLED=0).
	Knmstate string
	// Pause is the static binary of hack/pause.
	Pause string
	// CABundle is the CA certificates bundle; default CABundle.
	CABundle string
	// Version is the images' version label (git describe).
	Version string
	// Revision is the commit the binaries were built from, if known.
	Revision string
	// Created is every file's mtime and the configs' creation time.
	Created time.Time
}

// KnmstateFiles are the files of the knmstate image: the binary,
// nmstatectl as a link to it (knmstate runs as nmstatectl under that
// name), the CA bundle the handler's API connections may need, and /tmp.
// The Dockerfile at the repository's root must name the same paths.
func KnmstateFiles(in Inputs) []File {
	ca := in.CABundle
	if ca == "" {
		ca = CABundle
	}
	return []File{
		{Path: "/usr/bin/knmstate", Mode: 0o755, Source: in.Knmstate},
		{Path: "/usr/bin/nmstatectl", Mode: fs.ModeSymlink | 0o777, Link: "knmstate"},
		{Path: CABundle, Mode: 0o644, Source: ca},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
}

// Knmstate is the knmstate image: every component (handler, controller,
// operator, webhook, nmstatectl) runs from it by its arguments.
func Knmstate(in Inputs) Spec {
	return Spec{
		Files:      KnmstateFiles(in),
		Entrypoint: []string{"/usr/bin/knmstate"},
		Env:        []string{"PATH=/usr/bin"},
		Labels:     labels(in, "knmstate", "Declarative node networking for Kubernetes (nmstate.io API); also nmstatectl"),
		Created:    in.Created,
	}
}

// ConsolePlugin is the OpenShift console plugin's image: the files of the
// knmstate image (so its one layer is the same blob, stored and pulled
// once) started as `knmstate console-plugin`, which serves the plugin
// embedded in the binary.
func ConsolePlugin(in Inputs) Spec {
	return Spec{
		Files:      KnmstateFiles(in),
		Entrypoint: []string{"/usr/bin/knmstate", "console-plugin"},
		Env:        []string{"PATH=/usr/bin"},
		Labels:     labels(in, "knmstate-console-plugin", "knmstate's web views as an OpenShift console plugin: node network topology, policies, node network states"),
		Created:    in.Created,
	}
}

// Pause is the lab's pause image, the sandbox every pod's containers join
// (what registry.k8s.io/pause is to a cluster on the Internet).
func Pause(in Inputs) Spec {
	return Spec{
		Files:      []File{{Path: "/pause", Mode: 0o755, Source: in.Pause}},
		Entrypoint: []string{"/pause"},
		Labels:     labels(in, "pause", "Holds a pod's namespaces: waits for SIGTERM/SIGINT and reaps zombies"),
		Created:    in.Created,
	}
}

func labels(in Inputs, title, description string) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       title,
		"org.opencontainers.image.description": description,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.version":     in.Version,
		"org.opencontainers.image.created":     in.Created.UTC().Format(time.RFC3339),
	}
	if in.Revision != "" {
		l["org.opencontainers.image.revision"] = in.Revision
	}
	return l
}
