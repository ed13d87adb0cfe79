package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Options selects what a Backend reads and writes.
type Options struct {
	// NetNS is the network namespace: a name under /run/netns or a path
	// (anything containing a slash). "" means this process's own namespace,
	// opened explicitly from /proc/self/ns/net.
	NetNS string
	// ResolvConf is the resolv.conf file that DNS is read from and written
	// to; "" = DNS is neither reported nor settable.
	ResolvConf string
	// UTSNS is the path of a UTS namespace (e.g. /proc/PID/ns/uts) whose
	// hostname is reported and set; "" = hostname neither reported nor
	// settable.
	UTSNS string
	// SupplicantDir holds the wpa_supplicant configurations, pid files
	// and control sockets of interfaces with an 802.1x section (see
	// supplicant_linux.go); "" = 802.1x is neither reported nor settable.
	SupplicantDir string
	// HostnameFile is the static hostname (as /etc/hostname), with UTSNS;
	// "" = the running hostname is the configured one and `config: ""`
	// is not supported (see hostname_linux.go).
	HostnameFile string
	// LLDPDir keeps which interfaces receive LLDP and the neighbours the
	// node runtime heard (see lldp_linux.go); "" = lldp is neither
	// reported nor settable.
	LLDPDir string
}

// Backend is an open view of one network namespace. Its methods may be
// called from any goroutine, but not concurrently with Close.
type Backend struct {
	opts Options
	// ns keeps the namespace open for netns switches and for resolving
	// veth peers' namespace ids.
	ns netns.NsHandle
	// uts is the UTS namespace, or -1.
	uts int
	// h is the typed netlink handle, with its sockets in ns.
	h *netlink.Handle
	// raw is a second NETLINK_ROUTE socket in ns for the requests the
	// library does not build or parse fully (raw link dumps, veth pairs,
	// bridge options, routes with metric locks).
	raw *nl.SocketHandle
	// tables is a third one for the route and rule dumps, so that Show
	// reads them while the link dump runs on raw (and the addresses on
	// h's socket).
	tables *nl.SocketHandle
	// eth is the ethtool generic netlink socket, dialled on first use.
	eth ethtoolConn
}

// Open opens the namespaces named by opts. The caller must Close the
// Backend.
func Open(ctx context.Context, opts Options) (*Backend, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := &Backend{opts: opts, ns: netns.None(), uts: -1}
	ok := false
	defer func() {
		if !ok {
			b.Close()
		}
	}()
	path := nsPath(opts.NetNS)
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	b.ns = ns
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink handle in %s: %w", path, err)
	}
	b.h = h
	// A bounded wait: a netlink reply that never comes must fail the call,
	// not hang the apply.
	if err := h.SetSocketTimeout(socketTimeout); err != nil {
		return nil, fmt.Errorf("netlink socket timeout: %w", err)
	}
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket in %s: %w", path, err)
	}
	b.raw = &nl.SocketHandle{Socket: s}
	if err := s.SetReceiveTimeout(&timevalTimeout); err != nil {
		return nil, fmt.Errorf("netlink socket timeout: %w", err)
	}
	t, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket in %s: %w", path, err)
	}
	b.tables = &nl.SocketHandle{Socket: t}
	if err := t.SetReceiveTimeout(&timevalTimeout); err != nil {
		return nil, fmt.Errorf("netlink socket timeout: %w", err)
	}
	if opts.UTSNS != "" {
		fd, err := unix.Open(opts.UTSNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("opening UTS namespace %s: %w", opts.UTSNS, err)
		}
		b.uts = fd
	}
	ok = true
	return b, nil
}

// nsPath turns Options.NetNS into a file path.
func nsPath(name string) string {
	switch {
	case name == "":
		return "/proc/self/ns/net"
	case strings.Contains(name, "/"):
		return name
	default:
		return filepath.Join("/run/netns", name)
	}
}

// Close releases the sockets and namespace handles.
func (b *Backend) Close() error {
	if b.h != nil {
		b.h.Close()
		b.h = nil
	}
	if b.raw != nil {
		b.raw.Close()
		b.raw = nil
	}
	if b.tables != nil {
		b.tables.Close()
		b.tables = nil
	}
	b.eth.close()
	if b.ns.IsOpen() {
		b.ns.Close()
		b.ns = netns.None()
	}
	if b.uts >= 0 {
		unix.Close(b.uts)
		b.uts = -1
	}
	return nil
}

// inNetNS runs f on a locked OS thread switched into the backend's network
// namespace, for what is bound to the opening thread's namespace (files
// under /proc/sys/net). If the thread cannot be switched back it stays
// locked, so the runtime discards it instead of reusing it.
func (b *Backend) inNetNS(f func() error) error {
	return onLockedThread(func() (bool, error) {
		orig, err := netns.Get()
		if err != nil {
			return true, fmt.Errorf("reading the thread's network namespace: %w", err)
		}
		defer orig.Close()
		if err := netns.Set(b.ns); err != nil {
			return true, fmt.Errorf("entering network namespace: %w", err)
		}
		ferr := f()
		return netns.Set(orig) == nil, ferr
	})
}

// inUTSNS runs f on a locked OS thread switched into the UTS namespace.
func (b *Backend) inUTSNS(f func() error) error {
	if b.uts < 0 {
		return errors.New("no UTS namespace configured")
	}
	return onLockedThread(func() (bool, error) {
		orig, err := unix.Open("/proc/thread-self/ns/uts", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return true, fmt.Errorf("reading the thread's UTS namespace: %w", err)
		}
		defer unix.Close(orig)
		if err := unix.Setns(b.uts, unix.CLONE_NEWUTS); err != nil {
			return true, fmt.Errorf("entering UTS namespace %s: %w", b.opts.UTSNS, err)
		}
		ferr := f()
		return unix.Setns(orig, unix.CLONE_NEWUTS) == nil, ferr
	})
}

// onLockedThread runs f on a fresh goroutine locked to its OS thread; f
// reports whether the thread is clean again (switched back) so it may be
// unlocked and reused.
func onLockedThread(f func() (clean bool, err error)) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		clean := false
		defer func() {
			if p := recover(); p != nil {
				errc <- fmt.Errorf("panic on namespace thread: %v", p)
			}
			if clean {
				runtime.UnlockOSThread()
			}
		}()
		var err error
		clean, err = f()
		errc <- err
	}()
	return <-errc
}

// readFileInNS reads a file from the namespace's point of view.
func (b *Backend) readFileInNS(path string) ([]byte, error) {
	var data []byte
	err := b.inNetNS(func() error {
		var err error
		data, err = os.ReadFile(path)
		return err
	})
	return data, err
}
