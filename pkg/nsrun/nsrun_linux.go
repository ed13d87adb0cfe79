package nsrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// RunDir is where named namespaces are bind-mounted, as iproute2 does, so
// `ip netns exec` works on them.
const RunDir = "/run/netns"

// File turns a namespace given by name or path into its file: a name
// without '/' is a named namespace under RunDir, anything else a path.
func File(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return filepath.Join(RunDir, name)
}

// Do runs f on a locked OS thread switched into ns and returns f's error
// (a panic in f becomes an error).
func Do(ns netns.NsHandle, f func() error) error {
	if !ns.IsOpen() {
		return errors.New("no network namespace handle")
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- doLocked(ns, f)
	}()
	return <-errc
}

// DoPath runs f inside the namespace File(name); "" runs f at once in the
// caller's own namespace, without switching.
func DoPath(name string, f func() error) error {
	if name == "" {
		return f()
	}
	ns, err := netns.GetFromPath(File(name))
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", name, err)
	}
	defer ns.Close()
	if err := Do(ns, f); err != nil {
		return err
	}
	return nil
}

// doLocked runs on the locked thread; it unlocks it only once the thread
// is back in its own namespace.
func doLocked(ns netns.NsHandle, f func() error) (err error) {
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("reading the thread's network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		// setns failed: the thread is where it was.
		runtime.UnlockOSThread()
		return fmt.Errorf("entering network namespace: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in network namespace: %v", p)
		}
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return f()
}

// Create makes a new network namespace and bind-mounts it at path, which
// must not exist. created reports whether the file was made: the caller
// removes it (Remove) even when err is set. A path in RunDir is created
// only after RunDir has been prepared as iproute2 prepares it
// (PrepareRunDir).
func Create(path string) (created bool, err error) {
	if filepath.Dir(path) == RunDir {
		if err := PrepareRunDir(); err != nil {
			return false, err
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return false, err
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- unshareAndMount(path)
	}()
	return true, <-errc
}

// PrepareRunDir makes RunDir what `ip netns add` makes it on first use: a
// bind mount of itself with shared propagation (mount --make-rshared), so
// that unmounting a namespace file in one mount namespace unmounts it in
// all of them. iproute2 turns a plain directory into that mount point the
// first time it adds a namespace; had we bind-mounted namespace files on
// the plain directory first, that later bind would cover them and they
// could be neither unmounted nor removed (EBUSY). So we do it ourselves,
// under a lock, before the first namespace file; once RunDir is a mount
// point, iproute2 only sets its propagation again.
func PrepareRunDir() error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", RunDir, err)
	}
	// The lock is the directory itself (a bind mount of it onto itself is
	// the same inode), so every process of ours preparing it is
	// serialised and no lock file is left behind.
	lock, err := os.Open(RunDir)
	if err != nil {
		return fmt.Errorf("opening %s: %w", RunDir, err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", RunDir, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	for bound := false; ; bound = true {
		err := unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		// EINVAL: not a mount point yet; make it one, once.
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("making %s a shared mount: %w", RunDir, err)
		}
		if err := unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind mounting %s on itself: %w", RunDir, err)
		}
	}
}

// unshareAndMount gives the locked thread a new namespace, bind-mounts
// it at path and switches the thread back.
func unshareAndMount(path string) error {
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("reading the thread's network namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("unshare: %w", err)
	}
	defer func() {
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	src := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
	if err := unix.Mount(src, path, "none", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount on %s: %w", path, err)
	}
	return nil
}

// Remove unmounts and deletes a namespace file; what is already gone is
// fine.
func Remove(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
