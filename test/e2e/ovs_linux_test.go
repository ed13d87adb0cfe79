package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// ovsdb is the socket of node's own Open vSwitch database ("" = the node
// has none: kubelet and guest modes).
func (c *cluster) ovsdb(node string) string {
	for _, n := range c.state.Nodes {
		if n.Name == node {
			return n.OVSDB
		}
	}
	return ""
}

// ovs reports whether every node has its own Open vSwitch.
func (c *cluster) ovs() bool {
	for _, n := range c.state.Nodes {
		if n.OVSDB == "" {
			return false
		}
	}
	return len(c.state.Nodes) > 0
}

// cleanupOVS removes the OVS examples' bridge and internal interface.
const cleanupOVS = `
interfaces:
- {name: br1, type: ovs-bridge, state: absent}
- {name: ovs0, type: ovs-interface, state: absent}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`

// ovsVsctl runs ovs-vsctl inside node against the node's own OVS
// database, as a user on the node would.
func ovsVsctl(t *testing.T, node string, args ...string) string {
	t.Helper()
	db := c.ovsdb(node)
	if db == "" {
		t.Fatalf("node %s has no Open vSwitch", node)
	}
	return strings.TrimSpace(c.lab.MustExec(t, node, append([]string{"ovs-vsctl", "--db=" + db, "--timeout=10"}, args...)...))
}

// ovsBridgeWithPorts checks, in the node's OVSDB, that bridge exists with
// exactly ports and STP as given ("true"/"false").
func ovsBridgeWithPorts(t *testing.T, node, bridge, stp string, ports ...string) {
	t.Helper()
	got := strings.Fields(ovsVsctl(t, node, "list-ports", bridge))
	want := slices.Clone(ports)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("node %s: OVS bridge %s ports %v, want %v", node, bridge, got, want)
	}
	if s := ovsVsctl(t, node, "get", "Bridge", bridge, "stp_enable"); s != stp {
		t.Errorf("node %s: OVS bridge %s stp_enable %s, want %s", node, bridge, s, stp)
	}
}

// workers are the lab's worker nodes (the br-ex policies select them).
var workers = []string{"node02", "node03"}

// brEx is OpenShift's br-ex shape (what its configure-ovs makes of a
// node's primary NIC): eth0 under OVS bridge br-ex, and the bridge's
// internal interface br-ex with eth0's MAC taking eth0's DHCP
// configuration.
const brEx = `
interfaces:
- name: br-ex
  type: ovs-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: %s
    - name: br-ex
- name: br-ex
  type: ovs-interface
  state: up
  copy-mac-from: eth0
  ipv4: {enabled: true, dhcp: true}
  ipv6: {enabled: true, dhcp: true, autoconf: true}
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
`

// brExReset gives eth0 back its lab configuration once the br-ex policy
// is deleted.
const brExReset = `
interfaces:
- {name: br-ex, type: ovs-bridge, state: absent}
- {name: br-ex, type: ovs-interface, state: absent}
- {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}, ipv6: {enabled: true, dhcp: true, autoconf: true}}
`

