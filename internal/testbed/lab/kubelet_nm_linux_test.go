package lab

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/lab/nodeinit"
)

// TestNetworkManagerNode: a kubelet-mode NetworkManager node's bus and
// NetworkManager come as daemons with the node's /run/dbus and
// /run/NetworkManager bound from its directory, NetworkManager in a mount namespace of its own with the
// node's keyfile directory; eth0's profile is written once (a profile the
// node changed survives the next boot's spec) and lab exec points nmcli at
// the node's bus.
func TestNetworkManagerNode(t *testing.T) {
	dir := t.TempDir()
	n := &NodeState{Name: "node02"}
	mounts, daemons, err := (&kubeletLab{}).networkManagerNode(n, dir, []string{"PATH=/usr/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []nodeinit.Mount{{Source: filepath.Join(dir, "run-dbus"), Target: "/run/dbus"}, {Source: filepath.Join(dir, "run-nm"), Target: "/run/NetworkManager"}}; !slices.Equal(mounts, want) {
		t.Errorf("mounts %+v, want %+v", mounts, want)
	}
	if len(daemons) != 2 || daemons[0].Name != "dbus" || daemons[1].Name != "NetworkManager" {
		t.Fatalf("daemons %+v, want dbus then NetworkManager", daemons)
	}
	if d := daemons[0]; d.Ready != "/run/dbus/system_bus_socket" || d.PrivateMounts {
		t.Errorf("dbus daemon %+v: want ready on the node's socket, the node's mounts", d)
	}
	if d := daemons[1]; !d.PrivateMounts || !slices.Contains(d.Env, "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket") {
		t.Errorf("NetworkManager daemon %+v: want its own mount namespace and the node's bus", d)
	}
	conf, err := os.ReadFile(filepath.Join(dir, "nm", "NetworkManager.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"path=" + filepath.Join(dir, "etc/NetworkManager/system-connections") + "\n", "unmanaged-devices=interface-name:cni0;interface-name:veth????????\n"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("NetworkManager.conf lacks %q:\n%s", want, conf)
		}
	}
	profile := filepath.Join(dir, "etc/NetworkManager/system-connections/eth0.nmconnection")
	b, err := os.ReadFile(profile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"interface-name=eth0\n", "[ipv4]\nmethod=auto\ndhcp-hostname=node02\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("eth0 profile lacks %q:\n%s", want, b)
		}
	}
	if err := os.WriteFile(profile, []byte("changed by the node\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (&kubeletLab{}).networkManagerNode(n, dir, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(profile); string(b) != "changed by the node\n" {
		t.Errorf("eth0's profile rewritten at the next boot: %q", b)
	}
	wantBus := "unix:path=" + filepath.Join(dir, "run-dbus", "system_bus_socket")
	if n.NetworkManagerBus != wantBus {
		t.Errorf("bus %q, want %q", n.NetworkManagerBus, wantBus)
	}
	if got := execEnv(n); !slices.Equal(got, []string{"DBUS_SYSTEM_BUS_ADDRESS=" + wantBus}) {
		t.Errorf("exec environment %v", got)
	}
	if got := execEnv(&NodeState{}); got != nil {
		t.Errorf("exec environment of a node without NetworkManager %v", got)
	}
}
