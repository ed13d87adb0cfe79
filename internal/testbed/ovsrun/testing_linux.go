package ovsrun

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// ForTest starts a private OVS for a test in a temp dir, with ovs-vswitchd
// in netns (unless netns is "-": database server only), and stops it with
// t.Cleanup (registered before anything starts). The daemons' logs are
// printed when the test failed.
func ForTest(t testing.TB, netns string) *OVS {
	t.Helper()
	dir := t.TempDir()
	var o *OVS
	t.Cleanup(func() {
		if o != nil {
			if err := o.Stop(); err != nil {
				t.Errorf("ovsrun: stopping OVS: %v", err)
			}
		}
		if t.Failed() {
			for _, name := range []string{"ovsdb-server.log", "ovs-vswitchd.log"} {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
					t.Logf("%s:\n%s", name, b)
				}
			}
		}
	})
	var err error
	o, err = Start(context.Background(), Options{Dir: dir, NetNS: netns, NoVSwitchd: netns == "-"})
	if err != nil {
		t.Fatalf("ovsrun: %v", err)
	}
	return o
}
