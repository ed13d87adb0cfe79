package lab

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"bad name", Options{Name: "Lab_1", Dir: "/tmp/x", Binary: "/bin/true"}, `name: "Lab_1" is not a valid name (lower case letters, digits and inner dashes, at most 32 characters)`},
		{"too many nodes", Options{Nodes: 51, Dir: "/tmp/x", Binary: "/bin/true"}, "nodes: 51 is out of range 1..50"},
		{"root dir", Options{Dir: "/", Binary: "/bin/true"}, "dir: / cannot be a lab directory"},
		{"unknown install", Options{Dir: "/tmp/x", Binary: "/bin/true", Kubelet: true, Install: "helm"}, `install: "helm" is not one of manifests, operator, payload, none`},
		{"payload without a platform", Options{Dir: "/tmp/x", Binary: "/bin/true", Kubelet: true, Install: InstallPayload}, "install: payload needs --openshift-platform"},
		{"openshift without kubelets", Options{Dir: "/tmp/x", Binary: "/bin/true", OpenShiftPlatform: "BareMetal"}, "openshift-platform: needs kubelet mode (--kubelet)"},
		{"openshift with the operator bundle", Options{Dir: "/tmp/x", Binary: "/bin/true", Kubelet: true, OpenShiftPlatform: "AWS", Install: InstallOperator}, "install: operator with --openshift-platform: the payload (deploy/openshift) or none"},
		{"operator without kubelets", Options{Dir: "/tmp/x", Binary: "/bin/true", Install: InstallOperator}, "install: operator needs kubelet mode (--kubelet)"},
		{"unknown kernel", Options{Dir: "/tmp/x", Binary: "/bin/true", Kernel: "fedora", KernelCache: "/c"}, `kernel: "fedora" is not a kernel the lab knows (only "debian")`},
		{"guest and kubelets", Options{Dir: "/tmp/x", Binary: "/bin/true", Kernel: KernelDebian, KernelCache: "/c", Kubelet: true, Images: "/i", KubeBinDir: "/k"}, "kernel: guest mode and kubelet mode do not combine"},
		{"unknown backend", Options{Dir: "/tmp/x", Binary: "/bin/true", Backend: "systemd-networkd"}, `backend: "systemd-networkd" is not one of kernel, networkmanager`},
		{"tiny guest", Options{Dir: "/tmp/x", Binary: "/bin/true", Kernel: KernelDebian, KernelCache: "/c", GuestMemory: 128}, "guest: 128 MiB and 2 CPUs is too small"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.opts.withDefaults()
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGuestDefaults: guest mode's guest size and the repository's kernel
// cache, and its waits stretched for TCG.
func TestGuestDefaults(t *testing.T) {
	o, err := Options{Binary: "/bin/true", APIServer: "/x", Kernel: KernelDebian, KernelCache: "rel/cache"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.GuestMemory != DefaultGuestMemory || o.GuestCPUs != 2 || !strings.HasSuffix(o.KernelCache, "/rel/cache") || !strings.HasPrefix(o.KernelCache, "/") {
		t.Errorf("guest %d MiB, %d CPUs, cache %q", o.GuestMemory, o.GuestCPUs, o.KernelCache)
	}
	if got, want := o.scale(time.Minute), guestSlowdown*time.Minute; got != want {
		t.Errorf("scale(1m) = %v, want %v", got, want)
	}
	if got := (Options{}).scale(time.Minute); got != time.Minute {
		t.Errorf("scale(1m) on this machine's kernel = %v", got)
	}
}

func TestDefaults(t *testing.T) {
	o, err := Options{Binary: "/bin/true", APIServer: "/x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Options{Name: "lab", Dir: DefaultDir("lab"), Nodes: 3, Binary: "/bin/true", APIServer: "/x", Nmstatectl: "/bin/true", Heartbeat: DefaultHeartbeat, Install: InstallManifests}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if got := []string{NodeName(0), NodeName(9), NodeName(49)}; !cmp.Equal(got, []string{"node01", "node10", "node50"}) {
		t.Errorf("node names %v", got)
	}
}

// TestMentions: a lab's process is recognised by its directory as a whole
// argument or path prefix, never by a longer directory sharing a prefix.
func TestMentions(t *testing.T) {
	dir := t.TempDir()
	cmd := startIdleShell(t, dir+"-other", "--dir="+dir+"x")
	if mentions(cmd.Process.Pid, dir) {
		t.Errorf("pid %d mentions %s: a sibling directory was taken for the lab's", cmd.Process.Pid, dir)
	}
	cmd2 := startIdleShell(t, "--kubeconfig", dir+"/kubeconfig")
	if !mentions(cmd2.Process.Pid, dir) {
		t.Errorf("pid %d does not mention %s", cmd2.Process.Pid, dir)
	}
	if got := processesOf(dir, session(cmd2.Process.Pid)); len(got) != 1 || got[0] != cmd2.Process.Pid {
		t.Errorf("processesOf(dir, its session) = %v, want [%d]", got, cmd2.Process.Pid)
	}
	if got := processesOf(dir, session(cmd2.Process.Pid)+1); len(got) != 0 {
		t.Errorf("processesOf(dir, another session) = %v, want none", got)
	}
	for _, pid := range processesOf(dir, 0) {
		if pid == os.Getpid() {
			t.Errorf("processesOf lists the caller %s", strconv.Itoa(pid))
		}
	}
}

// startIdleShell starts a shell with args as its arguments that waits on
// its standard input. It waits with read, a builtin: a shell that ran a
// command would fork, and the child shows the same arguments until it
// execs, which made processesOf list two processes now and then.
func startIdleShell(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", "read x", "sh"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = stdin.Close(); _ = cmd.Wait() })
	waitExec(t, cmd.Process.Pid)
	return cmd
}

// waitExec waits until pid runs its own program: between fork and exec its
// command line is still the test binary's.
func waitExec(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && strings.Contains(string(data), "read x") {
			return
		}
	}
	t.Fatalf("pid %d did not exec /bin/sh", pid)
}
