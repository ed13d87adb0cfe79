package nodeinit

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// initEnv makes the re-executed test binary the init: its value is the
// spec file.
const initEnv = "KNMSTATE_NODEINIT_TEST_SPEC"

func TestMain(m *testing.M) {
	if path := os.Getenv(initEnv); path != "" {
		spec, err := ReadSpec(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := Run(context.Background(), spec, slog.New(slog.NewTextHandler(os.Stderr, nil))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startInit runs the test binary as the init of a new PID and mount
// namespace, as the lab starts a node's init, and returns it with a
// channel that yields its exit.
func startInit(t *testing.T, spec *Spec) (*exec.Cmd, <-chan error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := WriteSpec(path, spec); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), initEnv+"="+path)
	log, err := os.Create(filepath.Join(t.TempDir(), "init.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The exit is sent once and the channel then closed, so both the test
	// and the cleanup can wait on it.
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() { done <- cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("init log:\n%s", b)
		}
	})
	return cmd, done
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lines(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

func TestInitMountsStartsRestartsReapsStops(t *testing.T) {
	d := t.TempDir()
	for name, content := range map[string]string{"src.txt": "node's own\n", "dst.txt": "the machine's\n"} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh := "/bin/sh"
	spec := &Spec{
		Mounts: []Mount{
			{Type: "tmpfs", Target: filepath.Join(d, "run"), Data: "mode=755"},
			{Source: filepath.Join(d, "src.txt"), Target: filepath.Join(d, "dst.txt"), ReadOnly: true},
		},
		Daemons: []Daemon{
			{Name: "a", Path: sh, Args: []string{"-c", fmt.Sprintf("echo up >> %[1]s/a.count; touch %[1]s/run/a.ready; exec sleep 1000", d)},
				Log: filepath.Join(d, "a.log"), Ready: filepath.Join(d, "run", "a.ready")},
			// Exits at once leaving an orphan behind: restarted with
			// back-off, and the orphan is reaped by the init.
			{Name: "b", Path: sh, Args: []string{"-c", fmt.Sprintf("cat %[1]s/dst.txt > %[1]s/b.saw; echo x >> %[1]s/b.count; (sleep 0.1; exit 0) & exit 3", d)},
				Log: filepath.Join(d, "b.log")},
		},
		StatusFile: filepath.Join(d, "status.json"),
		StopGrace:  Duration(5 * time.Second),
	}
	cmd, done := startInit(t, spec)
	waitFor(t, "b restarted twice", func() bool { return lines(filepath.Join(d, "b.count")) >= 3 })
	if got := lines(filepath.Join(d, "a.count")); got != 1 {
		t.Errorf("a started %d times, want once", got)
	}
	saw, _ := os.ReadFile(filepath.Join(d, "b.saw"))
	if string(saw) != "node's own\n" {
		t.Errorf("b saw %q through the read-only bind mount, want the source's content", saw)
	}
	// The init's mounts stay in its mount namespace.
	if _, err := os.Stat(filepath.Join(d, "run", "a.ready")); err == nil {
		t.Errorf("the init's tmpfs is visible outside its mount namespace")
	}
	if b, _ := os.ReadFile(filepath.Join(d, "dst.txt")); string(b) != "the machine's\n" {
		t.Errorf("dst.txt outside = %q, the bind mount leaked", b)
	}
	st, err := ReadStatus(spec.StatusFile)
	if err != nil {
		t.Fatal(err)
	}
	if st.InitPID != 1 || st.Phase != "running" || len(st.Daemons) != 2 || st.Daemons[0].PID == 0 || st.Daemons[1].Restarts < 1 {
		t.Errorf("status = %+v, want init PID 1, running, a up, b restarted", st)
	}
	if st.Daemons[1].Restarts >= 1 && st.Daemons[1].LastExit != "exit status 3" {
		t.Errorf("b's last exit = %q, want exit status 3", st.Daemons[1].LastExit)
	}
	// Orphans are reaped: no zombie among the init's children.
	time.Sleep(300 * time.Millisecond)
	if z := zombiesOf(t, cmd.Process.Pid); len(z) > 0 {
		t.Errorf("zombie children of the init: %v", z)
	}
	// SIGTERM stops every daemon and ends the init cleanly.
	aPID := hostPIDOf(t, cmd.Process.Pid, "sleep 1000")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("init exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("init did not stop within 10s of SIGTERM")
	}
	if aPID > 0 {
		if err := unix.Kill(aPID, 0); err == nil {
			t.Errorf("daemon a (pid %d) survived the init", aPID)
		}
	}
	st, _ = ReadStatus(spec.StatusFile)
	if st == nil || st.Phase != "stopped" {
		t.Errorf("status after stop = %+v, want phase stopped", st)
	}
}

func TestInitFailsWhenADaemonDiesBeforeReady(t *testing.T) {
	d := t.TempDir()
	spec := &Spec{Daemons: []Daemon{
		{Name: "broken", Path: "/bin/sh", Args: []string{"-c", "exit 7"}, Log: filepath.Join(d, "broken.log"), Ready: filepath.Join(d, "never")},
		{Name: "next", Path: "/bin/sh", Args: []string{"-c", "touch " + filepath.Join(d, "next-ran")}, Log: filepath.Join(d, "next.log")},
	}}
	_, done := startInit(t, spec)
	select {
	case err := <-done:
		if err == nil {
			t.Error("init succeeded although a daemon died before it was ready")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("init did not give up")
	}
	if _, err := os.Stat(filepath.Join(d, "next-ran")); err == nil {
		t.Error("the next daemon started although the previous was never ready")
	}
}

func TestSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"no daemons", Spec{}, "daemons: none given"},
		{"relative target", Spec{Mounts: []Mount{{Type: "tmpfs", Target: "run"}}, Daemons: []Daemon{{Name: "a", Path: "/bin/true", Log: "/l"}}}, `mounts[0].target: "run" is not an absolute path`},
		{"bad type", Spec{Mounts: []Mount{{Type: "ext4", Target: "/x"}}, Daemons: []Daemon{{Name: "a", Path: "/bin/true", Log: "/l"}}}, `mounts[0].type: "ext4" is not supported`},
		{"twice", Spec{Daemons: []Daemon{{Name: "a", Path: "/bin/true", Log: "/l"}, {Name: "a", Path: "/bin/true", Log: "/l"}}}, `daemons[1].name: "a" is given twice`},
		{"no log", Spec{Daemons: []Daemon{{Name: "a", Path: "/bin/true"}}}, "daemons[0].log: empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// zombiesOf lists the zombie children of pid.
func zombiesOf(t *testing.T, pid int) []int {
	var out []int
	for _, c := range childrenOf(t, pid) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(c) + "/stat"); err == nil {
			if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
				out = append(out, c)
			}
		}
	}
	return out
}

// childrenOf lists the children of every thread of pid.
func childrenOf(t *testing.T, pid int) []int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	var out []int
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
	}
	return out
}

// hostPIDOf finds the child of pid whose command line is cmdline.
func hostPIDOf(t *testing.T, pid int, cmdline string) int {
	for _, c := range childrenOf(t, pid) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(c) + "/cmdline")
		if strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ") == cmdline {
			return c
		}
	}
	t.Errorf("no child of %d runs %q", pid, cmdline)
	return 0
}
