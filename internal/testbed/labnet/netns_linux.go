package labnet

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// Prefix starts the name of every namespace this package creates, so a
// leftover one (from a killed process) is easy to recognise and remove.
const Prefix = "knml-"

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

	// own is set once this package made the namespace file: only then
	// does close remove it.
	own bool
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
	n.Path = nsrun.File(n.Name)
	defer func() {
		if err != nil {
			_ = n.close()
		}
	}()
	if n.own, err = nsrun.Create(n.Path); err != nil {
		return nil, fmt.Errorf("creating namespace %s: %w", n.Name, err)
	}
	if n.Handle, err = netns.GetFromPath(n.Path); err != nil {
		return nil, fmt.Errorf("opening namespace %s: %w", n.Name, err)
	}
	if n.Netlink, err = netlink.NewHandleAt(n.Handle, unix.NETLINK_ROUTE); err != nil {
		return nil, fmt.Errorf("netlink handle in namespace %s: %w", n.Name, err)
	}
	if err := n.linkUp("lo"); err != nil {
		return nil, err
	}
	return n, nil
}

// originHandle is a netlink handle in the calling thread's network
// namespace, usable from any thread afterwards, and that namespace.
func originHandle() (*netlink.Handle, netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ns, err := netns.Get()
	if err != nil {
		return nil, 0, fmt.Errorf("reading the network namespace: %w", err)
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		return nil, 0, fmt.Errorf("netlink handle: %w", err)
	}
	return h, ns, nil
}

// Do runs f on a locked OS thread switched into the namespace and waits
// for it (nsrun.Do). Sockets and child processes f creates stay in the
// namespace; goroutines it starts do not inherit it.
func (n *NS) Do(f func() error) error {
	if err := nsrun.Do(n.Handle, f); err != nil {
		return fmt.Errorf("namespace %s: %w", n.Name, err)
	}
	return nil
}

// startKeptThread starts cmd, a daemon, inside the namespace from an OS
// thread that stays locked and alive until release is closed. Daemons get
// Pdeathsig so they die with the forking thread if our process is killed
// before Close runs; a thread returned to the runtime's pool is ended
// whenever a goroutine exits locked to it (as namespace creation does),
// which killed dnsmasq mid-lab (seen after lab reboot: no DHCP lease).
// Close the returned channel only once the daemon has been reaped.
func (n *NS) startKeptThread(cmd *exec.Cmd) (release chan struct{}, err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	started := make(chan error, 1)
	release = make(chan struct{})
	go func() {
		// Never unlocked: returning ends the thread, which by then has
		// no child left (or never started one).
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			started <- fmt.Errorf("reading the thread's network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(n.Handle); err != nil {
			started <- fmt.Errorf("entering %s: %w", n.Name, err)
			return
		}
		err = cmd.Start()
		if serr := netns.Set(orig); serr != nil && err == nil {
			err = fmt.Errorf("leaving %s: %w", n.Name, serr)
		}
		started <- err
		if err != nil {
			return
		}
		<-release
	}()
	if err := <-started; err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return nil, fmt.Errorf("%s in %s: %w", cmd.Path, n.Name, err)
	}
	return release, nil
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
	if !n.own {
		return nil
	}
	if err := nsrun.Remove(n.Path); err != nil {
		return fmt.Errorf("removing namespace %s: %w", n.Name, err)
	}
	n.own = false
	return nil
}
