package labnet

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// testLabName is unique per test process, so concurrent test runs never
// sweep each other's namespaces.
func testLabName(t *testing.T, tag string) string {
	return "t" + strconv.Itoa(os.Getpid()) + "-" + tag
}

func nsenter(t *testing.T, node *Node, args ...string) string {
	t.Helper()
	cmd := exec.Command("nsenter", append([]string{"--net=" + node.NS.Path, "--mount=" + node.MountNS, "--uts=" + node.UTSNS, "--"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter %v: %v: %s", args, err, out)
	}
	return string(out)
}

func TestNamedSwitchWithNodeNamespaces(t *testing.T) {
	lab := testLabName(t, "ns")
	dir := t.TempDir()
	sw := newTestSwitch(t, Options{Name: lab, Dir: dir, NodeNamespaces: true})
	node, err := sw.AddNode("node01", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if want := Prefix + lab + "_switch"; sw.NS.Name != want {
		t.Errorf("switch namespace %q, want %q", sw.NS.Name, want)
	}
	if want := NamespaceName(lab, "node01"); node.NS.Name != want {
		t.Errorf("node namespace %q, want %q", node.NS.Name, want)
	}
	if !strings.HasPrefix(sw.Dir, dir+"/") {
		t.Errorf("switch dir %s not under %s", sw.Dir, dir)
	}
	names, err := Namespaces(lab)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 {
		t.Errorf("Namespaces(%q) = %v, want the switch and node01", lab, names)
	}
	want, err := os.ReadFile(node.ResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	if got := nsenter(t, node, "cat", "/etc/resolv.conf"); got != string(want) {
		t.Errorf("/etc/resolv.conf in the node = %q, want the node's own %q", got, want)
	}
	if got := nsenter(t, node, "hostname"); got != "node01\n" {
		t.Errorf("hostname in the node = %q, want node01", got)
	}
	host, _ := os.Hostname()
	if host == "node01" {
		t.Fatalf("host name changed to node01")
	}
	// A writer replacing the file by rename (the kernel backend) is told
	// the file is busy and rewrites it in place, which the node sees.
	tmp := filepath.Join(filepath.Dir(node.ResolvConf), ".resolv.tmp")
	if err := os.WriteFile(tmp, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, node.ResolvConf); err == nil || !strings.Contains(err.Error(), unix.EBUSY.Error()) {
		t.Errorf("rename onto resolv.conf: %v, want EBUSY", err)
	}
	if err := os.WriteFile(node.ResolvConf, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := nsenter(t, node, "cat", "/etc/resolv.conf"); got != "nameserver 192.0.2.53\n" {
		t.Errorf("/etc/resolv.conf in the node after an in-place write = %q", got)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if mps, err := MountsUnder(dir); err != nil || len(mps) != 0 {
		t.Errorf("mounts left under %s after Close: %v (%v)", dir, mps, err)
	}
	if names, _ := Namespaces(lab); len(names) != 0 {
		t.Errorf("namespaces left after Close: %v", names)
	}
}

// TestSweep removes what an owner that never called Close left behind.
func TestSweep(t *testing.T) {
	lab := testLabName(t, "sweep")
	dir := t.TempDir()
	sw := newTestSwitch(t, Options{Name: lab, Dir: dir, NodeNamespaces: true})
	if _, err := sw.AddNode("node01", "eth0", "eth1"); err != nil {
		t.Fatal(err)
	}
	pid := sw.dnsmasq.Process.Pid
	if err := Sweep(lab, dir); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	<-sw.exited
	if names, _ := Namespaces(lab); len(names) != 0 {
		t.Errorf("namespaces left after Sweep: %v", names)
	}
	if mps, err := MountsUnder(dir); err != nil || len(mps) != 0 {
		t.Errorf("mounts left under %s after Sweep: %v (%v)", dir, mps, err)
	}
	if err := unix.Kill(pid, 0); err == nil {
		t.Errorf("dnsmasq %d alive after Sweep", pid)
	}
}

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"lab", true}, {"lab-2", true}, {"a", true},
		{"", false}, {"Lab", false}, {"a_b", false}, {"-a", false}, {"a-", false}, {"a.b", false},
		{strings.Repeat("x", 33), false},
	} {
		if err := ValidateName(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
