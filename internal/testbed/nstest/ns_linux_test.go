package nstest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// ioDeadline only bounds a broken exchange so the test fails instead of
// hanging; nothing is asserted about how long anything takes.
const ioDeadline = 10 * time.Second

func TestNewCreatesAndRemovesNamespace(t *testing.T) {
	// The process's main thread (what /proc/self names) must stay where it
	// was: creating a namespace and running Do must never move it.
	hostBefore, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var n *NS
	t.Run("inside", func(t *testing.T) {
		n = New(t)
		if err := n.Do(func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(n.Name, Prefix) {
			t.Errorf("name %q does not start with %q", n.Name, Prefix)
		}
		if !isMountPoint(t, n.Path) {
			t.Errorf("%s is not a mount point", n.Path)
		}
		host, err := netns.GetFromPath("/proc/self/ns/net")
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close()
		if n.Handle.Equal(host) {
			t.Fatalf("namespace %s is the host's namespace", n.Name)
		}
		links, err := n.Netlink.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range links {
			got = append(got, l.Attrs().Name)
		}
		if diff := cmp.Diff([]string{"lo"}, got); diff != "" {
			t.Errorf("links of a fresh namespace (-want +got):\n%s", diff)
		}
		lo, err := n.Netlink.LinkByName("lo")
		if err != nil {
			t.Fatal(err)
		}
		if lo.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("lo is not up in %s", n.Name)
		}
	})
	if n == nil {
		t.Fatal("subtest did not create a namespace")
	}
	if hostAfter, err := os.Readlink("/proc/self/ns/net"); err != nil || hostAfter != hostBefore {
		t.Errorf("main thread namespace: got %s (err %v), want %s", hostAfter, err, hostBefore)
	}
	if _, err := os.Stat(n.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after cleanup, stat %s: got %v, want not-exist", n.Path, err)
	}
	if isMountPoint(t, n.Path) {
		t.Errorf("after cleanup, %s is still mounted", n.Path)
	}
}

// A namespace whose creating process has exited (a test binary killed by
// -test.timeout never runs its cleanups) is removed by the next New; one of
// a live process is not.
func TestNewSweepsNamespacesOfExitedProcesses(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := cmd.Process.Pid
	stale := filepath.Join(nsrun.RunDir, fmt.Sprintf("%s%d-deadbeef", Prefix, deadPID))
	live := filepath.Join(nsrun.RunDir, fmt.Sprintf("%s%d-deadbeef", Prefix, os.Getppid()))
	for _, p := range []string{stale, live} {
		created, err := nsrun.Create(p)
		t.Cleanup(func() {
			if created {
				nsrun.Remove(p)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	New(t)

	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale namespace of exited pid %d: stat got %v, want not-exist", deadPID, err)
	}
	if isMountPoint(t, stale) {
		t.Errorf("stale namespace %s is still mounted", stale)
	}
	if !isMountPoint(t, live) {
		t.Errorf("namespace %s of the live parent process was removed", live)
	}
}

func TestNamesAreUnique(t *testing.T) {
	a, b := New(t), New(t)
	if a.Name == b.Name {
		t.Fatalf("two namespaces share the name %s", a.Name)
	}
	if a.Handle.Equal(b.Handle) {
		t.Fatalf("%s and %s are the same namespace", a.Name, b.Name)
	}
}

func TestDoRunsInsideTheNamespace(t *testing.T) {
	n := New(t)
	var inside netns.NsHandle
	err := n.Do(func() error {
		var err error
		inside, err = netns.Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	if !inside.Equal(n.Handle) {
		t.Errorf("Do ran in %s, want namespace %s", inside, n.Name)
	}
}

func TestDoReturnsErrorsAndPanics(t *testing.T) {
	n := New(t)
	sentinel := errors.New("sentinel")
	if err := n.Do(func() error { return sentinel }); !errors.Is(err, sentinel) {
		t.Errorf("Do returned %v, want %v", err, sentinel)
	}
	err := n.Do(func() error { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Do after a panic returned %v, want an error naming the panic", err)
	}
}

func TestVethBetweenNamespaces(t *testing.T) {
	node, sw := New(t), New(t)
	Veth(t, node, "eth1", sw, "knmt-n1-eth1")

	for _, c := range []struct {
		ns   *NS
		name string
		peer string
	}{
		{node, "eth1", "knmt-n1-eth1"},
		{sw, "knmt-n1-eth1", "eth1"},
	} {
		l, err := c.ns.Netlink.LinkByName(c.name)
		if err != nil {
			t.Fatalf("%s in %s: %v", c.name, c.ns.Name, err)
		}
		if l.Type() != "veth" {
			t.Errorf("%s: type %q, want veth", c.name, l.Type())
		}
		if l.Attrs().Flags&net.FlagUp == 0 {
			t.Errorf("%s is not up", c.name)
		}
	}
	// The host namespace must not have gained either end.
	if _, err := netlink.LinkByName("knmt-n1-eth1"); err == nil {
		t.Errorf("veth end knmt-n1-eth1 leaked into the host namespace")
	}
}

func TestTrafficBetweenNamespaces(t *testing.T) {
	for _, tc := range []struct {
		network  string
		a, b     string // CIDRs on each end
		bAddress string
	}{
		{"udp4", "192.0.2.1/24", "192.0.2.2/24", "192.0.2.2"},
		{"udp6", "2001:db8::1/64", "2001:db8::2/64", "2001:db8::2"},
	} {
		t.Run(tc.network, func(t *testing.T) {
			a, b := New(t), New(t)
			Veth(t, a, "eth1", b, "eth1")
			a.AddrAdd(t, "eth1", tc.a)
			b.AddrAdd(t, "eth1", tc.b)

			var server net.PacketConn
			err := b.Do(func() error {
				var err error
				server, err = net.ListenPacket(tc.network, net.JoinHostPort(tc.bAddress, "0"))
				return err
			})
			if err != nil {
				t.Fatalf("listen in %s: %v", b.Name, err)
			}
			defer server.Close()

			var client net.Conn
			err = a.Do(func() error {
				var err error
				client, err = net.Dial(tc.network, server.LocalAddr().String())
				return err
			})
			if err != nil {
				t.Fatalf("dial from %s: %v", a.Name, err)
			}
			defer client.Close()

			deadline := time.Now().Add(ioDeadline)
			server.SetDeadline(deadline)
			client.SetDeadline(deadline)
			if _, err := client.Write([]byte("ping")); err != nil {
				t.Fatalf("send: %v", err)
			}
			buf := make([]byte, 16)
			nr, from, err := server.ReadFrom(buf)
			if err != nil {
				t.Fatalf("server read: %v", err)
			}
			if diff := cmp.Diff("ping", string(buf[:nr])); diff != "" {
				t.Errorf("server got (-want +got):\n%s", diff)
			}
			if _, err := server.WriteTo([]byte("pong"), from); err != nil {
				t.Fatalf("reply: %v", err)
			}
			nr, err = client.Read(buf)
			if err != nil {
				t.Fatalf("client read: %v", err)
			}
			if diff := cmp.Diff("pong", string(buf[:nr])); diff != "" {
				t.Errorf("client got (-want +got):\n%s", diff)
			}
		})
	}
}

func isMountPoint(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// Field 5 is the mount point.
		if fields := strings.Fields(s.Text()); len(fields) > 4 && fields[4] == path {
			return true
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}
