// Package web holds knmstate's web views (TypeScript, React, PatternFly,
// built by esbuild into dist/) and embeds the built bundle for `knmstate
// ui`. The bundle is not in git: `make build` builds it before the Go
// binary. dist/ always holds a committed placeholder, so a checkout that
// never ran npm still builds and vets; Bundle then reports the bundle
// missing and the UI server says how to build it.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Bundle returns the built views (index.html at the root) and whether
// they were built into this binary.
func Bundle() (fs.FS, bool) {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, false
	}
	if _, err := fs.Stat(sub, "index.html"); err != nil {
		return sub, false
	}
	return sub, true
}
