package nm_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

func (e *env) eth1State(t *testing.T, b *nm.Backend) nmstate.InterfaceState {
	t.Helper()
	s, err := b.Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range s.Find("eth1") {
		return ifc.State
	}
	t.Fatal("eth1 not reported")
	return ""
}

func (e *env) nmDevice(t *testing.T, name string) string {
	t.Helper()
	out, err := nmrun.Nmcli(context.Background(), e.nm.Bus, "-g", "GENERAL.STATE,GENERAL.CONNECTION", "device", "show", name)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return strings.ReplaceAll(strings.TrimSpace(out), "\n", " ")
}

const eth1Static = `
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.7, prefix-length: 24}]}}
`

// TestUnmanagedByConfig: a device NetworkManager.conf's unmanaged-devices
// names (the lab's eth0) is reported `state: ignore`. Left out of the
// desired state it stays so: a route through it is set by the kernel
// touch-up (verified; a failed apply rolls it back) and it gets no
// profile. Named in the desired state, NetworkManager refuses to activate
// it (DependencyFailed), as upstream's apply fails: a dependency error
// naming it, and nothing changed.
func TestUnmanagedByConfig(t *testing.T) {
	e := newEnv(t, "eth1")
	b := e.open(t, true)
	ctx := context.Background()
	if st := e.eth1State(t, b); st != nmstate.StateIgnore {
		t.Fatalf("eth1 reported %q, want ignore", st)
	}
	// eth1 configured outside NetworkManager, as the lab's eth0 is by its
	// node runtime.
	l, err := e.ns.Netlink.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ns.Netlink.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	if err := e.ns.Netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(192, 0, 2, 8), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t)
	route := decode(t, `
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth1}
`)
	_, err = apply.Apply(ctx, failOnce(b), route.Clone(), apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond})
	var f *apply.Failure
	if !errors.As(err, &f) || f.Rollback != nil {
		t.Fatalf("got %v, want a failure with a successful rollback", err)
	}
	if diff := cmp.Diff(before, e.snapshot(t)); diff != "" {
		t.Errorf("after the failed apply (-before +after):\n%s", diff)
	}
	if _, err := apply.Apply(ctx, b, route, apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if st := e.eth1State(t, b); st != nmstate.StateIgnore {
		t.Errorf("eth1 reported %q after the route apply, want ignore", st)
	}
	if ps := e.profilesOf(t, "eth1"); len(ps) != 0 {
		t.Errorf("profiles %v, want none for the unmanaged eth1", ps)
	}
	routes, _ := e.ns.Netlink.RouteList(nil, netlink.FAMILY_V4)
	found := false
	for _, r := range routes {
		found = found || r.Dst != nil && r.Dst.String() == "198.51.100.0/24"
	}
	if !found {
		t.Error("route through eth1 not in the kernel")
	}
	if _, err := apply.Apply(ctx, b, decode(t, `routes: {config: [{destination: 198.51.100.0/24, next-hop-interface: eth1, state: absent}]}`), apply.Options{StateDir: e.stateDir}); err != nil {
		t.Fatal(err)
	}

	_, err = apply.Apply(ctx, b, decode(t, eth1Static), apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond})
	var ne *nmstate.Error
	if !errors.As(err, &ne) || ne.Kind != nmstate.Dependency || !strings.Contains(err.Error(), "eth1") {
		t.Fatalf("got %v, want a dependency error naming eth1", err)
	}
	t.Logf("apply naming eth1: %v", err)
	if diff := cmp.Diff(before, e.snapshot(t)); diff != "" {
		t.Errorf("after the refused apply (-before +after):\n%s", diff)
	}
	if cps, err := b.Checkpoints(); err != nil || len(cps) != 0 {
		t.Errorf("NetworkManager checkpoints left: %v (%v)", cps, err)
	}
}

// TestUnmanagedAtRunTimeTakenOver: a device set unmanaged at run time
// (`nmcli device set eth1 managed no`) is reported `state: ignore`; a
// desired state naming it makes NetworkManager manage it by activating
// its new profile, as upstream's apply does. A failed apply of the same
// rolls back through the checkpoint: eth1 unmanaged and ignored again,
// without a profile.
func TestUnmanagedAtRunTimeTakenOver(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, true)
	ctx := context.Background()
	if out, err := nmrun.Nmcli(ctx, e.nm.Bus, "device", "set", "eth1", "managed", "no"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if st := e.eth1State(t, b); st != nmstate.StateIgnore {
		t.Fatalf("eth1 reported %q, want ignore", st)
	}
	before := e.snapshot(t)
	_, err := apply.Apply(ctx, failOnce(b), decode(t, eth1Static), apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond})
	var f *apply.Failure
	if !errors.As(err, &f) || f.Rollback != nil {
		t.Fatalf("got %v, want a failure with a successful rollback", err)
	}
	var after string
	if !waitFor(5*time.Second, func() bool { after = e.snapshot(t); return after == before }) {
		t.Errorf("after the failed apply (-before +after):\n%s", cmp.Diff(before, after))
	}
	if st := e.eth1State(t, b); st != nmstate.StateIgnore {
		t.Errorf("eth1 reported %q after the rollback, want ignore", st)
	}

	if _, err := apply.Apply(ctx, b, decode(t, eth1Static), apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if got := e.nmDevice(t, "eth1"); got != "100 (connected) eth1" {
		t.Errorf("NetworkManager's eth1: %q, want connected with profile eth1", got)
	}
	if st := e.eth1State(t, b); st != nmstate.StateUp {
		t.Errorf("eth1 reported %q, want up", st)
	}
}
