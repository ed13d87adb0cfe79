package lab

import (
	"slices"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/lab/labvm"
)

// TestAddGuestNetworkManager: a NetworkManager guest's image carries
// NetworkManager, nmcli, dbus-daemon and every plugin NetworkManager
// dlopens (they are in no program's DT_NEEDED), plus the directory nmrun
// binds over.
func TestAddGuestNetworkManager(t *testing.T) {
	img := labvm.Image{Programs: guestPrograms}
	if err := addGuestNetworkManager(&img); err != nil {
		t.Fatal(err)
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
