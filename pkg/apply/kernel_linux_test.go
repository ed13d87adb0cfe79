package apply_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// kernelNode is a fresh namespace with one "NIC" (eth1, a veth whose other
// end lives in a second namespace) and a private resolv.conf, opened
// through the real kernel backend.
type kernelNode struct {
	ns       *nstest.NS
	backend  *kernel.Backend
	stateDir string
}

func newKernelNode(t *testing.T) *kernelNode {
	t.Helper()
	node, sw := nstest.New(t), nstest.New(t)
	nstest.Veth(t, node, "eth1", sw, "sw-eth1")
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := kernel.Open(context.Background(), kernel.Options{NetNS: node.Path, ResolvConf: resolv})
	if err != nil {
		t.Fatalf("opening the kernel backend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return &kernelNode{ns: node, backend: b, stateDir: filepath.Join(dir, "state")}
}

func (n *kernelNode) options() apply.Options {
	return apply.Options{StateDir: n.stateDir, VerifyInterval: 100 * time.Millisecond, NetNS: n.ns.Path}
}

func (n *kernelNode) show(t *testing.T) *nmstate.State {
	t.Helper()
	s, err := n.backend.Show(context.Background())
	if err != nil {
		t.Fatalf("Show: %v", err)
	}
	return s
}

// snapshot renders a shown state for before/after comparisons, without the
// values the kernel changes by itself (bridge timers count down).
func snapshot(t *testing.T, s *nmstate.State) string {
	t.Helper()
	c := s.Clone()
	for i := range c.Interfaces {
		if br := c.Interfaces[i].LinuxBridge; br != nil && br.Options != nil {
			br.Options.GCTimer, br.Options.HelloTimer = nil, nil
		}
	}
	out, err := nmstate.EncodeYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func decode(t *testing.T, doc string) *nmstate.State {
	t.Helper()
	s, err := nmstate.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	return s
}

// bridgeState puts the NIC into a new bridge with addresses, adds a veth
// pair, a route through each, and DNS: the main linux-bridge story.
const bridgeState = `
dns-resolver:
  config:
    server: [192.0.2.53, 2001:db8::53]
    search: [example.test]
routes:
  config:
  - destination: 198.51.100.0/24
    next-hop-address: 192.0.2.254
    next-hop-interface: br0
    metric: 150
  - destination: 10.10.0.0/16
    next-hop-address: 203.0.113.254
    next-hop-interface: veth0
interfaces:
- name: br0
  type: linux-bridge
  state: up
  mtu: 1400
  ipv4:
    enabled: true
    dhcp: false
    address:
    - {ip: 192.0.2.1, prefix-length: 24}
  ipv6:
    enabled: true
    dhcp: false
    autoconf: false
    address:
    - {ip: 2001:db8::1, prefix-length: 64}
  bridge:
    options:
      stp: {enabled: false}
    port:
    - name: eth1
- name: eth1
  state: up
  mtu: 1400
- name: veth0
  type: veth
  state: up
  veth: {peer: veth0p}
  ipv4:
    enabled: true
    dhcp: false
    address:
    - {ip: 203.0.113.1, prefix-length: 24}
- name: veth0p
  type: veth
  state: up
`

// assertFixedPoint checks the project's invariant: planning desired again
// against the re-read state gives nothing to do.
func assertFixedPoint(t *testing.T, n *kernelNode, desired *nmstate.State) {
	t.Helper()
	m, err := nmstate.Merge(desired, n.show(t))
	if err != nil {
		t.Fatalf("Merge after apply: %v", err)
	}
	p, err := nmstate.PlanChanges(m)
	if err != nil {
		t.Fatalf("PlanChanges after apply: %v", err)
	}
	if !p.Empty() {
		t.Errorf("plan after apply is not empty (fixed point broken):\n%s", p)
	}
}

func TestKernelApplyBridgeVethAddressesRoutesIsFixedPoint(t *testing.T) {
	n := newKernelNode(t)
	desired := decode(t, bridgeState)
	res, err := apply.Apply(context.Background(), n.backend, desired, n.options())
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !res.Committed {
		t.Error("apply not committed")
	}
	if err := nmstate.Verify(desired, n.show(t)); err != nil {
		t.Errorf("state after apply: %v", err)
	}
	assertFixedPoint(t, n, desired)
	if _, err := apply.ReadCheckpoint(n.stateDir); !errors.Is(err, apply.ErrNoCheckpoint) {
		t.Errorf("checkpoint after commit: %v", err)
	}
}

func TestKernelFailedApplyRollsBackCompletely(t *testing.T) {
	n := newKernelNode(t)
	if _, err := apply.Apply(context.Background(), n.backend, decode(t, bridgeState), n.options()); err != nil {
		t.Fatalf("setting up: %v", err)
	}
	before := snapshot(t, n.show(t))
	// Interfaces, addresses and the first route change, then the kernel
	// refuses the second route: its gateway is on no connected network.
	failing := decode(t, `
routes:
  config:
  - destination: 198.51.100.0/24
    state: absent
  - destination: 203.0.113.128/25
    next-hop-address: 192.0.2.253
    next-hop-interface: br0
  - destination: 10.20.0.0/16
    next-hop-address: 10.99.99.1
    next-hop-interface: br0
interfaces:
- name: br0
  type: linux-bridge
  mtu: 1300
  ipv4:
    enabled: true
    address:
    - {ip: 192.0.2.1, prefix-length: 24}
    - {ip: 192.0.2.9, prefix-length: 24}
- name: br1
  type: linux-bridge
  ipv4:
    enabled: true
    address:
    - {ip: 172.16.0.1, prefix-length: 24}
  bridge:
    port:
    - name: veth0
- name: veth0
  type: veth
  state: up
  mtu: 1300
`)
	_, err := apply.Apply(context.Background(), n.backend, failing, n.options())
	var f *apply.Failure
	if !errors.As(err, &f) {
		t.Fatalf("Apply error = %v, want a *apply.Failure", err)
	}
	t.Logf("apply error (expected):\n%v", err)
	if f.Rollback != nil {
		t.Errorf("rollback failed: %v", f.Rollback)
	}
	// The failure must come late: after links and addresses changed, so
	// the rollback had real work to do.
	if !strings.Contains(f.Err.Error(), "10.20.0.0/16") || !strings.Contains(f.Plan.String(), "link add br1") {
		t.Errorf("apply failed at the wrong step: %v\nplan:\n%s", f.Err, f.Plan)
	}
	if diff := cmp.Diff(before, snapshot(t, n.show(t))); diff != "" {
		t.Errorf("state after failed apply differs from before (-before +after):\n%s", diff)
	}
	if _, err := apply.ReadCheckpoint(n.stateDir); !errors.Is(err, apply.ErrNoCheckpoint) {
		t.Errorf("checkpoint after rollback: %v", err)
	}
}

func TestKernelNoCommitThenRollbackRestores(t *testing.T) {
	n := newKernelNode(t)
	before := snapshot(t, n.show(t))
	o := n.options()
	o.NoCommit = true
	res, err := apply.Apply(context.Background(), n.backend, decode(t, bridgeState), o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if snapshot(t, n.show(t)) == before {
		t.Fatal("apply changed nothing")
	}
	id, err := apply.RollbackWithOptions(context.Background(), n.backend, n.stateDir, apply.RollbackOptions{VerifyInterval: 100 * time.Millisecond})
	if err != nil || id != res.Checkpoint {
		t.Fatalf("Rollback = %q, %v; want %q", id, err, res.Checkpoint)
	}
	if diff := cmp.Diff(before, snapshot(t, n.show(t))); diff != "" {
		t.Errorf("state after rollback differs from before (-before +after):\n%s", diff)
	}
}

func TestKernelNoCommitThenCommitKeeps(t *testing.T) {
	n := newKernelNode(t)
	o := n.options()
	o.NoCommit = true
	desired := decode(t, bridgeState)
	res, err := apply.Apply(context.Background(), n.backend, desired, o)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	id, err := apply.Commit(context.Background(), n.stateDir)
	if err != nil || id != res.Checkpoint {
		t.Fatalf("Commit = %q, %v; want %q", id, err, res.Checkpoint)
	}
	if err := nmstate.Verify(desired, n.show(t)); err != nil {
		t.Errorf("state after commit: %v", err)
	}
	assertFixedPoint(t, n, desired)
}

func TestKernelHostnameAndDNSRollBack(t *testing.T) {
	n := newKernelNode(t)
	uts := nstest.UTS(t, "node-before")
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch before.test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := kernel.Open(context.Background(), kernel.Options{NetNS: n.ns.Path, ResolvConf: resolv, UTSNS: uts})
	if err != nil {
		t.Fatalf("opening the kernel backend: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	n.backend = b
	before := snapshot(t, n.show(t))

	o := n.options()
	o.NoCommit = true
	desired := decode(t, `
hostname: {running: node-after}
dns-resolver:
  config: {server: [198.51.100.53], search: [after.test]}
`)
	if _, err := apply.Apply(context.Background(), b, desired, o); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got := n.show(t).Hostname; got == nil || got.Running == nil || *got.Running != "node-after" {
		t.Fatalf("hostname after apply = %+v, want node-after", got)
	}
	if _, err := apply.RollbackWithOptions(context.Background(), b, n.stateDir, apply.RollbackOptions{VerifyInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if diff := cmp.Diff(before, snapshot(t, n.show(t))); diff != "" {
		t.Errorf("state after rollback differs from before (-before +after):\n%s", diff)
	}
}