// workerPolicyYAML is a policy for the lab's workers.
func workerPolicyYAML(name, desired string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: %s\nspec:\n", name)
	b.WriteString("  nodeSelector:\n    node-role.kubernetes.io/worker: \"\"\n  desiredState:\n")
	for _, line := range strings.Split(strings.Trim(desired, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

// eth0Lease is node's eth0 DHCP address ("192.0.2.12/24") with the default
// route through the switch; the test fails otherwise.
func eth0Lease(t *testing.T, node string) string {
	t.Helper()
	addrs := links(t, node)["eth0"].ipv4()
	if len(addrs) != 1 || !dynamic(t, node, "eth0", addrs[0]) {
		t.Fatalf("%s: eth0 has IPv4 %v, want its one DHCP address", node, addrs)
	}
	if r := c.lab.MustExec(t, node, "ip", "-4", "route", "show", "default"); !strings.HasPrefix(r, "default via 192.0.2.1 dev eth0") {
		t.Fatalf("%s: default route %q, want one through 192.0.2.1 on eth0", node, r)
	}
	return addrs[0]
}

// TestPrimaryNICOVSBrEx: on every worker, eth0 (its DHCP address, the
// default route, the handler's API traffic) moves under OVS bridge br-ex;
// the internal interface br-ex gets eth0's MAC and, from DHCP, eth0's
// address (asserted) and the default route. The handler reaches the API
// through br-ex all along: the enactments become Available and the
// NodeNetworkStates show br-ex with the address, both written through it.
// The reset gives eth0 its address and default route back. On a lab whose
// nodes have no OVS (kubelet and guest modes, NetworkManager nodes) the
// policy is Degraded saying there is no OVS database, and eth0 keeps its
// address.
func TestPrimaryNICOVSBrEx(t *testing.T) {
	requirePolicies(t)
	before := map[string]string{}
	for _, n := range workers {
		before[n] = eth0Lease(t, n)
	}
	const policy = "br-ex"
	if !c.ovs() {
		c.kubectl.MustIn(t, workerPolicyYAML(policy, fmt.Sprintf(brEx, "eth0")), "apply", "-f", "-")
		if err := policyReaches(t, policy, "Degraded", rollbackTimeout); err != nil {
			t.Fatal(err)
		}
		want := "the OVS database is not reachable"
		if c.state.Backend() == lab.BackendNetworkManager {
			want = "the NetworkManager backend has no Open vSwitch database for this node"
		}
		// The first node to fail says why; the rollout aborts the others
		// (maxUnavailable), whose Failing message is empty.
		said := 0
		for _, en := range enactments(t, policy) {
			msg := en.message("Failing")
			switch {
			case strings.Contains(msg, want):
				said++
			case msg != "":
				t.Errorf("enactment %s: Failing %q, want it to say %q", en.Metadata.Name, msg, want)
			}
		}
		if said == 0 {
			t.Errorf("no enactment of %s says %q", policy, want)
		}
		deletePolicy(t, policy)
		for _, n := range workers {
			if after := eth0Lease(t, n); after != before[n] {
				t.Errorf("%s: eth0 %s, want %s as before", n, after, before[n])
			}
		}
		return
	}
	// A failed check still gives the next tests eth0 as the lab made it.
	t.Cleanup(func() {
		if t.Failed() {
			_, _ = c.kubectl.Try(t, "", "delete", "nncp", policy, "--ignore-not-found", "--wait")
			restore(t, policy+"-after-failure", workers, brExReset)
		}
	})
	enact(t, policy, workerPolicyYAML(policy, fmt.Sprintf(brEx, "eth0")))
	for _, n := range workers {
		movedToOn(t, n, "br-ex", before[n])
		l := links(t, n)
		if l["br-ex"].Address != l["eth0"].Address {
			t.Errorf("%s: br-ex MAC %s, want eth0's %s (copy-mac-from)", n, l["br-ex"].Address, l["eth0"].Address)
		}
		// ovs-vsctl lists the bridge's local port (br-ex) apart.
		ovsBridgeWithPorts(t, n, "br-ex", "false", "eth0")
		if port, ports := ovsVsctl(t, n, "get", "Port", "br-ex", "_uuid"), ovsVsctl(t, n, "get", "Bridge", "br-ex", "ports"); !strings.Contains(ports, port) {
			t.Errorf("%s: port br-ex (%s) is not one of bridge br-ex's ports %s", n, port, ports)
		}
		if typ := ovsVsctl(t, n, "get", "Interface", "br-ex", "type"); typ != "internal" {
			t.Errorf("%s: br-ex is an OVS interface of type %q, want internal", n, typ)
		}
	}
	deletePolicy(t, policy)
	restore(t, policy, workers, brExReset)
	for _, n := range workers {
		if after := eth0Lease(t, n); after != before[n] {
			t.Errorf("%s: eth0 after the reset: %s, want %s as before", n, after, before[n])
		}
		if br := ovsVsctl(t, n, "list-br"); br != "" {
			t.Errorf("%s: OVS bridges %q left after the reset", n, br)
		}
	}
}

// TestPrimaryNICOVSBrExBrokenRollsBack: two broken br-ex moves on every
// worker, each rolled back by the handler's probes to eth0 with its
// address and default route, and no OVS bridge left: a wrong port name
// (br-ex gets no uplink, so no lease and no default route), and eth0's
// address written statically on br-ex with the default route through an
// address nobody answers.
func TestPrimaryNICOVSBrExBrokenRollsBack(t *testing.T) {
	requirePolicies(t)
	if !c.ovs() {
		t.Skip("the lab's nodes have no Open vSwitch: TestPrimaryNICOVSBrEx checks the refusal")
	}
	before := map[string]string{}
	for _, n := range workers {
		before[n] = eth0Lease(t, n)
	}
	deadGateway := func(node string) string {
		return fmt.Sprintf(`
interfaces:
- name: br-ex
  type: ovs-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth0
    - name: br-ex
- name: br-ex
  type: ovs-interface
  state: up
  copy-mac-from: eth0
  ipv4:
    enabled: true
    dhcp: false
    address: [{ip: %s, prefix-length: 24}]
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: false}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: br-ex}
`, strings.TrimSuffix(before[node], "/24"))
	}
	for _, tc := range []struct {
		name    string
		desired func(node string) string
	}{
		{"wrong-port", func(string) string { return fmt.Sprintf(brEx, "eth9") }},
		{"dead-gateway", deadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := "br-ex-broken-" + tc.name
			// One policy per worker: the dead gateway variant carries
			// each node's own address.
			for _, n := range workers {
				c.kubectl.MustIn(t, nodePolicyYAML(policy+"-"+n, n, nil, tc.desired(n)), "apply", "-f", "-")
			}
			for _, n := range workers {
				p := policy + "-" + n
				if err := policyReaches(t, p, "Degraded", rollbackTimeout); err != nil {
					t.Fatal(err)
				}
				ens := enactments(t, p)
				if len(ens) != 1 || !strings.Contains(ens[0].message("Failing"), "rolling back") {
					t.Errorf("%s: enactments %+v, want %s's Failing with a rollback", p, ens, n)
				}
				deletePolicy(t, p)
			}
			for _, n := range workers {
				pristine(t, n)
				if after := eth0Lease(t, n); after != before[n] {
					t.Errorf("%s: eth0 after the rollback: %s, want %s as before", n, after, before[n])
				}
				if br := ovsVsctl(t, n, "list-br"); br != "" {
					t.Errorf("%s: OVS bridges %q left after the rollback", n, br)
				}
			}
		})
	}
}

// movedToOn waits until iface of node holds the address eth0 had, from
// DHCP, with the only default route, and the node's NodeNetworkState
// (written by the handler through iface) reports it there.
func movedToOn(t *testing.T, node, iface, addr string) {
	t.Helper()
	suite.Eventually(t, 30*time.Second*c.slowdown, node+": eth0's lease and default route on "+iface, func() error {
		l := links(t, node)
		if got := l[iface].ipv4(); len(got) != 1 || got[0] != addr || !dynamic(t, node, iface, addr) {
			return fmt.Errorf("%s has IPv4 %v, want %s from DHCP", iface, got, addr)
		}
		if got := l["eth0"].ipv4(); len(got) != 0 {
			return fmt.Errorf("eth0 still has IPv4 %v", got)
		}
		if r := c.lab.MustExec(t, node, "ip", "-4", "route", "show", "default"); !strings.HasPrefix(r, "default via 192.0.2.1 dev "+iface) || strings.Count(r, "\n") != 1 {
			return fmt.Errorf("default routes %q, want only one through 192.0.2.1 on %s", r, iface)
		}
		return nil
	})
	ip := strings.TrimSuffix(addr, "/24")
	suite.Eventually(t, 30*time.Second*c.slowdown, node+"'s NodeNetworkState showing "+iface, func() error {
		out := c.kubectl.Must(t, "get", "nns", node, "-o", "jsonpath={.status.currentState.interfaces[?(@.name==\""+iface+"\")].ipv4.address[*].ip}")
		if !strings.Contains(out, ip) {
			return fmt.Errorf("%s's addresses %q, want %s", iface, out, ip)
		}
		return nil
	})
}
