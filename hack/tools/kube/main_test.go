package main

import (
	"testing"

	cliflag "k8s.io/component-base/cli/flag"
)

// TestProxyFlags checks that kube-proxy gets the flags it has when built
// alone: cadvisor's machine flags, none of the ones the kubelet's packages
// register in Go's global flag set.
func TestProxyFlags(t *testing.T) {
	cmd := components["kube-proxy"]()
	cmd.SetGlobalNormalizationFunc(cliflag.WordSepNormalizeFunc) // as cli.Run does
	fs := cmd.Flags()
	for _, name := range []string{"boot-id-file", "machine-id-file", "config", "proxy-mode"} {
		if fs.Lookup(name) == nil {
			t.Errorf("kube-proxy has no --%s", name)
		}
	}
	for _, name := range []string{"housekeeping-interval", "docker-only", "storage-driver-db", "containerd"} {
		if fs.Lookup(name) != nil {
			t.Errorf("kube-proxy has the kubelet's cadvisor flag --%s", name)
		}
	}
}

// TestCommandNames checks that each name runs its own component.
func TestCommandNames(t *testing.T) {
	for name, newCommand := range components {
		if got := newCommand().Name(); got != name {
			t.Errorf("components[%q] builds %q", name, got)
		}
	}
}
