package nstest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// Prefix starts the name of every namespace this package creates, so a
// leftover one (from a killed test binary) is easy to recognise.
const Prefix = "knmt-"

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
	n := &NS{Name: name, Path: nsrun.File(name), Handle: netns.None()}
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
		if err := nsrun.Remove(n.Path); err != nil {
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
	if created, err = nsrun.Create(n.Path); err != nil {
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
	if err := nsrun.Do(n.Handle, f); err != nil {
		return fmt.Errorf("namespace %s: %w", n.Name, err)
	}
	return nil
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
	entries, err := os.ReadDir(nsrun.RunDir)
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
		if err := nsrun.Remove(filepath.Join(nsrun.RunDir, e.Name())); err != nil {
			return removed, fmt.Errorf("removing stale namespace %s: %w", e.Name(), err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}
