package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPause runs the real program as pid 1 of a new PID namespace, orphans
// a short-lived process to it, and checks that no zombie stays and that
// SIGTERM ends it with status 0.
func TestPause(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building pause: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	pid := cmd.Process.Pid
	// Inside the namespace, sh starts sleep and exits: sleep is orphaned to
	// the namespace's pid 1, pause, which must reap it when it ends. (Its
	// output goes elsewhere: our pipe would keep nsenter's output open.)
	out, err := exec.Command("nsenter", "--target", strconv.Itoa(pid), "--pid", "--",
		"/bin/sh", "-c", "sleep 1 </dev/null >/dev/null 2>&1 & exit 0").CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter: %v\n%s", err, out)
	}
	if kids := children(t, pid); len(kids) != 1 {
		t.Fatalf("children of pause %v, want the orphaned sleep", kids)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(children(t, pid)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("children of pause %v: not reaped", children(t, pid))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("pause after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("pause still running 10 s after SIGTERM")
	}
}

// children lists the processes whose parent is pid, with their state
// (Z: a zombie).
func children(t *testing.T, pid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after ')'.
		rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, fmt.Sprintf("%s(%s)", filepath.Base(filepath.Dir(s)), f[0]))
		}
	}
	return kids
}
