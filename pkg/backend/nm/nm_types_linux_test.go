package nm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// newNICEnv is newEnv with the given NICs (each a veth to a peer
// namespace, as eth1 is there).
func newNICEnv(t *testing.T, nics ...string) *env {
	t.Helper()
	ns, peer := nstest.New(t), nstest.New(t)
	for i, n := range nics {
		nstest.Veth(t, ns, n, peer, fmt.Sprintf("sw%d", i+1))
	}
	dir := t.TempDir()
	in, err := nmrun.Start(context.Background(), nmrun.Options{NetNS: ns.Path, Dir: filepath.Join(dir, "nm")})
	t.Cleanup(func() { in.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	return &env{ns: ns, nm: in, stateDir: filepath.Join(dir, "state")}
}

// openCounting opens the backend and counts the kernel touch-ups: what
// the profiles did not make NetworkManager do.
func (e *env) openCounting(t *testing.T) (*nm.Backend, *[]string) {
	t.Helper()
	var touchUps []string
	b, err := nm.Open(context.Background(), nm.Options{NetNS: e.ns.Path, Bus: e.nm.Bus, OnTouchUp: func(p *nmstate.Plan) { touchUps = append(touchUps, p.String()) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, &touchUps
}

// applyFixedPoint applies y (apply verifies it), then checks that
// planning it again against NetworkManager's state is empty and that
// NetworkManager did it all (no kernel touch-up).
func applyFixedPoint(t *testing.T, e *env, b *nm.Backend, touchUps *[]string, y string) *nmstate.State {
	t.Helper()
	return applyFixedPointAllowing(t, e, b, touchUps, y, nil)
}

// applyFixedPointAllowing is applyFixedPoint where the kernel touch-up
// may do the operations allowed matches (what NetworkManager cannot do).
func applyFixedPointAllowing(t *testing.T, e *env, b *nm.Backend, touchUps *[]string, y string, allowed *regexp.Regexp) *nmstate.State {
	t.Helper()
	ctx := context.Background()
	*touchUps = nil
	desired := decode(t, y)
	if _, err := apply.Apply(ctx, b, desired.Clone(), apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("apply: %v\nNetworkManager log %s, its end:\n%s", err, e.nm.Log, logTail(e.nm.Log))
	}
	cur, err := b.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nmstate.Merge(desired.Clone(), cur)
	if err != nil {
		t.Fatalf("merge after apply: %v", err)
	}
	p, err := nmstate.PlanChanges(m)
	if err != nil {
		t.Fatalf("plan after apply: %v", err)
	}
	if !p.Empty() {
		t.Errorf("plan after apply is not empty (fixed point broken):\n%s", p)
	}
	failed := false
	for _, tu := range *touchUps {
		for _, op := range strings.Split(strings.TrimSpace(tu), "\n") {
			if allowed == nil || !allowed.MatchString(op) {
				t.Errorf("the kernel touch-up had to do what the profiles did not: %s", op)
				failed = true
			}
		}
	}
	if failed {
		t.Logf("NetworkManager's log about ports and options (its last 60 such lines):\n%s", logGrep(e.nm.Log, "attach", "port", "option", "queue", "sysctl", "Activation"))
	}
	return cur
}

// logGrep is the last 60 lines of NetworkManager's log holding one of
// words.
func logGrep(path string, words ...string) string {
	data, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	if len(out) > 60 {
		out = out[len(out)-60:]
	}
	return strings.Join(out, "\n")
}

// logTail is the end of NetworkManager's log (the kernel lane's guest
// keeps no files).
func logTail(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 6000 {
		data = data[len(data)-6000:]
	}
	return string(data)
}

func link(t *testing.T, e *env, name string) netlink.Link {
	t.Helper()
	l, err := e.ns.Netlink.LinkByName(name)
	if err != nil {
		t.Fatalf("link %s: %v", name, err)
	}
	return l
}

const vxlanState = `
interfaces:
- name: eth1
  type: ethernet
  state: up
  ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}
- name: vxlan10
  type: vxlan
  state: up
  mtu: 1400
  ipv4: {enabled: true, address: [{ip: 198.51.100.1, prefix-length: 24}]}
  vxlan: {base-iface: eth1, id: %d, local: 192.0.2.1, remote: 192.0.2.2, destination-port: 4789, learning: false}
`

// TestVXLANThroughNetworkManager: a VXLAN on eth1 with its endpoints,
// port, learning, MTU and an address is made by NetworkManager's profile,
// verifies and is a fixed point; changing its id (which NetworkManager
// cannot change live) takes it down first and recreates the link.
func TestVXLANThroughNetworkManager(t *testing.T) {
	e := newNICEnv(t, "eth1")
	b, touchUps := e.openCounting(t)
	applyFixedPoint(t, e, b, touchUps, fmt.Sprintf(vxlanState, 10))
	vx, ok := link(t, e, "vxlan10").(*netlink.Vxlan)
	if !ok || vx.VxlanId != 10 || vx.Port != 4789 || vx.Learning || vx.Attrs().MTU != 1400 {
		t.Fatalf("vxlan10 is %+v", link(t, e, "vxlan10"))
	}
	applyFixedPoint(t, e, b, touchUps, fmt.Sprintf(vxlanState, 11))
	if vx, ok := link(t, e, "vxlan10").(*netlink.Vxlan); !ok || vx.VxlanId != 11 {
		t.Errorf("after the id change vxlan10 is %+v", link(t, e, "vxlan10"))
	}
	out, err := nmrun.Nmcli(context.Background(), e.nm.Bus, "-g", "vxlan.id,GENERAL.STATE", "connection", "show", "vxlan10")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out != "11\nactivated\n" {
		t.Errorf("nmcli shows vxlan10 %q, want id 11 activated", out)
	}
}

const bridgePortsState = `
interfaces:
- name: br0
  type: linux-bridge
  state: up
  ipv4: {enabled: true, address: [{ip: 198.51.100.1, prefix-length: 24}]}
  bridge: {options: {stp: {enabled: false}}, port: [{name: eth1}, {name: eth2}]}
`

// TestBridgePortsThroughNetworkManager: a bridge with two ports is made
// by profiles alone (the ports' IPv6 is NetworkManager's to leave: no
// kernel touch-up), and rolling it back through the checkpoint leaves
// profiles, devices and addresses exactly as before (no profile is
// written for the former ports).
func TestBridgePortsThroughNetworkManager(t *testing.T) {
	e := newNICEnv(t, "eth1", "eth2")
	b, touchUps := e.openCounting(t)
	before := e.snapshot(t)
	applyFixedPoint(t, e, b, touchUps, bridgePortsState)
	for _, p := range []string{"eth1", "eth2"} {
		if link(t, e, p).Attrs().MasterIndex != link(t, e, "br0").Attrs().Index {
			t.Errorf("%s is not a port of br0", p)
		}
	}
	e2 := newNICEnv(t, "eth1", "eth2")
	b2 := e2.open(t, false)
	before = e2.snapshot(t)
	ctx := context.Background()
	if _, err := apply.Apply(ctx, b2, decode(t, bridgePortsState), apply.Options{StateDir: e2.stateDir, NoCommit: true, VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Rollback(ctx, b2, e2.stateDir); err != nil {
		t.Fatal(err)
	}
	var last string
	if !waitFor(10*time.Second, func() bool { last = e2.snapshot(t); return last == before }) {
		t.Errorf("after rollback (-before +after):\n%s", cmp.Diff(before, last))
	}
}

// TestBridgePortOptionsThroughNetworkManager: STP port options, which
// NetworkManager writes through sysfs (brport), are applied by it, not by
// the kernel touch-up (nmrun's sysfs must be writable below /sys/devices).
func TestBridgePortOptionsThroughNetworkManager(t *testing.T) {
	e := newNICEnv(t, "eth1", "eth2")
	b, touchUps := e.openCounting(t)
	applyFixedPoint(t, e, b, touchUps, `
interfaces:
- name: br0
  type: linux-bridge
  state: up
  bridge:
    options: {stp: {enabled: true}}
    port:
    - {name: eth1, stp-path-cost: 7, stp-priority: 20}
    - name: eth2
`)
}
