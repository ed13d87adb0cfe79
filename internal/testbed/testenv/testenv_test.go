package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// helperEnv selects a helper mode of the test binary (see TestMain): it is
// re-executed as a child that starts a control plane and then dies
// abruptly, so the parent can check nothing is left behind.
const helperEnv = "KNMSTATE_TESTENV_HELPER"

var shared *Env

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(RunMain(m, &shared))
}

// helperReport is what a helper child prints before dying.
type helperReport struct {
	Dir  string `json:"dir"`
	PIDs []int  `json:"pids"`
}

func runHelper(mode string) int {
	e, err := Start(context.Background(), Options{RootDir: os.Getenv(helperEnv + "_ROOT")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	b, _ := json.Marshal(helperReport{Dir: e.Dir, PIDs: e.PIDs()})
	fmt.Println(string(b))
	switch mode {
	case "panic":
		panic("helper: dying without Stop")
	case "exit":
		os.Exit(3)
	case "sigkill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return 4
}

func TestStartStop(t *testing.T) {
	root := t.TempDir()
	e, err := Start(t.Context(), Options{RootDir: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	t.Logf("start-to-ready: %v", e.StartupDuration)
	dir, pids := e.Dir, e.PIDs()
	if len(pids) != 2 {
		t.Fatalf("PIDs() = %v, want etcd and kube-apiserver", pids)
	}
	for _, pid := range pids {
		if !cmdlineMentions(pid, dir) {
			t.Fatalf("process %d is not running with %s", pid, dir)
		}
	}
	kube, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		t.Fatalf("server version: %v", err)
	}

	if err := e.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertGone(t, dir, pids)
	if err := e.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestAbruptOwnerDeath starts a control plane in a child process that dies
// without calling Stop, and checks its processes and directory are gone.
func TestAbruptOwnerDeath(t *testing.T) {
	for _, mode := range []string{"panic", "exit", "sigkill"} {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_ROOT="+root)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var rep helperReport
			line, rerr := bufio.NewReader(out).ReadString('\n')
			werr := cmd.Wait()
			if rerr != nil || json.Unmarshal([]byte(line), &rep) != nil {
				t.Fatalf("helper printed %q (read: %v, exit: %v)\nstderr:\n%s", line, rerr, werr, stderr.String())
			}
			var exitErr *exec.ExitError
			if !errors.As(werr, &exitErr) {
				t.Fatalf("helper exit = %v, want an abrupt death", werr)
			}
			if len(rep.PIDs) != 2 || !strings.HasPrefix(rep.Dir, root) {
				t.Fatalf("helper report = %+v", rep)
			}
			assertGone(t, rep.Dir, rep.PIDs)
		})
	}
}

// TestRemoveStale checks Start removes the directory of a dead owner that
// its guard could not clean (the guard itself was killed).
func TestRemoveStale(t *testing.T) {
	root := t.TempDir()
	stale := filepath.Join(root, dirPrefix+"stale")
	live := filepath.Join(root, dirPrefix+"live")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for dir, owner := range map[string]int{stale: dead.Process.Pid, live: os.Getpid()} {
		if err := os.MkdirAll(filepath.Join(dir, "etcd"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(fmt.Sprint(owner)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(root)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale dir of dead owner: stat = %v, want removed", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("dir of live owner: stat = %v, want kept", err)
	}
}

// assertGone waits (bounded) for the processes to exit and the directory to
// disappear: both happen asynchronously after an abrupt death.
func assertGone(t *testing.T, dir string, pids []int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var left []string
		for _, pid := range pids {
			if cmdlineMentions(pid, dir) {
				left = append(left, fmt.Sprintf("process %d", pid))
			}
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			left = append(left, "directory "+dir)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: %s", strings.Join(left, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRBAC proves authorization is RBAC: a minted non-admin user is
// forbidden until a binding grants it the verb.
func TestRBAC(t *testing.T) {
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(shared.Config)
	if err != nil {
		t.Fatal(err)
	}
	userCfg, err := shared.UserConfig("alice", "developers")
	if err != nil {
		t.Fatal(err)
	}
	alice, err := kubernetes.NewForConfig(userCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("list namespaces without a binding: err = %v, want Forbidden", err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "namespace-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "developers-read-namespaces"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		// Bound to the group, so the test also proves groups come from the
		// certificate's organizations.
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "developers"}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	// The authorizer's cache follows the binding within moments.
	err = poll(ctx, func() error {
		_, err := alice.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("list namespaces with a binding: %v", err)
	}
	if _, err := alice.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("list secrets (not granted): err = %v, want Forbidden", err)
	}
}

func TestWriteKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := shared.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace default through the kubeconfig: %v", err)
	}
}

func TestFindRepoRoot(t *testing.T) {
	root, err := FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testbed", "testenv", "testenv.go")); err != nil {
		t.Errorf("FindRepoRoot() = %s, which does not hold this package: %v", root, err)
	}
}

// BenchmarkStartToReady measures Start (processes, CRDs served, admission
// policy active) and the CPU the API server spent getting there, which,
// unlike wall time, does not depend on what else the machine runs.
func BenchmarkStartToReady(b *testing.B) {
	var cpu time.Duration
	for b.Loop() {
		e, err := Start(b.Context(), Options{RootDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		cpu += processCPU(e.apiserver.cmd.Process.Pid)
		if err := e.Stop(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "apiserver-cpu-ms/op")
}

// processCPU returns the user+system CPU time of a live process.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	// USER_HZ is 100 on Linux.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// TestChildrenOutliveStartingThread starts a control plane from a goroutine
// locked to its thread that then exits locked, which destroys the thread.
// Children forked from that thread would get their parent-death signal; the
// spawner's own thread must keep them alive.
func TestChildrenOutliveStartingThread(t *testing.T) {
	type result struct {
		e   *Env
		err error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		e, err := Start(context.Background(), Options{RootDir: t.TempDir()})
		done <- result{e, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { _ = r.e.Stop() })
	// Give a parent-death signal time to land before looking.
	time.Sleep(500 * time.Millisecond)
	for _, c := range []*child{r.e.etcd, r.e.apiserver} {
		if c.exited() {
			t.Fatalf("%s died with the thread that started it", c.name)
		}
	}
	kube, err := kubernetes.NewForConfig(r.e.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("API after the starting thread ended: %v", err)
	}
}
