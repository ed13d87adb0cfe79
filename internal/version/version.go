// Package version holds the build version of knmstate's binaries.
package version

// Version is overridden at link time with -ldflags "-X .../version.Version=...".
var Version = "0.1.0-dev"
