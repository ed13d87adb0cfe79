package nstest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// UTS creates a UTS namespace whose hostname is hostname, kept alive by a
// bind mount on a file in the test's temp dir (unmounted at cleanup), and
// returns that file's path. The unshare happens on a locked thread that
// is switched back afterwards, or discarded if that fails, so this
// machine's hostname is never in reach.
func UTS(t testing.TB, hostname string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "uts")
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	mounted := false
	t.Cleanup(func() {
		if mounted {
			if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
				t.Errorf("nstest: unmounting %s: %v", path, err)
			}
		}
	})
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/uts", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return // thread stays locked: discarded
		}
		defer unix.Close(orig)
		err = func() error {
			if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
				return fmt.Errorf("unshare: %w", err)
			}
			if err := unix.Sethostname([]byte(hostname)); err != nil {
				return fmt.Errorf("sethostname: %w", err)
			}
			src := fmt.Sprintf("/proc/%d/task/%d/ns/uts", os.Getpid(), unix.Gettid())
			if err := unix.Mount(src, path, "none", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind mount: %w", err)
			}
			mounted = true
			return nil
		}()
		if serr := unix.Setns(orig, unix.CLONE_NEWUTS); serr != nil {
			errc <- errors.Join(err, serr)
			return // thread stays locked: discarded
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatalf("nstest: creating UTS namespace: %v", err)
	}
	return path
}
