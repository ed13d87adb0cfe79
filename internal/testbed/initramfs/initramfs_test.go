package initramfs

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// member is one entry of a newc archive as read back.
type member struct {
	Mode uint32
	Data string
}

// readCpio parses a newc archive, stopping at the trailer.
func readCpio(t *testing.T, b []byte) (map[string]member, []string) {
	t.Helper()
	out := map[string]member{}
	var order []string
	r := bytes.NewReader(b)
	pad := func() {
		off, _ := r.Seek(0, io.SeekCurrent)
		if m := off % 4; m != 0 {
			r.Seek(4-m, io.SeekCurrent)
		}
	}
	for {
		h := make([]byte, 110)
		if _, err := io.ReadFull(r, h); err != nil {
			t.Fatalf("reading a header: %v", err)
		}
		if string(h[:6]) != newcMagic {
			t.Fatalf("bad magic %q", h[:6])
		}
		field := func(i int) uint64 {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		mode, size, namesize := field(1), field(6), field(11)
		name := make([]byte, namesize)
		io.ReadFull(r, name)
		pad()
		data := make([]byte, size)
		io.ReadFull(r, data)
		pad()
		n := strings.TrimSuffix(string(name), "\x00")
		if n == trailer {
			return out, order
		}
		out[n] = member{Mode: uint32(mode), Data: string(data)}
		order = append(order, n)
	}
}

func write(t *testing.T, a *Archive) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := a.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if b.Len()%4 != 0 {
		t.Errorf("archive of %d bytes is not padded to 4", b.Len())
	}
	return b.Bytes()
}

