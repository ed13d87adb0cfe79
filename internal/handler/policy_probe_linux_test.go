package handler

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/probe"
)

// probeNode is a node on a lab switch (gateway 192.0.2.1, dnsmasq serving
// probe.lab.example), eth0 192.0.2.10/24 with its default route through
// the gateway, so the ping and DNS probes pass before any apply.
func probeNode(t *testing.T, name string) *polNode {
	t.Helper()
	sw, err := labnet.NewSwitch(context.Background(), labnet.Options{
		Records: map[string]netip.Addr{"probe.lab.example": netip.MustParseAddr("192.0.2.50")},
		// No router advertisements: the routes compared before and after
		// the rollback must not change by themselves.
		NodeSysctls: map[string]string{"net/ipv6/conf/default/accept_ra": "0"},
	})
	t.Cleanup(func() {
		if sw != nil {
			if err := sw.Close(); err != nil {
				t.Errorf("closing switch: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatalf("switch: %v", err)
	}
	ln, err := sw.AddNode(name, "eth0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := ln.NS.Netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := netlink.ParseAddr("192.0.2.10/24")
	addr.Flags = unix.IFA_F_NODAD
	if err := ln.NS.Netlink.AddrAdd(l, addr); err != nil {
		t.Fatal(err)
	}
	gw, _ := sw.Gateways()
	if err := ln.NS.Netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: gw.AsSlice()}); err != nil {
		t.Fatal(err)
	}
	return newPolNodeWith(t, name, kernel.Options{NetNS: ln.NS.Path, ResolvConf: ln.ResolvConf}, map[string]string{name: "yes"})
}

func withProbes(o *PolicyOptions) {
	o.NoProbes = false
	o.MaxRetries = 1
	o.Probes = probe.Options{
		DNSHost:       "probe.lab.example",
		API:           env.Config, // the test API server listens in the host namespace
		PingTimeout:   3 * time.Second,
		DNSTimeout:    3 * time.Second,
		APITimeout:    10 * time.Second,
		NodeTimeout:   10 * time.Second,
		SelectTimeout: 10 * time.Second,
		Interval:      200 * time.Millisecond,
	}
}

func TestPolicyUnreachableGatewayRolledBack(t *testing.T) {
	n := probeNode(t, "pol-gw")
	m := newTestMetrics(t)
	n.start(t, func(o *PolicyOptions) { withProbes(o); o.Metrics = m.Handler })
	before := n.show(t)
	p := n.createPolicy(t, "pol-gw", `routes:
  config:
  - destination: 0.0.0.0/0
    state: absent
  - destination: 0.0.0.0/0
    next-hop-address: 192.0.2.77
    next-hop-interface: eth0
`, map[string]string{"pol-gw": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	e := n.waitEnactment(t, p.Name, "Failed", phaseIs(1, phaseFailed))
	msg := condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing).Message
	if !strings.Contains(msg, "rolling back desired state configuration") || !strings.Contains(msg, "probe ping") {
		t.Errorf("Failing message %q, want a rollback after the ping probe", msg)
	}
	after := n.show(t)
	pick := func(s *nmstate.State) string {
		y, err := nmstate.EncodeYAML(&nmstate.State{Routes: s.Routes, Interfaces: []nmstate.Interface{{Name: "eth0", IPv4: s.Find("eth0")[0].IPv4}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(y)
	}
	if diff := cmp.Diff(pick(before), pick(after)); diff != "" {
		t.Errorf("routes and eth0 addresses after rollback (-before +after):\n%s", diff)
	}
	if n.applies.Load() != 1 {
		t.Errorf("%d applies, want 1", n.applies.Load())
	}
	m.wantRollback(t, n.name, "ping")
	ev := waitWarning(t, n.c, e.Name, "RolledBack")
	if want := "generation 1 rolled back (the ping probe failed after the apply): the previous network state is restored"; ev.Note != want || ev.Regarding.Kind != "NodeNetworkConfigurationEnactment" {
		t.Errorf("event about %s %s: %q, want %q", ev.Regarding.Kind, ev.Regarding.Name, ev.Note, want)
	}
}

// wantRollback checks the metrics of one apply rolled back after probe
// failed.
func (m testMetrics) wantRollback(t *testing.T, node, probe string) {
	t.Helper()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"knmstate_handler_apply_duration_seconds", []string{"node", node, "result", "rolled_back"}, 1},
		{"knmstate_handler_apply_duration_seconds", []string{"node", node}, 1},
		{"knmstate_handler_rollbacks_total", []string{"node", node, "reason", "probe"}, 1},
		{"knmstate_handler_rollbacks_total", []string{"node", node}, 1},
		{"knmstate_handler_probe_failures_total", []string{"node", node, "probe", probe}, 1},
		{"knmstate_handler_probe_failures_total", []string{"node", node}, 1},
	} {
		if got := m.value(t, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestPolicyBrokenRouteInOtherTableKept(t *testing.T) {
	n := probeNode(t, "pol-table")
	n.start(t, withProbes)
	p := n.createPolicy(t, "pol-table", `routes:
  config:
  - destination: 0.0.0.0/0
    next-hop-address: 192.0.2.77
    next-hop-interface: eth0
    table-id: 100
`, map[string]string{"pol-table": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	granted := time.Now()
	n.grant(t, p.Name, 1)
	n.waitEnactment(t, p.Name, "Available", phaseIs(1, phaseAvailable))
	t.Logf("permit to Available with all four probes: %v", time.Since(granted))
	found := false
	for _, r := range n.show(t).Routes.Running {
		if r.TableID != nil && *r.TableID == 100 && r.NextHopAddress != nil && r.NextHopAddress.String() == "192.0.2.77" {
			found = true
		}
	}
	if !found {
		t.Error("the table 100 default route was not kept")
	}
}

func TestPolicyWrongNameServerRolledBack(t *testing.T) {
	n := probeNode(t, "pol-dns")
	m := newTestMetrics(t)
	n.start(t, func(o *PolicyOptions) { withProbes(o); o.Metrics = m.Handler })
	before := n.show(t)
	if before.DNSResolver == nil || before.DNSResolver.Running == nil || len(before.DNSResolver.Running.Server) == 0 {
		t.Fatalf("setup: no name servers reported: %+v", before.DNSResolver)
	}
	p := n.createPolicy(t, "pol-dns", `dns-resolver:
  config:
    server:
    - 192.0.2.77
`, map[string]string{"pol-dns": "yes"}, nil)
	n.waitEnactment(t, p.Name, "Pending", phaseIs(1, phasePending))
	n.grant(t, p.Name, 1)
	e := n.waitEnactment(t, p.Name, "Failed", phaseIs(1, phaseFailed))
	if msg := condition(e, shared.NodeNetworkConfigurationEnactmentConditionFailing).Message; !strings.Contains(msg, "probe dns") {
		t.Errorf("Failing message %q, want the dns probe", msg)
	}
	m.wantRollback(t, n.name, "dns")
	after := n.show(t)
	if diff := cmp.Diff(before.DNSResolver.Running.Server, after.DNSResolver.Running.Server, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("name servers after rollback (-before +after):\n%s", diff)
	}
}
