package lab

import (
	"slices"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/initramfs"
	"github.com/knmstate/knmstate/internal/testbed/lab/labvm"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
)

// TestAddGuestNetworkManager: a NetworkManager guest's image carries
// NetworkManager, nmcli, dbus-daemon and every plugin NetworkManager
// dlopens (they are in no program's DT_NEEDED), plus the directory nmrun
// binds over. With an OVS build: Open vSwitch's programs and schema and
// that build's daemon, plugin and plugin directory file at their paths.
func TestAddGuestNetworkManager(t *testing.T) {
	img := labvm.Image{Programs: guestPrograms}
	if err := addGuestNetworkManager(&img, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range img.Programs {
		if strings.Contains(p, "ovs") {
			t.Errorf("image without OVS has %s", p)
		}
	}
	dir, err := nmPluginDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(guestNMPrograms, dir+"/libnm-device-plugin-team.so") {
		if !slices.Contains(img.Programs, p) {
			t.Errorf("image programs lack %s: %v", p, img.Programs)
		}
	}
	if !slices.Contains(img.Dirs, "/var/lib/NetworkManager") {
		t.Errorf("image dirs lack /var/lib/NetworkManager: %v", img.Dirs)
	}
	if id := strings.TrimSpace(string(img.Data["/etc/machine-id"])); len(id) != 32 {
		t.Errorf("machine id %q is not 32 hex digits", id)
	}

	b := &nmrun.Build{NetworkManager: "/x/nm-ovs/NetworkManager", Plugins: "/x/nm-ovs/plugins", PluginDir: dir}
	img = labvm.Image{Modules: guestModules[:len(guestModules)-1]}
	if err := addGuestNetworkManager(&img, b); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/usr/sbin/ovsdb-server", "/usr/sbin/ovs-vswitchd", "/usr/bin/ovsdb-tool", "/usr/bin/ovs-vsctl", b.NetworkManager, "/x/nm-ovs/plugins/libnm-device-plugin-ovs.so"} {
		if !slices.Contains(img.Programs, p) {
			t.Errorf("image with OVS: programs lack %s: %v", p, img.Programs)
		}
	}
	for _, f := range []string{"/x/nm-ovs/plugindir", ovsrun.DefaultSchema} {
		if img.Files[f] != f {
			t.Errorf("image with OVS: file %s is %q, want this machine's", f, img.Files[f])
		}
	}
	if !slices.ContainsFunc(img.Modules, func(m initramfs.ModuleRequest) bool { return m.Name == "openvswitch" }) {
		t.Errorf("image with OVS: modules lack openvswitch (the kernel datapath): %v", img.Modules)
	}
	// The image's list is a prefix of guestModules: appending must not
	// write over the next entry.
	if last := guestModules[len(guestModules)-1]; last.Name == "openvswitch" {
		t.Error("adding openvswitch to one image changed guestModules")
	}
}

// TestExecCommandNetworkManagerBus: `lab exec` on a NetworkManager node
// points nmcli at that node's bus; on a kernel node it adds nothing.
func TestExecCommandNetworkManagerBus(t *testing.T) {
	st := &State{Nodes: []NodeState{
		{Name: "nm", NetNS: "knml-x_nm", NetworkManagerBus: "unix:path=/tmp/x/nodes/nm/nm/bus.sock"},
		{Name: "kernel", NetNS: "knml-x_kernel"},
	}}
	for node, want := range map[string]string{"nm": "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/tmp/x/nodes/nm/nm/bus.sock", "kernel": ""} {
		cmd, err := execCommand(st, node, []string{"nmcli", "device"})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, e := range cmd.Env {
			if strings.HasPrefix(e, "DBUS_SYSTEM_BUS_ADDRESS=") {
				got = e
			}
		}
		if got != want {
			t.Errorf("node %s: exec environment has %q, want %q", node, got, want)
		}
	}
}
