package nmrun

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// Build is a NetworkManager built with its Open vSwitch device plugin.
// Debian's network-manager package is configured with --disable-ovs (no
// libnm-device-plugin-ovs.so, and the daemon does not export what the
// plugin needs), so hack/nm-ovs.sh (run by make setup) builds Debian's own
// source of the installed version with OVS enabled into bin/nm-ovs.
type Build struct {
	// NetworkManager is the daemon.
	NetworkManager string
	// Plugins is the directory holding libnm-device-plugin-ovs.so.
	Plugins string
	// PluginDir is the daemon's compile-time plugin directory, where
	// Plugins is bound.
	PluginDir string
}

// BuildDir is where hack/nm-ovs.sh puts the build, below the repository.
const BuildDir = "bin/nm-ovs"

// OVSBuild finds the NetworkManager with the OVS plugin.
func OVSBuild() (*Build, error) {
	root, err := testenv.FindRepoRoot()
	if err != nil {
		return nil, fmt.Errorf("nmrun: %w", err)
	}
	return BuildAt(filepath.Join(root, BuildDir))
}

// BuildAt finds the NetworkManager with the OVS plugin that hack/nm-ovs.sh
// built into dir (a lab's qemu guest carries it at this machine's path).
func BuildAt(dir string) (*Build, error) {
	b := &Build{NetworkManager: filepath.Join(dir, "NetworkManager"), Plugins: filepath.Join(dir, "plugins")}
	pd, err := os.ReadFile(filepath.Join(dir, "plugindir"))
	if err != nil {
		return nil, fmt.Errorf("nmrun: no NetworkManager with the OVS plugin in %s (make setup builds it: hack/nm-ovs.sh; Debian's is built without OVS): %w", dir, err)
	}
	b.PluginDir = strings.TrimSpace(string(pd))
	for _, f := range []string{b.NetworkManager, filepath.Join(b.Plugins, "libnm-device-plugin-ovs.so"), b.PluginDir} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("nmrun: NetworkManager with the OVS plugin: %w (make setup builds it: hack/nm-ovs.sh)", err)
		}
	}
	return b, nil
}
