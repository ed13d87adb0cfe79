package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFirstBootDirOptions: the directory is made absolute; a missing one,
// a file, or a mode other than the default is refused naming the flag.
func TestFirstBootDirOptions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "node02.yml")
	if err := os.WriteFile(file, []byte("interfaces: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts Options
		want string // "" = no error
	}{
		{"directory", Options{Dir: "/tmp/x", Binary: "/bin/true", APIServer: "/x", FirstBootDir: dir}, ""},
		{"missing", Options{Dir: "/tmp/x", Binary: "/bin/true", APIServer: "/x", FirstBootDir: filepath.Join(dir, "nope")}, "first-boot-dir: stat "},
		{"a file", Options{Dir: "/tmp/x", Binary: "/bin/true", APIServer: "/x", FirstBootDir: file}, "first-boot-dir: not a directory"},
		{"kubelet mode", Options{Dir: "/tmp/x", Binary: "/bin/true", APIServer: "/x", Kubelet: true, Images: "/i", KubeBinDir: "/k", FirstBootDir: dir}, "first-boot-dir: only in the default mode on the kernel backend"},
		{"networkmanager nodes", Options{Dir: "/tmp/x", Binary: "/bin/true", APIServer: "/x", Backend: BackendNetworkManager, FirstBootDir: dir}, "first-boot-dir: only in the default mode on the kernel backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := tc.opts.withDefaults()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !filepath.IsAbs(o.FirstBootDir) {
					t.Errorf("FirstBootDir %q is not absolute", o.FirstBootDir)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
