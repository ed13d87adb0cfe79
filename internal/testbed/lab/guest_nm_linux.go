package lab

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/initramfs"
	"github.com/knmstate/knmstate/internal/testbed/lab/labvm"
	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
)

// Guest mode with the NetworkManager backend: every node of the guest runs
// its own NetworkManager (internal/testbed/nmrun, as in the default mode),
// so bonds, VLANs and VRFs made through NetworkManager get Debian's kernel.

// guestNMPrograms are NetworkManager, nmcli (`lab exec NODE -- nmcli`) and
// the bus daemon each node's instance gets.
var guestNMPrograms = []string{"/usr/sbin/NetworkManager", "/usr/bin/nmcli", "/usr/bin/dbus-daemon"}

// nmPluginDir is NetworkManager's plugin directory, named after its
// version (NetworkManager --version).
func nmPluginDir() (string, error) {
	out, err := exec.Command("/usr/sbin/NetworkManager", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("guest NetworkManager: NetworkManager --version (Debian's network-manager; make setup installs it): %w", err)
	}
	ver, _, _ := strings.Cut(strings.TrimSpace(string(out)), "-")
	return filepath.Join("/usr/lib/x86_64-linux-gnu/NetworkManager", ver), nil
}

// addGuestNetworkManager adds to the guest's image what NetworkManager
// needs besides its DT_NEEDED libraries: the plugins it dlopens from its
// versioned directory (each with its own libraries), files-only name
// service for dbus-daemon's credential look-ups, a machine id
// (NetworkManager derives stable ids from it) and the compile-time state
// directory nmrun binds each node's own over. With ovs, each node's Open
// vSwitch too (the programs ovsrun and the tests run, its schema) and the
// NetworkManager with its OVS plugin, at this machine's paths.
func addGuestNetworkManager(img *labvm.Image, ovs *nmrun.Build) error {
	dir, err := nmPluginDir()
	if err != nil {
		return err
	}
	plugins, err := filepath.Glob(filepath.Join(dir, "*.so"))
	if err != nil || len(plugins) == 0 {
		return fmt.Errorf("guest NetworkManager: no plugins in %s (%v)", dir, err)
	}
	for _, p := range guestNMPrograms {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("guest NetworkManager: %w (make setup installs network-manager and dbus-daemon)", err)
		}
	}
	img.Programs = append(append(img.Programs, guestNMPrograms...), plugins...)
	if img.Data == nil {
		img.Data = map[string][]byte{}
	}
	img.Data["/etc/nsswitch.conf"] = []byte("passwd: files\ngroup: files\nshadow: files\nhosts: files\n")
	// Private to the guest, the same in every lab.
	img.Data["/etc/machine-id"] = []byte("6b6e6d73746174656c616267756573a0\n")
	img.Dirs = append(img.Dirs, "/var/lib/NetworkManager", "/etc/NetworkManager")
	if ovs == nil {
		return nil
	}
	for _, p := range guestOVSPrograms {
		path, err := exec.LookPath(p)
		if err != nil {
			return fmt.Errorf("guest Open vSwitch: %w (Debian's openvswitch-switch; make setup installs it)", err)
		}
		img.Programs = append(img.Programs, path)
	}
	img.Programs = append(img.Programs, ovs.NetworkManager, filepath.Join(ovs.Plugins, "libnm-device-plugin-ovs.so"))
	// The kernel datapath (Options.ovsDatapath).
	img.Modules = append(slices.Clip(img.Modules), initramfs.ModuleRequest{Name: "openvswitch"})
	if img.Files == nil {
		img.Files = map[string]string{}
	}
	pd := filepath.Join(filepath.Dir(ovs.NetworkManager), "plugindir")
	img.Files[pd] = pd
	img.Files[ovsrun.DefaultSchema] = ovsrun.DefaultSchema
	return nil
}

// guestOVSPrograms are what a guest node's Open vSwitch runs (ovsrun) and
// what the tests ask it with (lab exec NODE -- ovs-vsctl).
var guestOVSPrograms = []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl"}

// startNetworkManagers starts each guest node's NetworkManager once the
// nodes are up and waits for eth0's leases (NetworkManager configures
// eth0), before the agent reports the network ready: the supervisor then
// learns each node's bus with the nodes.
func (a *agent) startNetworkManagers(ctx context.Context, sw *labnet.Switch, nodes []NodeState, teardown *[]func()) error {
	s := a.s
	if s.opts.Backend != BackendNetworkManager {
		return nil
	}
	t := time.Now()
	if err := s.startNetworkManagers(ctx, sw, nodes, teardown); err != nil {
		return err
	}
	s.mu.Lock()
	s.state.Nodes = append([]NodeState(nil), nodes...)
	s.mu.Unlock()
	s.publish()
	s.step("NetworkManager per node", t)
	return nil
}

// nodeEnv is the environment an exec on a node adds: the node's
// NetworkManager bus, so `lab exec NODE -- nmcli` talks to that node's
// NetworkManager.
func (a *agent) nodeEnv(node string) []string {
	st := a.s.snapshot()
	n, err := st.Node(node)
	if err != nil {
		return nil
	}
	return execEnv(n)
}
