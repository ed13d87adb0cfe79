package apply_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// testUTSNS makes a UTS namespace named hostname, pinned by a bind mount
// on a temporary file, and returns that file. Only a dedicated locked
// thread enters the new namespace; it goes back afterwards, or stays
// locked (and the runtime throws it away) if it cannot, so this machine's
// hostname is never in reach.
func testUTSNS(t *testing.T, hostname string) string {
	t.Helper()
	pin := filepath.Join(t.TempDir(), "uts")
	if err := os.WriteFile(pin, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	mounted := false
	t.Cleanup(func() {
		if mounted {
			if err := unix.Unmount(pin, unix.MNT_DETACH); err != nil {
				t.Errorf("unmounting %s: %v", pin, err)
			}
		}
	})
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/uts", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- err
			return
		}
		defer unix.Close(home)
		err = func() error {
			if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
				return fmt.Errorf("unshare: %w", err)
			}
			if err := unix.Sethostname([]byte(hostname)); err != nil {
				return fmt.Errorf("sethostname: %w", err)
			}
			self := fmt.Sprintf("/proc/%d/task/%d/ns/uts", os.Getpid(), unix.Gettid())
			if err := unix.Mount(self, pin, "none", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("pinning: %w", err)
			}
			mounted = true
			return nil
		}()
		if serr := unix.Setns(home, unix.CLONE_NEWUTS); serr != nil {
			done <- errors.Join(err, serr)
			return
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatalf("creating a UTS namespace: %v", err)
	}
	return pin
}
