package labnet

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Prefix starts the name of every namespace this package creates, so a
// leftover one (from a killed process) is easy to recognise and remove.
const Prefix = "knml-"

// runDir is where named namespaces are bind-mounted, as iproute2 does, so
// `ip netns exec` works on them for debugging.
const runDir = "/run/netns"

// NS is one named network namespace created by this package.
type NS struct {
	// Name is the namespace's name under /run/netns.
	Name string
	// Path is the bind-mounted file that keeps the namespace alive.
	Path string
	// Handle is an open file descriptor of the namespace.
	Handle netns.NsHandle
	// Netlink is a netlink handle whose socket lives in the namespace.
	Netlink *netlink.Handle
}

// newNS creates a named namespace with loopback up: Prefix+name, or
// Prefix and random hex when name is "". On error, whatever was created is
// removed again.
func newNS(name string) (_ *NS, err error) {
	if name == "" {
		b := make([]byte, 5)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("random namespace name: %w", err)
		}
		name = hex.EncodeToString(b)
	}
	n := &NS{Name: Prefix + name, Handle: netns.None()}
	n.Path = filepath.Join(runDir, n.Name)
	defer func() {
		if err != nil {
			_ = n.close()
		}
	}()
	if err := createNS(n.Path); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", n.Name, err)
	}
	if n.Handle, err = netns.GetFromPath(n.Path); err != nil {
		return nil, fmt.Errorf("opening namespace %s: %w", n.Name, err)
	}
	if n.Netlink, err = netlink.NewHandleAt(n.Handle); err != nil {
		return nil, fmt.Errorf("netlink handle in namespace %s: %w", n.Name, err)
	}
	if err := n.linkUp("lo"); err != nil {
		return nil, err
	}
	return n, nil
}

// Do runs f on a locked OS thread switched into the namespace and waits
// for it. Sockets and child processes f creates stay in the namespace. f
// runs on another goroutine; goroutines it starts do not inherit the
// namespace. If switching back fails the thread stays locked, so the
// runtime discards it instead of reusing it.
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

// Sysctl writes value to the namespace's own /proc/sys/<key> (key in
// slash form, "net/ipv6/conf/eth0/accept_ra"). Network sysctls are
// resolved against the writing thread's namespace, so this never changes
// the host's settings.
func (n *NS) Sysctl(key, value string) error {
	return n.Do(func() error {
		if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0); err != nil {
			return fmt.Errorf("sysctl %s in %s: %w", key, n.Name, err)
		}
		return nil
	})
}

func (n *NS) linkUp(name string) error {
	l, err := n.Netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("%s: finding link %s: %w", n.Name, name, err)
	}
	if err := n.Netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s: setting %s up: %w", n.Name, name, err)
	}
	return nil
}

// close releases the handles and removes the namespace; links inside it
// (and their veth peers elsewhere) disappear with it.
func (n *NS) close() error {
	if n.Netlink != nil {
		n.Netlink.Close()
		n.Netlink = nil
	}
	if n.Handle.IsOpen() {
		n.Handle.Close()
		n.Handle = netns.None()
	}
	if err := removeNS(n.Path); err != nil {
		return fmt.Errorf("removing namespace %s: %w", n.Name, err)
	}
	return nil
}

// createNS makes a new network namespace and bind-mounts it at path, from
// a dedicated locked thread that is switched back afterwards.
func createNS(path string) error {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return err
	}
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

// removeNS unmounts and deletes a namespace file; what is gone is fine.
func removeNS(path string) error {
	if path == "" {
		return nil
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
