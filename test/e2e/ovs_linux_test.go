package e2e

import (
	"slices"
	"strings"
	"testing"
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
	return strings.TrimSpace(nodeExec(t, node, append([]string{"ovs-vsctl", "--db=" + db, "--timeout=10"}, args...)...))
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
