package nm_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestRouteChangeOnAssumedDeviceRollsBack: eth1 configured in the kernel
// before NetworkManager starts (address and default route), so
// NetworkManager assumes it, as the handler tests' eth0. An apply that
// moves the default route to another gateway gives eth1 a profile of
// ours, and the rollback through NetworkManager's checkpoint re-activates
// it: both times NetworkManager flushes and re-adds eth1's address, and a
// read in between sees IPv4 disabled, which no route through eth1 merges
// into. The apply must wait for the addresses (not only for the device
// to be past IP configuration) and the rollback must re-read until they
// are back. Under load this failed most runs before that.
func TestRouteChangeOnAssumedDeviceRollsBack(t *testing.T) {
	ns, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "sw1")
	ns.LinkUp(t, "eth1")
	peer.LinkUp(t, "sw1")
	l, err := ns.Netlink.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := netlink.ParseAddr("192.0.2.10/24")
	a.Flags = unix.IFA_F_NODAD
	if err := ns.Netlink.AddrAdd(l, a); err != nil {
		t.Fatal(err)
	}
	if err := ns.Netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.ParseIP("192.0.2.1")}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: ns.Path, Dir: filepath.Join(dir, "nm")})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	e := &env{ns: ns, nm: in, stateDir: filepath.Join(dir, "state")}
	b := e.open(t, false)
	ctx := context.Background()
	routes := func() string {
		s, err := b.Show(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v4 := s.Find("eth1")[0].IPv4
		for i := range v4.Address {
			// NetworkManager's default MPTCP (net.mptcp.enabled is 1 in
			// the namespace: a subflow endpoint on the interface with the
			// default route) leaves an endpoint on eth1 that its rollback
			// does not remove; the backend reports it (as nmstate would)
			// but does not make it. Not what this test is about.
			v4.Address[i].MPTCPFlags = nil
		}
		y, err := nmstate.EncodeYAML(&nmstate.State{Routes: s.Routes, Interfaces: []nmstate.Interface{{Name: "eth1", IPv4: v4}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(y)
	}
	before := routes()
	if _, err := apply.Apply(ctx, b, decode(t, `routes:
  config:
  - destination: 0.0.0.0/0
    state: absent
  - destination: 0.0.0.0/0
    next-hop-address: 192.0.2.77
    next-hop-interface: eth1
`), apply.Options{StateDir: e.stateDir, NoCommit: true, VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if _, err := apply.RollbackWithOptions(ctx, b, e.stateDir, apply.RollbackOptions{VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if diff := cmp.Diff(before, routes()); diff != "" {
		t.Errorf("routes and eth1 addresses after the rollback (-before +after):\n%s", diff)
	}
	if cps, err := b.Checkpoints(); err != nil || len(cps) != 0 {
		t.Errorf("NetworkManager checkpoints left: %v (%v)", cps, err)
	}
}
