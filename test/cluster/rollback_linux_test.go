package cluster

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/api/shared"
)

// rollbackNode is where the rollback tests break things: a worker, so the
// lab's control-plane node keeps working whatever happens.
const rollbackNode = "node03"

// expectRollback creates a policy for rollbackNode that breaks its
// connectivity, and checks that it ends Degraded with the enactment Failed
// by a rollback, and that the node's routes, addresses and resolv.conf equal
// their state before the policy.
func expectRollback(t *testing.T, name, desired string) {
	c := sharedLab(t)
	nl := c.netlink(t, rollbackNode)
	resolv := c.node(t, rollbackNode).ResolvConf
	// What earlier tests started (a DHCPv6 client on eth1) must have
	// settled, or "before" is a moment of a node still changing.
	before := settled(t, nl)
	resolvBefore, err := os.ReadFile(resolv)
	if err != nil {
		t.Fatal(err)
	}
	applied := c.applies(t, rollbackNode)
	p := policyYAML(t, name, map[string]string{"kubernetes.io/hostname": rollbackNode}, desired)
	c.create(t, p)
	c.waitPolicy(t, name, shared.NodeNetworkConfigurationPolicyConditionDegraded, 2*time.Minute)
	es := c.waitEnactments(t, name, []string{rollbackNode}, 2*time.Minute, phaseFailed)
	p = c.getPolicy(t, name)
	if !isTrue(p.Status.Conditions, shared.NodeNetworkConfigurationPolicyConditionDegraded) {
		t.Errorf("policy %s not Degraded once its enactment failed: %v", name, p.Status.Conditions)
	}
	// The failure must come from the probes after an apply, not from a
	// refused plan: otherwise the node was never changed and the
	// comparison below would prove nothing.
	failing := es[0].Status.Conditions.Find(shared.NodeNetworkConfigurationEnactmentConditionFailing)
	if failing == nil || !strings.Contains(failing.Message, "rolling back") {
		t.Errorf("enactment failed without a rollback: %+v", failing)
	} else {
		t.Logf("enactment failing: %s", failing.Message)
	}
	if n := c.applies(t, rollbackNode) - applied; n < 1 {
		t.Errorf("%d apply attempts logged on %s, want at least 1", n, rollbackNode)
	}
	if diff := cmp.Diff(before, snapshot(t, nl)); diff != "" {
		t.Errorf("node %s after the rollback differs from before the policy (-before +after):\n%s", rollbackNode, diff)
	}
	resolvAfter, err := os.ReadFile(resolv)
	if err != nil {
		t.Fatal(err)
	}
	// The resolver, not the file's bytes: a rollback may rewrite the file
	// in its own layout.
	if diff := cmp.Diff(resolver(resolvBefore), resolver(resolvAfter)); diff != "" {
		t.Errorf("node %s resolver after the rollback differs (-before +after):\n%s\nfiles before:\n%s\nafter:\n%s", rollbackNode, diff, resolvBefore, resolvAfter)
	}
}

// TestRollbackUnreachableDefaultGateway: moving the default gateway to an
// address nobody answers on fails the ping probe; the change is rolled back.
func TestRollbackUnreachableDefaultGateway(t *testing.T) {
	expectRollback(t, "unreachable-gateway", `
routes:
  config:
  - destination: 0.0.0.0/0
    state: absent
  - destination: 0.0.0.0/0
    next-hop-address: 192.0.2.254
    next-hop-interface: eth0
`)
}

// TestRollbackBrokenDNS: a name server nobody answers on, and no longer
// the ones eth0's DHCP gives (auto-dns off: the node runtime appends them
// after the static ones otherwise, and a resolver with one working server
// is not broken), fails the DNS probe; the change is rolled back.
func TestRollbackBrokenDNS(t *testing.T) {
	expectRollback(t, "broken-dns", `
dns-resolver:
  config:
    server:
    - 192.0.2.254
interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4:
    enabled: true
    dhcp: true
    auto-dns: false
  ipv6:
    enabled: true
    dhcp: true
    autoconf: true
    auto-dns: false
`)
}

// TestBrokenDefaultRouteInOtherTableKept: a default route to an
// unreachable gateway in a table other than main is policy routing, not the
// node's connectivity: the probes pass and it stays.
func TestBrokenDefaultRouteInOtherTableKept(t *testing.T) {
	c := sharedLab(t)
	nl := c.netlink(t, rollbackNode)
	t.Cleanup(func() {
		_, dst, _ := net.ParseCIDR("0.0.0.0/0")
		_ = nl.RouteDel(&netlink.Route{Dst: dst, Table: 100})
	})
	p := policyYAML(t, "unreachable-gateway-table-100", map[string]string{"kubernetes.io/hostname": rollbackNode}, `
routes:
  config:
  - destination: 0.0.0.0/0
    next-hop-address: 192.0.2.254
    next-hop-interface: eth0
    table-id: 100
`)
	c.create(t, p)
	c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 2*time.Minute)
	s := snapshot(t, nl)
	for _, r := range s.Routes {
		if strings.HasPrefix(r, "table 100 default via 192.0.2.254 dev eth0 ") {
			return
		}
	}
	t.Errorf("node %s: no default route via 192.0.2.254 in table 100 after Available; routes:\n%s", rollbackNode, strings.Join(s.Routes, "\n"))
}

// settled waits until the node's addresses and routes stay the same for
// 3 s and returns them.
func settled(t *testing.T, nl *netlink.Handle) netSnapshot {
	t.Helper()
	s := snapshot(t, nl)
	same := time.Now()
	for deadline := time.Now().Add(time.Minute); time.Since(same) < 3*time.Second; {
		if time.Now().After(deadline) {
			t.Fatalf("node network still changing after a minute; last:\n%v", s)
		}
		time.Sleep(250 * time.Millisecond)
		if next := snapshot(t, nl); !cmp.Equal(s, next) {
			s, same = next, time.Now()
		}
	}
	return s
}

// resolver is what a resolv.conf configures: name servers and search
// domains, in order.
func resolver(conf []byte) map[string][]string {
	out := map[string][]string{}
	for _, l := range strings.Split(string(conf), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "nameserver" || f[0] == "search") {
			out[f[0]] = append(out[f[0]], f[1:]...)
		}
	}
	return out
}
