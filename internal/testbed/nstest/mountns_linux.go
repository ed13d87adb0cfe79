package nstest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// containerEnv names the test a re-executed test binary runs inside its
// private mount namespace.
const containerEnv = "KNMSTATE_TEST_IN_PRIVATE_MOUNT_NS"

// InPrivateMountNS runs the calling test a second time, in a child test
// binary inside a private mount namespace with a fresh tmpfs on /run — what
// a container gives a process — and reports whether the caller is that
// child. Use it as
//
//	if !nstest.InPrivateMountNS(t) {
//		return // the child ran the test; its output is in the log
//	}
//	... the test body, inside the mount namespace ...
//
// The parent fails when the child fails. The child's mount namespace is
// made on the last CPU, so its namespace id comes from that CPU's batch
// (Linux 6.18+ hands namespace ids out in per-CPU batches): namespaces
// the test then makes on other CPUs can get smaller ids than its own, the
// case that only a non-initial mount namespace meets. Everything mounted
// in the child goes with it.
func InPrivateMountNS(t *testing.T) bool {
	t.Helper()
	if os.Getenv(containerEnv) == t.Name() {
		// Born on one CPU, the child may now run anywhere, so the
		// namespaces it makes take ids from every CPU's batch.
		if err := everyCPU(); err != nil {
			t.Fatal(err)
		}
		// Nothing mounted here may propagate back to the host.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Fatalf("making / private: %v", err)
		}
		if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "mode=755"); err != nil {
			t.Fatalf("tmpfs on /run: %v", err)
		}
		return true
	}
	args := []string{"-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.v", "-test.count=1"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+fmt.Sprint(time.Until(d)))
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), containerEnv+"="+t.Name())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	err := onLastCPU(func() error { return cmd.Run() })
	t.Logf("child test binary in a private mount namespace:\n%s", out.Bytes())
	if err != nil {
		t.Fatalf("the test inside a private mount namespace: %v", err)
	}
	if !bytes.Contains(out.Bytes(), []byte("--- PASS: "+t.Name())) {
		t.Fatalf("the child test binary did not run %s", t.Name())
	}
	return false
}

// everyCPU lets every thread of this process run on every CPU.
func everyCPU() error {
	var all unix.CPUSet
	for i := 0; i < len(all)*64; i++ {
		all.Set(i)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("listing threads: %w", err)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &all); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("CPU affinity of thread %d: %w", tid, err)
		}
	}
	return nil
}

// onLastCPU runs f on a locked thread allowed only on the last CPU; the
// thread is discarded afterwards (its affinity is not the runtime's).
func onLastCPU(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var all unix.CPUSet
		if err := unix.SchedGetaffinity(0, &all); err != nil {
			errc <- fmt.Errorf("reading CPU affinity: %w", err)
			return
		}
		last := -1
		for i := 0; i < len(all)*64; i++ {
			if all.IsSet(i) {
				last = i
			}
		}
		var one unix.CPUSet
		one.Set(last)
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			errc <- fmt.Errorf("pinning to CPU %d: %w", last, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}
