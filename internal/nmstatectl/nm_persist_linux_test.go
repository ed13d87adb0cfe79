package nmstatectl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLINetworkManagerPersistsByDefault: as upstream's nmstatectl, apply
// saves profiles to the keyfile directory; --memory-only keeps them in
// NetworkManager's run directory; --persist, the former opt-in, is
// accepted and changes nothing.
func TestCLINetworkManagerPersistsByDefault(t *testing.T) {
	n, in := newNMCLINode(t)
	onDisk := func(name string) bool {
		_, err := os.Stat(filepath.Join(in.KeyfileDir, name+".nmconnection"))
		return err == nil
	}
	inRun := func(name string) bool {
		_, err := os.Stat(filepath.Join(in.RunDir, "system-connections", name+".nmconnection"))
		return err == nil
	}
	for _, tc := range []struct {
		name   string
		args   []string
		onDisk bool
	}{
		{"br7", nil, true},
		{"br8", []string{"--memory-only"}, false},
		{"br9", []string{"--persist"}, true},
	} {
		n.mustRun(t, strings.ReplaceAll(strings.ReplaceAll(nmCLIBridge, "br7", tc.name), "198.51.100.7", "198.51.100."+tc.name[2:]), append([]string{"apply"}, tc.args...)...)
		if got := onDisk(tc.name); got != tc.onDisk {
			t.Errorf("apply %v: %s's keyfile on disk %v, want %v", tc.args, tc.name, got, tc.onDisk)
		}
		if got := inRun(tc.name); got == tc.onDisk {
			t.Errorf("apply %v: %s's profile in the run directory %v, want %v", tc.args, tc.name, got, !tc.onDisk)
		}
	}
}
