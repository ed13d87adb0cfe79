package noded

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/labnet/labnettest"
)

// applyFollowed runs the real apply sequence with the runtime following
// through ApplyBackend, as nmstatectl apply and the service do.
func applyFollowed(t *testing.T, node *labnet.Node, stateDir string, follow FollowFunc, y string) {
	t.Helper()
	desired, err := nmstate.Decode([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ab := &ApplyBackend{Inner: openBackend(t, node), StateDir: stateDir, Follow: follow}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := apply.Apply(ctx, ab, desired, apply.Options{
		StateDir: stateDir, NetNS: node.NS.Path, ResolvConf: node.ResolvConf,
		OnCheckpoint: ab.OnCheckpoint,
	}); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// Without a runtime, apply acquires the lease once, installs it and warns
// that nothing renews it; show reports the interface as dhcp: true.
func TestApplyWithoutRuntimeAcquiresOnce(t *testing.T) {
	_, node := labnettest.New(t, labnet.Options{})
	dir := t.TempDir()
	var mu sync.Mutex
	var warnings []string
	follow := DetachedFollow(Options{Namespace: node.NS.Handle, Installer: KernelInstaller{B: openBackend(t, node)}, StateDir: dir},
		30*time.Second, func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() })
	applyFollowed(t, node, dir, follow, "interfaces:\n- name: eth0\n  ipv4: {enabled: true, dhcp: true, auto-dns: false}\n")

	rec, err := ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Leases) != 1 || !rec.Leases[0].OneShot {
		t.Fatalf("record leases %+v, want one one-shot lease", rec.Leases)
	}
	dynamicAddr(t, node, "eth0", rec.Leases[0].Address)
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "nmstatectl service") {
		t.Errorf("warnings %q, want one telling that renewal needs the runtime", warnings)
	}
	// show (through the same wrapper) reports the applied settings.
	st, err := (&ApplyBackend{Inner: openBackend(t, node), StateDir: dir}).Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range st.Interfaces {
		if ifc.Name != "eth0" {
			continue
		}
		if got := fmt.Sprint(*ifc.IPv4.DHCP, *ifc.IPv4.AutoDNS); got != "true false" {
			t.Errorf("show eth0 dhcp, auto-dns = %s, want true false", got)
		}
	}
}

// With a runtime running for the state directory, apply submits the state
// to it, and switching to a static address afterwards stops the client.
func TestApplyWithRunningRuntimeSubmits(t *testing.T) {
	_, node := labnettest.New(t, labnet.Options{})
	dir := t.TempDir()
	rt := startRuntime(t, node, dir)
	<-rt.Ready()
	follow := DetachedFollow(Options{Namespace: node.NS.Handle, Installer: KernelInstaller{B: openBackend(t, node)}, StateDir: dir},
		30*time.Second, func(s string) { t.Errorf("unexpected warning: %s", s) })
	applyFollowed(t, node, dir, follow, "interfaces:\n- name: eth0\n  ipv4: {enabled: true, dhcp: true}\n")
	l := waitLease(t, rt.Runtime, "eth0", 4)
	if l.OneShot {
		t.Errorf("the runtime's lease is marked one-shot")
	}
	dynamicAddr(t, node, "eth0", l.Address)

	applyFollowed(t, node, dir, follow,
		"interfaces:\n- name: eth0\n  ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.50, prefix-length: 24}]}\n")
	eventually(t, 30*time.Second, func() string {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if len(rt.clients) != 0 {
			return "the dhcp client still runs"
		}
		return ""
	})
	var got []string
	for _, a := range kernelAddrs(t, node, "eth0", netlink.FAMILY_V4) {
		got = append(got, addrPrefix(a).String())
	}
	if fmt.Sprint(got) != "[192.0.2.50/24]" {
		t.Errorf("eth0 IPv4 addresses %v, want only the static one", got)
	}
}

// TestApplyNotTouchingInterfaceKeepsItsClient: through the real apply
// sequence (merge, plan, verify), an apply of another interface leaves a
// DHCP interface's client running, with its options.
func TestApplyNotTouchingInterfaceKeepsItsClient(t *testing.T) {
	_, node := labnettest.New(t, labnet.Options{}, "eth0", "eth1")
	dir := t.TempDir()
	rt := startRuntime(t, node, dir)
	<-rt.Ready()
	applyFollowed(t, node, dir, rt.Update,
		"interfaces:\n- name: eth0\n  ipv4: {enabled: true, dhcp: true, auto-dns: false, dhcp-client-id: iaid+duid}\n")
	l := waitLease(t, rt.Runtime, "eth0", 4)
	gen := func() uint64 {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if c, ok := rt.clients[Key{"eth0", 4}]; ok {
			return c.gen
		}
		return 0
	}
	before := gen()
	applyFollowed(t, node, dir, rt.Update,
		"interfaces:\n- name: eth1\n  ipv4: {enabled: true, address: [{ip: 198.51.100.7, prefix-length: 24}]}\n")
	if after := gen(); after != before || after == 0 {
		t.Errorf("eth0's client was restarted by an apply of eth1 (generation %d -> %d)", before, after)
	}
	s := rt.Specs()["eth0"]
	if s.V4 == nil || s.V4.Auto.DNS || s.V4.ClientID != "iaid+duid" {
		t.Errorf("eth0 spec after the eth1 apply: %+v, want auto-dns false and client id kept", s.V4)
	}
	if got, ok := leaseOf(rt.Runtime, "eth0", 4); !ok || got.Address != l.Address {
		t.Errorf("eth0 lease %v (%v), want %s kept", got.Address, ok, l.Address)
	}
}
