package labnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// pins is how many node namespaces the container test pins one after the
// other: with namespace ids from per-CPU batches, about half of the binds
// of the old design failed when the container's namespace was made on the
// last CPU.
const pins = 200

// TestNodeNamespacesInPrivateMountNS is the regression test of node
// namespaces inside a container: in a mount namespace that is not the
// initial one, pinning each node's mount namespace by a bind mount failed
// at random with EINVAL (see nodeNamespaces).
func TestNodeNamespacesInPrivateMountNS(t *testing.T) {
	if !nstest.InPrivateMountNS(t) {
		return
	}
	t.Logf("old design, for comparison: the kernel refused %d of %d bind mounts of a new mount namespace's file here", oldPinFailures(t, pins), pins)

	t.Run("pins", func(t *testing.T) {
		dir := t.TempDir()
		s := &Switch{Dir: dir}
		if err := s.privateNSDir(); err != nil {
			t.Fatal(err)
		}
		var nodes []*Node
		t.Cleanup(func() {
			for _, n := range nodes {
				if err := n.unmount(); err != nil {
					t.Error(err)
				}
			}
			if err := unmountUnder(dir); err != nil {
				t.Error(err)
			}
			if mps, err := MountsUnder(dir); err != nil || len(mps) != 0 {
				t.Errorf("mounts left under %s: %v (%v)", dir, mps, err)
			}
		})
		failed := 0
		for i := range pins {
			n := &Node{Name: fmt.Sprintf("node%03d", i), ResolvConf: filepath.Join(dir, fmt.Sprintf("resolv%03d.conf", i))}
			want := "nameserver 192.0.2." + itoa(1+i%250) + "\n"
			if err := os.WriteFile(n.ResolvConf, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			err := s.nodeNamespaces(n)
			nodes = append(nodes, n)
			if err != nil {
				failed++
				t.Errorf("pin %d: %v", i, err)
				continue
			}
			host, resolv, err := readInNode(n)
			if err != nil {
				t.Errorf("pin %d: %v", i, err)
				continue
			}
			if host != n.Name || resolv != want {
				t.Errorf("pin %d: hostname %q and /etc/resolv.conf %q inside, want %q and %q", i, host, resolv, n.Name, want)
			}
		}
		t.Logf("%d of %d node namespaces failed to pin", failed, pins)
	})

	t.Run("switch with three nodes", func(t *testing.T) {
		lab := testLabName(t, "ctr")
		dir := t.TempDir()
		sw := newTestSwitch(t, Options{Name: lab, Dir: dir, NodeNamespaces: true})
		for i := range 3 {
			name := fmt.Sprintf("node%02d", i+1)
			node, err := sw.AddNode(name, "eth0", "eth1")
			if err != nil {
				t.Fatal(err)
			}
			if got := nsenter(t, node, "hostname"); got != name+"\n" {
				t.Errorf("hostname in %s = %q", name, got)
			}
			want, _ := os.ReadFile(node.ResolvConf)
			if got := nsenter(t, node, "cat", "/etc/resolv.conf"); got != string(want) {
				t.Errorf("/etc/resolv.conf in %s = %q, want %q", name, got, want)
			}
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
		if mps, err := MountsUnder(dir); err != nil || len(mps) != 0 {
			t.Errorf("mounts left under %s after Close: %v (%v)", dir, mps, err)
		}
		if names, _ := Namespaces(lab); len(names) != 0 {
			t.Errorf("namespaces left after Close: %v", names)
		}
	})
}

// readInNode reads the hostname and /etc/resolv.conf as the node sees
// them, from a thread that joins the node's mount and UTS namespaces and
// is discarded afterwards.
func readInNode(n *Node) (host, resolv string, err error) {
	type result struct {
		host, resolv string
		err          error
	}
	c := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var r result
		r.err = func() error {
			// setns into a mount namespace needs a thread of its own
			// filesystem context, not the one Go's threads share.
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return fmt.Errorf("unshare fs: %w", err)
			}
			// Both opened first: the UTS file is not visible inside the
			// node's mount namespace.
			var fds []int
			defer func() {
				for _, fd := range fds {
					unix.Close(fd)
				}
			}()
			for _, path := range []string{n.MountNS, n.UTSNS} {
				fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					return fmt.Errorf("opening %s: %w", path, err)
				}
				fds = append(fds, fd)
			}
			for i, kind := range []int{unix.CLONE_NEWNS, unix.CLONE_NEWUTS} {
				if err := unix.Setns(fds[i], kind); err != nil {
					return fmt.Errorf("entering namespace %d: %w", i, err)
				}
			}
			var uts unix.Utsname
			if err := unix.Uname(&uts); err != nil {
				return err
			}
			r.host = unix.ByteSliceToString(uts.Nodename[:])
			b, err := os.ReadFile("/etc/resolv.conf")
			r.resolv = string(b)
			return err
		}()
		c <- r
	}()
	r := <-c
	return r.host, r.resolv, r.err
}

// oldPinFailures counts how often the kernel refuses to bind-mount the file
// of a mount namespace just made by another thread, as nodeNamespaces did
// until it held the namespace by a file descriptor instead.
func oldPinFailures(t *testing.T, tries int) int {
	target := filepath.Join(t.TempDir(), "pin")
	if err := os.WriteFile(target, nil, 0o400); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for range tries {
		tidc, release := make(chan int, 1), make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				tidc <- -1
				return
			}
			tidc <- unix.Gettid()
			<-release
		}()
		tid := <-tidc
		if tid < 0 {
			t.Fatal("unshare of a mount namespace failed")
		}
		err := unix.Mount(fmt.Sprintf("/proc/%d/task/%d/ns/mnt", os.Getpid(), tid), target, "", unix.MS_BIND, "")
		close(release)
		switch {
		case err == nil:
			if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
				t.Fatal(err)
			}
		case errors.Is(err, unix.EINVAL):
			failed++
		default:
			t.Fatalf("bind mount of a mount namespace: %v", err)
		}
	}
	return failed
}
