// Package plugin holds knmstate's web views built as an OpenShift console
// dynamic plugin (webpack with the console's SDK, into dist/) and embeds
// the build for `knmstate console-plugin`, which serves it to the console.
// The build is not in git: `make web` makes it before the Go binary.
// dist/ always holds a committed placeholder, so a checkout that never
// ran npm still builds and vets; Assets then reports the plugin missing.
package plugin

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// ManifestFile is what the console reads first: the plugin's name,
// extensions and entry script.
const ManifestFile = "plugin-manifest.json"

// Assets returns the built plugin (plugin-manifest.json at the root) and
// whether it was built into this binary.
func Assets() (fs.FS, bool) {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, false
	}
	if _, err := fs.Stat(sub, ManifestFile); err != nil {
		return sub, false
	}
	return sub, true
}
