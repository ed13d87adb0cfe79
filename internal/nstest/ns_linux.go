package nstest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Prefix starts the name of every namespace this package creates, so a
// leftover one (from a killed test binary) is easy to recognise.
const Prefix = "knmt-"

// runDir is where named namespaces are bind-mounted, as iproute2 does, so
// `ip netns exec` works on them while a test is paused.
const runDir = "/run/netns"

// NS is one throw-away named network namespace.
type NS struct {
	// Name is the namespace's name under /run/netns: Prefix, the PID of
	// the test process, random hex ("knmt-4242-9f3a0c1e").
	Name string
	// Path is the bind-mounted file that keeps the namespace alive.
	Path string
	// Handle is an open file descriptor of the namespace.
	Handle netns.NsHandle
	// Netlink is a netlink handle whose sockets (NETLINK_ROUTE and
	// NETLINK_GENERIC) live in the namespace; use it instead of the
	// package-level netlink functions.
	Netlink *netlink.Handle
}

// New creates a fresh named network namespace for the test, with loopback
// up, and registers its removal with t.Cleanup before creating anything.
// It first removes namespaces left by test processes that died without
// cleaning up. It fails the test when the namespace cannot be made (not
// root, no /run).
func New(t testing.TB) *NS {
	t.Helper()
	name, err := uniqueName()
	if err != nil {
		t.Fatalf("nstest: %v", err)
	}
	n := &NS{Name: name, Path: filepath.Join(runDir, name), Handle: netns.None()}
	created := false // never remove a file this call did not make
	// Registered first so a failure anywhere below still removes what exists.
	t.Cleanup(func() {
		if n.Netlink != nil {
			n.Netlink.Close()
		}
		if n.Handle.IsOpen() {
			n.Handle.Close()
		}
		if !created {
			return
		}
		if err := remove(n.Path); err != nil {
			t.Errorf("nstest: removing namespace %s: %v", n.Name, err)
		}
	})
	stale, err := sweepStale()
	for _, name := range stale {
		t.Logf("nstest: removed stale namespace %s (its process has exited)", name)
	}
	if err != nil {
		t.Logf("nstest: sweeping stale namespaces: %v", err)
	}
	if err := create(n.Path, &created); err != nil {
		t.Fatalf("nstest: creating namespace %s (needs root): %v", n.Name, err)
	}
	h, err := netns.GetFromPath(n.Path)
	if err != nil {
		t.Fatalf("nstest: opening namespace %s: %v", n.Name, err)
	}
	n.Handle = h
	// Only the families named here get sockets in the namespace; a request
	// for another family would silently use a socket in the caller's
	// namespace, so keep this list to what tests use.
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE, unix.NETLINK_GENERIC)
	if err != nil {
		t.Fatalf("nstest: netlink handle in namespace %s: %v", n.Name, err)
	}
	n.Netlink = nl
	n.LinkUp(t, "lo")
	return n
}

// Do runs f on a locked OS thread that has been switched into the
// namespace, and waits for it. Sockets f opens stay in the namespace after
// f returns. f runs on another goroutine: it must report failure by its
// error, not by t.Fatal. Goroutines that f starts do not inherit the
// namespace. The thread is switched back afterwards; if that fails it is
// left locked, so the runtime discards it rather than reuse it.
func (n *NS) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- n.doLocked(f)
	}()
	return <-errc
}

func (n *NS) doLocked(f func() error) (err error) {
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("reading the thread's namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(n.Handle); err != nil {
		runtime.UnlockOSThread() // a failed setns leaves the thread where it was
		return fmt.Errorf("entering namespace %s: %w", n.Name, err)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in namespace %s: %v", n.Name, p)
		}
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return f()
}

// LinkUp sets the named link in the namespace administratively up.
func (n *NS) LinkUp(t testing.TB, name string) {
	t.Helper()
	l, err := n.Netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("nstest: %s: finding link %s: %v", n.Name, name, err)
	}
	if err := n.Netlink.LinkSetUp(l); err != nil {
		t.Fatalf("nstest: %s: setting %s up: %v", n.Name, name, err)
	}
}

// AddrAdd adds an address in CIDR form ("192.0.2.1/24", "2001:db8::1/64")
// to the named link. IPv6 addresses skip duplicate address detection so
// they are usable at once.
func (n *NS) AddrAdd(t testing.TB, name, cidr string) {
	t.Helper()
	l, err := n.Netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("nstest: %s: finding link %s: %v", n.Name, name, err)
	}
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatalf("nstest: address %q: %v", cidr, err)
	}
	if a.IP.To4() == nil {
		a.Flags |= unix.IFA_F_NODAD
	}
	if err := n.Netlink.AddrAdd(l, a); err != nil {
		t.Fatalf("nstest: %s: adding %s to %s: %v", n.Name, cidr, name, err)
	}
}

// uniqueName is Prefix, the creating process's PID and random hex: the PID
// lets a later run recognise namespaces whose creator died before its
// cleanups ran (a test binary killed by -test.timeout).
func uniqueName() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random namespace name: %w", err)
	}
	return fmt.Sprintf("%s%d-%s", Prefix, os.Getpid(), hex.EncodeToString(b)), nil
}

// sweepStale removes namespaces this package made in processes that no
// longer exist, and returns their names. Namespaces of live processes,
// including other test binaries running now, are left alone.
func sweepStale() ([]string, error) {
	entries, err := os.ReadDir(runDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
			continue // alive, or not ours to judge
		}
		if err := remove(filepath.Join(runDir, e.Name())); err != nil {
			return removed, fmt.Errorf("removing stale namespace %s: %w", e.Name(), err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// create makes a new network namespace and bind-mounts it at path. The
// unshare happens on a dedicated locked thread that is switched back to its
// original namespace afterwards; if that fails the thread stays locked and
// the runtime discards it, so no other code ever runs there by accident.
// It sets *created once the file exists, so the caller knows to remove it.
func create(path string, created *bool) error {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return err
	}
	*created = true
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- unshareAndMount(path)
	}()
	return <-errc
}

func unshareAndMount(path string) error {
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("reading the thread's namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
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

// remove unmounts and deletes a namespace file; what is already gone is fine.
func remove(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