// TestArchive: files below a symlinked directory land where the link
// points, parents come first, and the same archive gives the same bytes.
func TestArchive(t *testing.T) {
	build := func() *Archive {
		a := New()
		for _, err := range []error{
			a.AddSymlink("/lib", "usr/lib"),
			a.AddBytes("/lib/modules/a.ko", []byte("module a"), 0o644),
			a.AddBytes("/init", []byte("#!/bin/sh\n"), 0o755),
			a.AddDir("/proc", 0o555),
			a.AddBytes("/init", []byte("#!/bin/sh\n"), 0o755), // the same again: fine
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	b := write(t, build())
	if !bytes.Equal(b, write(t, build())) {
		t.Error("two writes of the same archive differ")
	}
	got, order := readCpio(t, b)
	want := map[string]member{
		".":                    {Mode: modeDir | 0o755},
		"init":                 {Mode: modeFile | 0o755, Data: "#!/bin/sh\n"},
		"lib":                  {Mode: modeSymlink | 0o777, Data: "usr/lib"},
		"proc":                 {Mode: modeDir | 0o555},
		"usr":                  {Mode: modeDir | 0o755},
		"usr/lib":              {Mode: modeDir | 0o755},
		"usr/lib/modules":      {Mode: modeDir | 0o755},
		"usr/lib/modules/a.ko": {Mode: modeFile | 0o644, Data: "module a"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("archive (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{".", "init", "lib", "proc", "usr", "usr/lib", "usr/lib/modules", "usr/lib/modules/a.ko"}, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestArchiveConflicts(t *testing.T) {
	tests := []struct {
		name string
		add  func(a *Archive) error
	}{
		{"other content", func(a *Archive) error {
			_ = a.AddBytes("/etc/x", []byte("1"), 0o644)
			return a.AddBytes("/etc/x", []byte("2"), 0o644)
		}},
		{"file under a file", func(a *Archive) error {
			_ = a.AddBytes("/etc", nil, 0o644)
			return a.AddBytes("/etc/x", nil, 0o644)
		}},
		{"relative path", func(a *Archive) error { return a.AddBytes("etc/x", nil, 0o644) }},
		{"symlink loop", func(a *Archive) error {
			_ = a.AddSymlink("/a", "/b")
			_ = a.AddSymlink("/b", "/a")
			return a.AddBytes("/a/x", nil, 0o644)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.add(New()); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestAddHostPath: the symlinks on the way to a file of this machine come
// along, so the guest resolves the path the same way.
func TestAddHostPath(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr", "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr", "lib", "libx.so.1.2"), []byte("ELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"lib":               "usr/lib",                         // relative directory link
		"usr/lib/libx.so.1": "libx.so.1.2",                     // relative file link
		"lib64":             filepath.Join(root, "usr", "lib"), // absolute link
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	a := New()
	for _, p := range []string{filepath.Join(root, "lib", "libx.so.1"), filepath.Join(root, "lib64", "libx.so.1.2")} {
		if err := a.AddHostPath(p); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := readCpio(t, write(t, a))
	r := strings.TrimPrefix(root, "/")
	want := map[string]member{
		r + "/lib":                 {Mode: modeSymlink | 0o777, Data: "usr/lib"},
		r + "/lib64":               {Mode: modeSymlink | 0o777, Data: filepath.Join(root, "usr", "lib")},
		r + "/usr/lib/libx.so.1":   {Mode: modeSymlink | 0o777, Data: "libx.so.1.2"},
		r + "/usr/lib/libx.so.1.2": {Mode: modeFile | 0o755, Data: "ELF"},
	}
	for p, m := range want {
		if diff := cmp.Diff(m, got[p]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
	}
}

// TestDependencies reads real programs of this machine (make setup
// installs busybox-static and iproute2).
func TestDependencies(t *testing.T) {
	static, err := Dependencies("/bin/busybox", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(static) != 0 {
		t.Errorf("static busybox needs %v, want nothing", static)
	}
	deps, err := Dependencies("/usr/bin/ip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) < 2 || deps[0] != "/lib64/ld-linux-x86-64.so.2" {
		t.Fatalf("ip needs %v, want the interpreter first", deps)
	}
	libc := false
	for _, d := range deps {
		libc = libc || filepath.Base(d) == "libc.so.6"
	}
	if !libc {
		t.Errorf("ip needs %v, no libc.so.6", deps)
	}
}

const modRoot, modRelease = "testdata/modroot", "6.1.0-test"

func TestResolveModules(t *testing.T) {
	tests := []struct {
		name    string
		reqs    string // a module list
		want    []string
		wantErr string
	}{
		{name: "dependency first, parameters on the requested one", reqs: "bonding max_bonds=0\n",
			want: []string{"tls", "bonding max_bonds=0"}},
		{name: "transitive dependencies in modprobe's order", reqs: "8021q\n",
			want: []string{"llc", "stp", "mrp", "garp", "8021q"}},
		{name: "each module once", reqs: "# comment\n\n8021q\nllc\nbonding\n",
			want: []string{"llc", "stp", "mrp", "garp", "8021q", "tls", "bonding"}},
		{name: "soft dependency through an alias", reqs: "openvswitch\n",
			want: []string{"crc32c_intel", "crc32c_generic", "libcrc32c", "nsh", "openvswitch"}},
		{name: "built into the kernel", reqs: "af_packet\nipv6\n", want: nil},
		{name: "dashes and underscores", reqs: "crc32c-intel\n", want: []string{"crc32c_intel"}},
		{name: "unknown", reqs: "nosuchmodule\n", wantErr: "module nosuchmodule: not found in 6.1.0-test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mods, err := ResolveModules(modRoot, modRelease, ParseModuleList([]byte(tt.reqs)))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range mods {
				got = append(got, strings.TrimSpace(m.Name+" "+m.Params))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("modules (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAddModules: compressed modules are stored uncompressed, and the
// load list names them with their parameters.
func TestAddModules(t *testing.T) {
	mods, err := ResolveModules(modRoot, modRelease, []ModuleRequest{{Name: "dummy", Params: "numdummies=0"}})
	if err != nil {
		t.Fatal(err)
	}
	a := New()
	list, err := a.AddModules("/lib/modules", mods)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(list), "dummy.ko numdummies=0\n"; got != want {
		t.Errorf("load list %q, want %q", got, want)
	}
	got, _ := readCpio(t, write(t, a))
	if m := got["lib/modules/dummy.ko"]; m.Data != "dummy module\n" {
		t.Errorf("lib/modules/dummy.ko holds %q", m.Data)
	}
}
