package nm_test

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/nm"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// env is a namespace with eth1 (a veth to a peer namespace) managed by a
// private NetworkManager.
type env struct {
	ns       *nstest.NS
	nm       *nmrun.Instance
	stateDir string
}

func newEnv(t *testing.T, unmanaged ...string) *env {
	t.Helper()
	ns, peer := nstest.New(t), nstest.New(t)
	nstest.Veth(t, ns, "eth1", peer, "sw1")
	dir := t.TempDir()
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: ns.Path, Dir: filepath.Join(dir, "nm"), Unmanaged: unmanaged})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	return &env{ns: ns, nm: in, stateDir: filepath.Join(dir, "state")}
}

func (e *env) open(t *testing.T, persist bool) *nm.Backend {
	t.Helper()
	b, err := nm.Open(context.Background(), nm.Options{NetNS: e.ns.Path, Bus: e.nm.Bus, MemoryOnly: !persist})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func decode(t *testing.T, y string) *nmstate.State {
	t.Helper()
	s, err := nmstate.Decode([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bridgeAndAddress creates br0 with an address and changes eth1's.
const bridgeAndAddress = `
interfaces:
- name: br0
  type: linux-bridge
  state: up
  ipv4: {enabled: true, address: [{ip: 198.51.100.1, prefix-length: 24}]}
  bridge: {options: {stp: {enabled: false}}, port: []}
- name: eth1
  type: ethernet
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.9, prefix-length: 24}]}
`

// snapshot is what a rollback must restore: the profiles NetworkManager
// has (name, UUID, type, interface), each device's state and connection,
// and the kernel's links with their addresses.
func (e *env) snapshot(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	out, err := nmrun.Nmcli(ctx, e.nm.Bus, "-t", "-f", "NAME,UUID,TYPE,DEVICE", "connection", "show")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b.WriteString("profiles:\n" + sortLines(out))
	out, err = nmrun.Nmcli(ctx, e.nm.Bus, "-t", "-f", "DEVICE,STATE,CONNECTION", "device")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b.WriteString("devices:\n" + sortLines(out))
	links, err := e.ns.Netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var ls []string
	for _, l := range links {
		addrs, err := e.ns.Netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		var as []string
		for _, a := range addrs {
			as = append(as, a.IPNet.String())
		}
		ls = append(ls, l.Attrs().Name+" "+l.Type()+" "+strings.Join(as, ","))
	}
	sort.Strings(ls)
	b.WriteString("links:\n" + strings.Join(ls, "\n"))
	return b.String()
}

func sortLines(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(ls)
	return strings.Join(ls, "\n") + "\n"
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestRollbackAfterProbeFailure: an apply left pending (as the handler
// does while it probes) and then rolled back restores profiles, devices
// and addresses, and leaves no NetworkManager checkpoint.
func TestRollbackAfterProbeFailure(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, false)
	ctx := context.Background()
	before := e.snapshot(t)
	res, err := apply.Apply(ctx, b, decode(t, bridgeAndAddress), apply.Options{StateDir: e.stateDir, NoCommit: true, VerifyInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := apply.ReadCheckpoint(e.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Backend != nm.Name || rec.BackendCheckpoint == "" {
		t.Fatalf("record backend %q checkpoint %q, want the NetworkManager checkpoint recorded", rec.Backend, rec.BackendCheckpoint)
	}
	if during := e.snapshot(t); during == before {
		t.Fatalf("apply %s changed nothing", res.Checkpoint)
	}
	if _, err := apply.Rollback(ctx, b, e.stateDir); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, e.snapshot(t)); diff != "" {
		t.Errorf("after rollback (-before +after):\n%s", diff)
	}
	if cps, err := b.Checkpoints(); err != nil || len(cps) != 0 {
		t.Errorf("NetworkManager checkpoints left: %v (%v)", cps, err)
	}
}

// failing is the real backend whose first execution reports an error
// after it changed the node: the orchestrator must roll back what was
// done (later executions, the rollback's own, succeed).
type failing struct {
	*nm.Backend
	failed *bool
}

func failOnce(b *nm.Backend) failing { return failing{b, new(bool)} }

func (f failing) ExecuteMerged(ctx context.Context, m *nmstate.Merged, p *nmstate.Plan) error {
	if err := f.Backend.ExecuteMerged(ctx, m, p); err != nil {
		return err
	}
	if *f.failed {
		return nil
	}
	*f.failed = true
	return errors.New("injected failure after execution")
}

// TestRollbackAfterExecutionError: a failed apply rolls back through the
// checkpoint.
func TestRollbackAfterExecutionError(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, false)
	before := e.snapshot(t)
	_, err := apply.Apply(context.Background(), failOnce(b), decode(t, bridgeAndAddress), apply.Options{StateDir: e.stateDir})
	var f *apply.Failure
	if !errors.As(err, &f) || f.Rollback != nil {
		t.Fatalf("got %v, want a failure with a successful rollback", err)
	}
	if diff := cmp.Diff(before, e.snapshot(t)); diff != "" {
		t.Errorf("after the failed apply (-before +after):\n%s", diff)
	}
}

// TestHandlerKilledRollsBackByNetworkManagerTimer: the process that
// applied is gone (nothing of ours runs: no commit, no watchdog);
// NetworkManager's own checkpoint timer restores the previous state.
func TestHandlerKilledRollsBackByNetworkManagerTimer(t *testing.T) {
	e := newEnv(t)
	before := e.snapshot(t)
	b, err := nm.Open(context.Background(), nm.Options{NetNS: e.ns.Path, Bus: e.nm.Bus})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Apply(context.Background(), b, decode(t, bridgeAndAddress),
		apply.Options{StateDir: e.stateDir, NoCommit: true, Timeout: killedHandlerCheckpointTimeout, VerifyInterval: 100 * time.Millisecond}); err != nil {
		b.Close()
		t.Fatal(err)
	}
	b.Close() // the "handler" dies: its bus connection goes away
	if e.snapshot(t) == before {
		t.Fatal("apply changed nothing")
	}
	var last string
	if !waitFor(20*time.Second, func() bool { last = e.snapshot(t); return last == before }) {
		t.Errorf("NetworkManager did not roll back by itself (-before +now):\n%s", cmp.Diff(before, last))
	}
}

type nmBackend = nm.Backend

func openNM(ctx context.Context, netns, bus string) (*nm.Backend, error) {
	return nm.Open(ctx, nm.Options{NetNS: netns, Bus: bus})
}

// TestRouteWithoutInterfaceOutlivesItsHolder: a blackhole route lives in
// the profile of the apply's IP interface; when a later apply disables IP
// there (and names no other IP interface), the route stays, through the
// kernel touch-up, and the apply verifies.
func TestRouteWithoutInterfaceOutlivesItsHolder(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, false)
	ctx := context.Background()
	opts := apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}
	if _, err := apply.Apply(ctx, b, decode(t, `
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.251, prefix-length: 24}]}}
routes:
  config:
  - {destination: 198.51.200.0/24, route-type: blackhole}
`), opts); err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Apply(ctx, b, decode(t, `
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}}
routes:
  config:
  - {next-hop-interface: eth1, state: absent}
`), opts); err != nil {
		t.Fatal(err)
	}
	cur, err := b.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range cur.Routes.Config {
		if r.Destination != nil && r.Destination.String() == "198.51.200.0/24" {
			found = true
		}
	}
	if !found {
		t.Errorf("blackhole route lost: %+v", cur.Routes.Config)
	}
}

// TestDynamicIPReportedFromProfile: an interface set to DHCP (no server
// answers here) shows dhcp, autoconf and the auto-* flags as applied,
// read from its active profile, so the apply verifies.
func TestDynamicIPReportedFromProfile(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, false)
	ctx := context.Background()
	desired := decode(t, `
interfaces:
- name: eth1
  type: ethernet
  state: up
  ipv4: {enabled: true, dhcp: true, auto-dns: false}
  ipv6: {enabled: true, dhcp: true, autoconf: false, auto-gateway: false}
`)
	if _, err := apply.Apply(ctx, b, desired, apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	cur, err := b.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eth1 := cur.Find("eth1")[0]
	if eth1.IPv4 == nil || eth1.IPv4.DHCP == nil || !*eth1.IPv4.DHCP || *eth1.IPv4.AutoDNS || !*eth1.IPv4.AutoGateway {
		t.Errorf("eth1 ipv4 %+v", eth1.IPv4)
	}
	if eth1.IPv6 == nil || !*eth1.IPv6.DHCP || *eth1.IPv6.Autoconf || *eth1.IPv6.AutoGateway {
		t.Errorf("eth1 ipv6 %+v", eth1.IPv6)
	}
}
