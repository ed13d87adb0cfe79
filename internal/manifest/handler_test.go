package manifest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestHandlerMountsUpstreamHostPaths: the handler's pod sees the node's
// system bus, OVSDB and upstream's lock directory at upstream's paths, by
// directories that exist on any node (a Socket-typed mount would keep the
// pod from starting where NetworkManager does not run), and D-Bus clients
// in the pod find the bus without a /var/run link.
func TestHandlerMountsUpstreamHostPaths(t *testing.T) {
	ds := HandlerDaemonSet(Params{})
	pod := ds.Spec.Template.Spec
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	ctr := pod.Containers[0]
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	for _, tc := range []struct{ volume, path string }{
		{"dbus", "/run/dbus"},
		{"ovs", "/run/openvswitch"},
		{"nmstate-lock", "/var/k8s_nmstate"},
	} {
		v, ok := vols[tc.volume]
		if !ok || v.HostPath == nil {
			t.Errorf("volume %s: not a hostPath: %+v", tc.volume, v)
			continue
		}
		if v.HostPath.Path != tc.path || v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate {
			t.Errorf("volume %s: hostPath %s type %v, want %s DirectoryOrCreate", tc.volume, v.HostPath.Path, v.HostPath.Type, tc.path)
		}
		if mounts[tc.volume] != tc.path {
			t.Errorf("volume %s mounted at %q, want %s (the host's path)", tc.volume, mounts[tc.volume], tc.path)
		}
	}
	found := false
	for _, e := range ctr.Env {
		found = found || e.Name == "DBUS_SYSTEM_BUS_ADDRESS" && e.Value == "unix:path=/run/dbus/system_bus_socket"
	}
	if !found {
		t.Errorf("no DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket in %+v", ctr.Env)
	}
}
