package nm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// nmManager is the private NetworkManager's manager object on a
// connection of the test's own.
func (e *env) nmManager(t *testing.T) dbus.BusObject {
	t.Helper()
	conn, err := dbus.Connect(e.nm.Bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn.Object("org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager")
}

// globalServers is NetworkManager's global DNS as "servers | searches |
// options".
func globalServers(t *testing.T, mgr dbus.BusObject) string {
	t.Helper()
	v, err := mgr.GetProperty("org.freedesktop.NetworkManager.GlobalDnsConfiguration")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := v.Value().(map[string]dbus.Variant)
	var servers []string
	if doms, ok := d["domains"].Value().(map[string]dbus.Variant); ok {
		if all, ok := doms["*"].Value().(map[string]dbus.Variant); ok {
			servers, _ = all["servers"].Value().([]string)
		}
	}
	searches, _ := d["searches"].Value().([]string)
	options, _ := d["options"].Value().([]string)
	return strings.Join(servers, ",") + " | " + strings.Join(searches, ",") + " | " + strings.Join(options, ",")
}

func (e *env) dnsConfig(t *testing.T, b interface {
	Show(context.Context) (*nmstate.State, error)
}) (string, string) {
	t.Helper()
	s, err := b.Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	str := func(c *nmstate.DNSConfig) string {
		if c == nil {
			return "<nil>"
		}
		var ss []string
		for _, a := range c.Server {
			ss = append(ss, a.String())
		}
		return strings.Join(ss, ",") + " | " + strings.Join(c.Search, ",") + " | " + strings.Join(c.Options, ",")
	}
	return str(s.DNSResolver.Config), str(s.DNSResolver.Running)
}

const globalOnly = `
dns-resolver:
  config:
    server: [192.0.2.53, 2001:db8::53]
    search: [example.com]
`

// TestGlobalDNS: DNS with no interface that wants it goes to
// NetworkManager's global configuration (the case the backend refused
// before), read back as both config and running, kept in the intern
// configuration under the private /var/lib/NetworkManager; interface DNS
// (a static interface in the apply) clears it and goes to the profile;
// servers no profile can hold in order fall back to global; an empty
// configuration clears both.
func TestGlobalDNS(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, true)
	mgr := e.nmManager(t)
	ctx := context.Background()
	opts := apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}
	steps := []struct {
		name, desired string
		global, show  string
		profileDNS    string // eth1's ipv4.dns as nmcli prints it
	}{
		{"no interface: global", globalOnly, "192.0.2.53,2001:db8::53 | example.com | ", "192.0.2.53,2001:db8::53 | example.com | ", ""},
		{"static interface: profile", `
dns-resolver: {config: {server: [192.0.2.54], search: [example.org]}}
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.9, prefix-length: 24}]}}
`, " |  | ", "192.0.2.54 | example.org | ", "192.0.2.54"},
		{"interleaved: global fallback", `
dns-resolver: {config: {server: [192.0.2.55, 2001:db8::55, 192.0.2.56], search: []}}
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.9, prefix-length: 24}]}}
`, "192.0.2.55,2001:db8::55,192.0.2.56 |  | ", "192.0.2.55,2001:db8::55,192.0.2.56 |  | ", ""},
		{"purge", "dns-resolver: {config: {}}", " |  | ", " |  | ", ""},
	}
	for _, st := range steps {
		if _, err := apply.Apply(ctx, b, decode(t, st.desired), opts); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := globalServers(t, mgr); got != st.global {
			t.Errorf("%s: NetworkManager's global DNS %q, want %q", st.name, got, st.global)
		}
		cfg, running := e.dnsConfig(t, b)
		if cfg != st.show {
			t.Errorf("%s: dns-resolver.config %q, want %q", st.name, cfg, st.show)
		}
		if st.global != " |  | " && running != st.show {
			t.Errorf("%s: dns-resolver.running %q, want %q (global DNS is running as configured)", st.name, running, st.show)
		}
		out, err := nmrun.Nmcli(ctx, e.nm.Bus, "-g", "ipv4.dns", "connection", "show", "eth1")
		if err != nil {
			out = ""
		}
		if got := strings.TrimSpace(out); got != st.profileDNS {
			t.Errorf("%s: eth1's profile ipv4.dns %q, want %q", st.name, got, st.profileDNS)
		}
		if st.name == "no interface: global" {
			// NetworkManager keeps global DNS in its intern configuration,
			// in the test's own /var/lib/NetworkManager.
			data, err := os.ReadFile(filepath.Join(e.nm.LibDir, "NetworkManager-intern.conf"))
			if err != nil || !strings.Contains(string(data), "192.0.2.53") {
				t.Errorf("intern configuration under the private lib dir: %q (%v)", data, err)
			}
			if data, err := os.ReadFile("/var/lib/NetworkManager/NetworkManager-intern.conf"); err == nil && strings.Contains(string(data), "192.0.2.53") {
				t.Errorf("the machine's NetworkManager-intern.conf holds the test's DNS")
			}
			// And renders it into its resolv.conf (what a node's resolver
			// reads; the e2e suite checks this file).
			if !waitFor(5*time.Second, func() bool {
				data, _ := os.ReadFile(filepath.Join(e.nm.RunDir, "resolv.conf"))
				return strings.Contains(string(data), "nameserver 192.0.2.53") && strings.Contains(string(data), "search example.com")
			}) {
				data, _ := os.ReadFile(filepath.Join(e.nm.RunDir, "resolv.conf"))
				t.Errorf("NetworkManager's resolv.conf without the global DNS:\n%s", data)
			}
		}
	}
}

