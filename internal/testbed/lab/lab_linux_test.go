package lab

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
)

// knmstate is the binary under test, built once by TestMain: the lab runs
// it as its supervisor, handlers and controller.
var knmstate string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "knmstate-labtest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// nmstatectl next to knmstate: the lab runs it as each node's
	// runtime (DHCP on eth0).
	knmstate = filepath.Join(dir, "knmstate")
	for _, name := range []string{"knmstate", "nmstatectl"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, name), "github.com/knmstate/knmstate/cmd/"+name)
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", name, err, out)
			return 1
		}
	}
	return m.Run()
}

// testLab names a lab after the test process and registers its removal
// (Down) before anything is started.
func testLab(t testing.TB, tag string) (name, dir string) {
	t.Helper()
	name = "t" + strconv.Itoa(os.Getpid()) + "-" + tag
	dir = filepath.Join(os.TempDir(), "knmstate-labtest-"+name)
	t.Cleanup(func() {
		if err := Down(context.Background(), name, dir); err != nil {
			t.Errorf("cleanup: lab down: %v", err)
		}
	})
	return name, dir
}

func run(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(knmstate, args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("knmstate %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), stderr.String())
	}
	return out.String()
}

func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestLabUpStatusExecDown(t *testing.T) {
	name, dir := testLab(t, "main")
	begin := time.Now()
	out := run(t, "lab", "up", "--nodes", "3", "--name", name, "--dir", dir, "--heartbeat", "1s")
	t.Logf("lab up (3 nodes) took %v:\n%s", time.Since(begin).Round(time.Millisecond), out)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if want := "export KUBECONFIG=" + kubeconfig + "\n"; !strings.Contains(out, want) {
		t.Errorf("lab up output lacks %q", want)
	}
	st, err := ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Steps {
		t.Logf("  step %-62s %v", s.Name, time.Duration(s.Duration).Round(time.Millisecond))
	}
	if st.Phase != PhaseReady {
		t.Fatalf("phase %s, want %s", st.Phase, PhaseReady)
	}
	if len(st.Notes) > 0 {
		t.Errorf("notes (a component missing?): %v", st.Notes)
	}

	t.Run("APIServerRunsInTheSwitchNamespace", func(t *testing.T) {
		sw := nsInode(t, "/run/netns/"+st.SwitchNS)
		host := nsInode(t, "/proc/self/ns/net")
		found := 0
		for _, pid := range processesOf(dir, 0) {
			if c := comm(pid); c != "kube-apiserver" && c != "etcd" {
				continue
			}
			found++
			if got := nsInode(t, "/proc/"+strconv.Itoa(pid)+"/ns/net"); got != sw || got == host {
				t.Errorf("%s (pid %d) runs in netns %d, want the switch's %d (host %d)", comm(pid), pid, got, sw, host)
			}
		}
		if found != 2 {
			t.Errorf("found %d of the lab's etcd and kube-apiserver processes, want 2", found)
		}
	})

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Host, "https://127.0.0.1:") {
		t.Errorf("kubeconfig server %s, want the loopback forwarder", cfg.Host)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("NodeObjects", func(t *testing.T) {
		nodes, err := kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list nodes through the forwarder: %v", err)
		}
		if len(nodes.Items) != 3 {
			t.Fatalf("%d nodes, want 3", len(nodes.Items))
		}
		for i, n := range nodes.Items {
			role := "worker"
			if i == 0 {
				role = "control-plane"
			}
			if n.Name != NodeName(i) {
				t.Errorf("node %d is %s, want %s", i, n.Name, NodeName(i))
			}
			for k, v := range map[string]string{
				"kubernetes.io/hostname":          n.Name,
				"kubernetes.io/os":                "linux",
				"node-role.kubernetes.io/" + role: "",
			} {
				if got, ok := n.Labels[k]; !ok || got != v {
					t.Errorf("node %s: label %s=%q (present %v), want %q", n.Name, k, got, ok, v)
				}
			}
			other := map[string]string{"worker": "control-plane", "control-plane": "worker"}[role]
			if _, ok := n.Labels["node-role.kubernetes.io/"+other]; ok {
				t.Errorf("node %s has role %s too", n.Name, other)
			}
			ready := false
			for _, c := range n.Status.Conditions {
				ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
			}
			if !ready {
				t.Errorf("node %s not Ready: %v", n.Name, n.Status.Conditions)
			}
			want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.0.2.%d", 11+i)}, {Type: corev1.NodeHostName, Address: n.Name}}
			if fmt.Sprint(n.Status.Addresses) != fmt.Sprint(want) {
				t.Errorf("node %s addresses %v, want %v", n.Name, n.Status.Addresses, want)
			}
		}
	})

	t.Run("ReadyHeartbeat", func(t *testing.T) {
		first, err := kube.CoreV1().Nodes().Get(t.Context(), "node02", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		beat := func(n *corev1.Node) time.Time {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c.LastHeartbeatTime.Time
				}
			}
			return time.Time{}
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, err := kube.CoreV1().Nodes().Get(t.Context(), "node02", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if beat(n).After(beat(first)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Ready heartbeat of node02 still %v after 30s (period 1s)", beat(first))
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("NodeNetworkStates", func(t *testing.T) {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		missing, err := missingNNS(t.Context(), dyn, st.Nodes)
		if err != nil || len(missing) > 0 {
			t.Errorf("nodes without NodeNetworkState after up: %v (%v)", missing, err)
		}
	})

	t.Run("Kubectl", func(t *testing.T) {
		cmd := exec.Command("/usr/bin/kubectl", "--kubeconfig", kubeconfig, "get", "nodes", "-o", "name")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl: %v\n%s", err, b)
		}
		if want := "node/node01\nnode/node02\nnode/node03\n"; string(b) != want {
			t.Errorf("kubectl get nodes = %q, want %q", b, want)
		}
	})

	t.Run("NodeNamespaces", func(t *testing.T) {
		for _, n := range st.Nodes {
			h, err := netns.GetFromName(n.NetNS)
			if err != nil {
				t.Fatal(err)
			}
			nl, err := netlink.NewHandleAt(h)
			h.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, nic := range []string{"eth0", "eth1", "eth2"} {
				l, err := nl.LinkByName(nic)
				if err != nil {
					t.Errorf("node %s: %s: %v", n.Name, nic, err)
					continue
				}
				addrs, _ := nl.AddrList(l, netlink.FAMILY_V4)
				if nic == "eth0" && (len(addrs) != 1 || addrs[0].IP.String() != n.Address) {
					t.Errorf("node %s: eth0 IPv4 %v, want %s", n.Name, addrs, n.Address)
				}
				if nic != "eth0" && len(addrs) != 0 {
					t.Errorf("node %s: %s has IPv4 %v, want none", n.Name, nic, addrs)
				}
			}
			nl.Close()
		}
	})

	t.Run("Eth0ConfiguredByDHCP", func(t *testing.T) {
		leases, err := os.ReadFile(filepath.Join(st.SwitchDir, "dnsmasq.leases"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range st.Nodes {
			if want := fmt.Sprintf(" %s %s %s ", n.mac(), n.Address, n.Name); !strings.Contains(string(leases), want) {
				t.Errorf("dnsmasq has no lease %q for %s:\n%s", want, n.Name, leases)
			}
			out := run(t, "lab", "exec", "--dir", dir, n.Name, "--", "ip", "-4", "route", "show", "default")
			if want := "default via 192.0.2.1 dev eth0 proto dhcp"; !strings.HasPrefix(out, want) {
				t.Errorf("node %s: default route %q, want %q...", n.Name, out, want)
			}
		}
	})

	t.Run("NodeReachesAPIServerThroughEth0", func(t *testing.T) {
		for _, n := range st.Nodes {
			local, err := dialFrom(n.NetNS, strings.TrimPrefix(st.APIServer, "https://"))
			if err != nil {
				t.Errorf("node %s: %v", n.Name, err)
				continue
			}
			if local != n.Address {
				t.Errorf("node %s: connection from %s, want eth0's %s", n.Name, local, n.Address)
			}
		}
	})

	t.Run("Exec", func(t *testing.T) {
		out := run(t, "lab", "exec", "--name", name, "--dir", dir, "node01", "--", "ip", "addr")
		for _, want := range []string{"eth0@", "eth1@", "eth2@", "inet 192.0.2.11/24"} {
			if !strings.Contains(out, want) {
				t.Errorf("lab exec node01 -- ip addr lacks %q:\n%s", want, out)
			}
		}
		if out := run(t, "lab", "exec", "--dir", dir, "node02", "--", "hostname"); out != "node02\n" {
			t.Errorf("hostname in node02 = %q", out)
		}
		resolv, err := os.ReadFile(st.Nodes[2].ResolvConf)
		if err != nil {
			t.Fatal(err)
		}
		if out := run(t, "lab", "exec", "--dir", dir, "node03", "--", "cat", "/etc/resolv.conf"); out != string(resolv) {
			t.Errorf("/etc/resolv.conf in node03 = %q, want the node's %q", out, resolv)
		}
	})

	t.Run("Status", func(t *testing.T) {
		out := run(t, "lab", "status", "--dir", dir)
		for _, want := range []string{"Ready", "handler/node01", "handler/node03", "noded/node02", "controller", "kube-apiserver", "etcd", "dnsmasq",
			"node01  control-plane  192.0.2.11", "node03  worker"} {
			if !strings.Contains(out, want) {
				t.Errorf("lab status lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "gone") || strings.Contains(out, "exited") {
			t.Errorf("lab status shows a dead process:\n%s", out)
		}
	})

	t.Run("Down", func(t *testing.T) {
		run(t, "lab", "down", "--name", name, "--dir", dir)
		if left := Leftovers(name, dir); len(left) > 0 {
			t.Errorf("left behind after lab down: %v", left)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s still exists: %v", dir, err)
		}
	})
}

// TestDownAfterSupervisorKilled: a supervisor killed with SIGKILL cleans
// up nothing itself; lab down must still leave nothing behind. The lab runs
// without node runtime: eth0 gets its address statically.
func TestDownAfterSupervisorKilled(t *testing.T) {
	name, dir := testLab(t, "kill")
	run(t, "lab", "up", "--nodes", "1", "--name", name, "--dir", dir, "--nmstatectl", NoNodeRuntime)
	out := run(t, "lab", "exec", "--dir", dir, "node01", "--", "ip", "-4", "-o", "addr", "show", "dev", "eth0")
	if !strings.Contains(out, "inet 192.0.2.11/24") {
		t.Errorf("static eth0 address missing: %q", out)
	}
	if st, err := ReadState(dir); err != nil || len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "statically") {
		t.Errorf("want a note on the static addresses, state %+v (%v)", st, err)
	}
	pid, ok := supervisorPID(dir)
	if !ok {
		t.Fatal("no supervisor running after lab up")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t.Context(), pid, dir, 10*time.Second)
	if names, _ := labnet.Namespaces(name); len(names) == 0 {
		t.Fatalf("namespaces already gone after SIGKILL: the test would prove nothing")
	}
	run(t, "lab", "down", "--name", name, "--dir", dir)
	if left := Leftovers(name, dir); len(left) > 0 {
		t.Errorf("left behind after lab down: %v", left)
	}
}

// TestLabsCoexist: a second up in a running lab's directory, or with a
// running lab's name (its namespaces), is refused and leaves the running lab
// alone; a lab with another name and directory runs beside it, and its down
// removes only its own things.
func TestLabsCoexist(t *testing.T) {
	name, dir := testLab(t, "twice")
	run(t, "lab", "up", "--nodes", "1", "--name", name, "--dir", dir)
	cmd := exec.Command(knmstate, "lab", "up", "--nodes", "1", "--name", name, "--dir", dir)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "already running") {
		t.Errorf("second lab up in the same dir: err %v, output %q; want refusal", err, out)
	}
	_, otherDir := testLab(t, "other")
	cmd = exec.Command(knmstate, "lab", "up", "--nodes", "1", "--name", name, "--dir", otherDir)
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "namespaces of a lab named") {
		t.Errorf("lab up with a running lab's name: err %v, output %q; want refusal", err, out)
	}
	// Another name and directory: both labs run side by side.
	other, otherDir := testLab(t, "second")
	run(t, "lab", "up", "--nodes", "1", "--name", other, "--dir", otherDir)
	for _, d := range []string{dir, otherDir} {
		st, err := ReadState(d)
		if err != nil || st.Phase != PhaseReady {
			t.Fatalf("lab in %s: %+v (%v)", d, st, err)
		}
		if out := run(t, "lab", "exec", "--dir", d, "node01", "--", "ip", "-4", "-o", "addr", "show", "dev", "eth0"); !strings.Contains(out, "192.0.2.11/24") {
			t.Errorf("lab in %s: node01 eth0 %q", d, out)
		}
	}
	run(t, "lab", "down", "--dir", otherDir)
	if st, err := ReadState(dir); err != nil || st.Phase != PhaseReady {
		t.Errorf("the first lab was disturbed by the second's down: %+v (%v)", st, err)
	}
	if left := Leftovers(other, otherDir); len(left) > 0 {
		t.Errorf("second lab left behind: %v", left)
	}
}

// dialFrom connects to addr from inside a namespace and returns the
// connection's local address.
func dialFrom(nsName, addr string) (string, error) {
	type result struct {
		local string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is discarded
		h, err := netns.GetFromName(nsName)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			done <- result{err: err}
			return
		}
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		done <- result{local: c.LocalAddr().(*net.TCPAddr).IP.String()}
	}()
	r := <-done
	return r.local, r.err
}

// BenchmarkLabUp3Nodes measures `lab up --nodes 3` (to Ready: every node
// has its DHCP lease and NodeNetworkState) and `lab down`.
func BenchmarkLabUp3Nodes(b *testing.B) {
	name, dir := testLab(b, "bench")
	var up, down time.Duration
	for b.Loop() {
		t0 := time.Now()
		run(b, "lab", "up", "--nodes", "3", "--name", name, "--dir", dir)
		t1 := time.Now()
		run(b, "lab", "down", "--name", name, "--dir", dir)
		up, down = up+t1.Sub(t0), down+time.Since(t1)
	}
	b.ReportMetric(up.Seconds()/float64(b.N), "s-up/op")
	b.ReportMetric(down.Seconds()/float64(b.N), "s-down/op")
}