// TestGlobalDNSRollback: NetworkManager 1.42's checkpoint rollback leaves
// the global DNS as the apply set it (TRACK_INTERNAL_GLOBAL_DNS is 1.48:
// shown first with a bare checkpoint), so the backend restores it from
// what it recorded with its checkpoint: after a failed apply, and after a
// pending one rolled back (as the handler's failed probe does).
func TestGlobalDNSRollback(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, true)
	mgr := e.nmManager(t)
	ctx := context.Background()
	opts := apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}
	if _, err := apply.Apply(ctx, b, decode(t, globalOnly), opts); err != nil {
		t.Fatal(err)
	}
	before := globalServers(t, mgr)

	var cp dbus.ObjectPath
	if err := mgr.Call("org.freedesktop.NetworkManager.CheckpointCreate", 0, []dbus.ObjectPath{}, uint32(60), uint32(0x06)).Store(&cp); err != nil {
		t.Fatal(err)
	}
	set := map[string]dbus.Variant{"searches": dbus.MakeVariant([]string{}), "options": dbus.MakeVariant([]string{}),
		"domains": dbus.MakeVariant(map[string]dbus.Variant{"*": dbus.MakeVariant(map[string]dbus.Variant{"servers": dbus.MakeVariant([]string{"192.0.2.99"})})})}
	if err := mgr.SetProperty("org.freedesktop.NetworkManager.GlobalDnsConfiguration", dbus.MakeVariant(set)); err != nil {
		t.Fatal(err)
	}
	var res map[string]uint32
	if err := mgr.Call("org.freedesktop.NetworkManager.CheckpointRollback", 0, cp).Store(&res); err != nil {
		t.Fatal(err)
	}
	if got := globalServers(t, mgr); got == before {
		t.Logf("NetworkManager's own rollback restored the global DNS (a release with TRACK_INTERNAL_GLOBAL_DNS?)")
	} else {
		t.Logf("NetworkManager's own rollback left the global DNS at %q", got)
	}
	if err := mgr.SetProperty("org.freedesktop.NetworkManager.GlobalDnsConfiguration", dbus.MakeVariant(map[string]dbus.Variant{})); err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Apply(ctx, b, decode(t, globalOnly), opts); err != nil {
		t.Fatal(err)
	}

	other := decode(t, `dns-resolver: {config: {server: [198.51.100.53], search: [example.net]}}`)
	_, err := apply.Apply(ctx, failOnce(b), other.Clone(), opts)
	var f *apply.Failure
	if !errors.As(err, &f) || f.Rollback != nil {
		t.Fatalf("got %v, want a failure with a successful rollback", err)
	}
	if diff := cmp.Diff(before, globalServers(t, mgr)); diff != "" {
		t.Errorf("global DNS after the failed apply (-before +after):\n%s", diff)
	}

	o := opts
	o.NoCommit = true
	if _, err := apply.Apply(ctx, b, other.Clone(), o); err != nil {
		t.Fatal(err)
	}
	if got := globalServers(t, mgr); got != "198.51.100.53 | example.net | " {
		t.Errorf("global DNS while pending %q", got)
	}
	if _, err := apply.Rollback(ctx, b, e.stateDir); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, globalServers(t, mgr)); diff != "" {
		t.Errorf("global DNS after rollback (-before +after):\n%s", diff)
	}
}

// TestProfileDNSKeptWhenDNSUntouched: an apply that changes an interface
// whose profile holds DNS, without dns-resolver, keeps that DNS (nmstate
// updates the profile it finds); the profile was rewritten without it
// before.
func TestProfileDNSKeptWhenDNSUntouched(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, true)
	ctx := context.Background()
	opts := apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}
	if _, err := apply.Apply(ctx, b, decode(t, `
dns-resolver: {config: {server: [192.0.2.54], search: [example.org]}}
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.9, prefix-length: 24}]}}
`), opts); err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Apply(ctx, b, decode(t, "interfaces: [{name: eth1, type: ethernet, state: up, mtu: 1400}]"), opts); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := e.dnsConfig(t, b); cfg != "192.0.2.54 | example.org | " {
		t.Errorf("dns-resolver.config %q after the MTU change, want eth1's DNS kept", cfg)
	}
}

// TestDNSMovesWhenItsHolderLosesIP: an apply that disables IPv4 on the
// interface whose profile holds the DNS, without dns-resolver, places the
// current DNS again (here: global, no other interface wants it), as
// nmstate does, instead of losing it with the profile's IPv4 settings.
func TestDNSMovesWhenItsHolderLosesIP(t *testing.T) {
	e := newEnv(t)
	b := e.open(t, true)
	mgr := e.nmManager(t)
	ctx := context.Background()
	opts := apply.Options{StateDir: e.stateDir, VerifyInterval: 100 * time.Millisecond}
	if _, err := apply.Apply(ctx, b, decode(t, `
dns-resolver: {config: {server: [192.0.2.54], search: [example.org]}}
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, address: [{ip: 192.0.2.9, prefix-length: 24}]}}
`), opts); err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Apply(ctx, b, decode(t, "interfaces: [{name: eth1, type: ethernet, state: up, ipv4: {enabled: false}}]"), opts); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := e.dnsConfig(t, b); cfg != "192.0.2.54 | example.org | " {
		t.Errorf("dns-resolver.config %q, want the DNS kept", cfg)
	}
	if got := globalServers(t, mgr); got != "192.0.2.54 | example.org | " {
		t.Errorf("global DNS %q, want the DNS moved there", got)
	}
}
