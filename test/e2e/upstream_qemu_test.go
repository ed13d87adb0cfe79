//go:build qemu

// kubernetes-nmstate's handler e2e behaviours that need bonding, 802.1q and
// bridge VLAN filtering (simple_bridge_and_bond_test.go,
// simple_vlan_and_ip_test.go, multiple_policies_for_same_node_test.go):
// through the API, the controller and the handler, into the guest's
// kernel. The bond with two ports on DHCP (balance-rr), the bond plus a
// VLAN on DHCP and the VRF with a route in its table are the examples
// bond.yaml, bond-vlan.yaml and vrf.yaml (TestExamples).

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// cleanUp deletes the policies (those that exist) and restores every
// node with desired, deferred by each test: also when its checks fail,
// so that the tests after it start from pristine nodes (a failure left a
// bond behind once, and each later test failed on it).
func cleanUp(t *testing.T, policies []string, after, desired string) {
	t.Helper()
	for _, p := range policies {
		if p != "" {
			deletePolicy(t, p)
		}
	}
	restore(t, after, allNodes, desired)
}

// activeBackupBond is upstream's active-backup bond of eth1 and eth2 with
// miimon 100 (an interface entry).
const activeBackupBond = `- name: bond0
  type: bond
  state: up
  link-aggregation:
    mode: active-backup
    options: {miimon: '100'}
    port: [eth1, eth2]
`

// TestBondActiveBackupMiimon: an active-backup bond of eth1 and eth2 with
// miimon 100 on every node.
func TestBondActiveBackupMiimon(t *testing.T) {
	requirePolicies(t)
	const policy = "bond-active-backup"
	defer cleanUp(t, []string{policy}, policy, cleanupBond)
	enact(t, policy, policyYAML(policy, "interfaces:\n"+activeBackupBond))
	for _, n := range allNodes {
		bond(t, n, "bond0", "active-backup", 100, "eth1", "eth2")
	}
}

// TestBondAsBridgePort: a bridge whose port is a bond: the default trunk
// is on the bond, none on the bond's ports (they are not bridge ports).
func TestBondAsBridgePort(t *testing.T) {
	requirePolicies(t)
	const policy = "bond-bridge-port"
	defer cleanUp(t, []string{policy}, policy, "interfaces:\n- {name: br1, type: linux-bridge, state: absent}\n"+bondGone)
	enact(t, policy, policyYAML(policy, "interfaces:\n"+activeBackupBond+`- name: br1
  type: linux-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: bond0
`))
	for _, n := range allNodes {
		bond(t, n, "bond0", "active-backup", 100, "eth1", "eth2")
		bridgeWithPorts(t, n, "br1", "bond0")
		bridgeVLANs(t, n, "br1", map[string][]string{"bond0": defaultTrunk})
		got := portVLANs(t, n)
		for _, p := range []string{"eth1", "eth2"} {
			if v, ok := got[p]; ok {
				t.Errorf("node %s: bond port %s has bridge VLANs %v, want none", n, p, v)
			}
		}
	}
}

// TestVLANStaticAddress: a VLAN on eth1 with a static address on every
// node, and tagged traffic between two nodes over it.
func TestVLANStaticAddress(t *testing.T) {
	requirePolicies(t)
	var policies []string
	for _, n := range allNodes {
		policies = append(policies, "vlan-static-"+n)
	}
	defer cleanUp(t, policies, "vlan-static", `
interfaces:
- {name: eth1.101, type: vlan, state: absent}
`)
	for i, n := range allNodes {
		policy := "vlan-static-" + n
		enact(t, policy, nodePolicyYAML(policy, n, nil, fmt.Sprintf(`
interfaces:
- name: eth1.101
  type: vlan
  state: up
  vlan: {base-iface: eth1, id: 101}
  ipv4:
    enabled: true
    dhcp: false
    address: [{ip: 198.51.100.%d, prefix-length: 24}]
`, 11+i)))
		vlanOn(t, n, "eth1.101", "eth1", 101)
		ipv4Is(t, n, "eth1.101", fmt.Sprintf("198.51.100.%d/24", 11+i))
	}
	// node02 reaches node03 through the switch, tagged 101.
	if out := c.lab.MustExec(t, "node02", "ping", "-c", "2", "-W", "10", "198.51.100.13"); !strings.Contains(out, "2 packets received") {
		t.Errorf("node02 -> node03 over VLAN 101:\n%s", out)
	}
}

// TestTwoPoliciesVLANsOnOneNIC: two policies, VLAN 102 and VLAN 103 on
// eth1, both on every node: both Available, both VLANs there, each with a
// lease of its own network from the switch.
func TestTwoPoliciesVLANsOnOneNIC(t *testing.T) {
	requirePolicies(t)
	defer cleanUp(t, []string{"vlan102", "vlan103"}, "vlan102-103", `
interfaces:
- {name: eth1.102, type: vlan, state: absent}
- {name: eth1.103, type: vlan, state: absent}
`)
	for _, id := range []int{102, 103} {
		policy := fmt.Sprintf("vlan%d", id)
		c.kubectl.MustIn(t, policyYAML(policy, fmt.Sprintf(`
interfaces:
- name: eth1.%[1]d
  type: vlan
  state: up
  vlan: {base-iface: eth1, id: %[1]d}
  ipv4: {enabled: true, dhcp: true}
`, id)), "apply", "-f", "-")
	}
	for _, policy := range []string{"vlan102", "vlan103"} {
		if err := policyReaches(t, policy, "Available", availableTimeout); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range allNodes {
		for _, id := range []int{102, 103} {
			name := fmt.Sprintf("eth1.%d", id)
			vlanOn(t, n, name, "eth1", id)
			vlanLease(t, n, name, id)
		}
	}
}

// TestBridgeVLANFiltering: upstream's default VLAN filtering of linux
// bridges. A bridge without ports and a port with `vlan: {}` do not
// filter; a port without a vlan key gets the default trunk (PVID 1
// untagged, 2-4094 tagged); resetting it with `vlan: {}` ends the
// filtering and the trunk.
func TestBridgeVLANFiltering(t *testing.T) {
	requirePolicies(t)
	var current string
	defer func() {
		cleanUp(t, []string{current}, "bridge-vlan-filtering", `
interfaces:
- {name: br1, type: linux-bridge, state: absent}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
- {name: eth2, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`)
	}()
	// One policy per step, each deleted once Available (the network stays
	// as it is): a new policy's Available is never an older generation's.
	bridge := func(policy, ports string) string {
		return policyYAML(policy, `
interfaces:
- name: br1
  type: linux-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port:`+ports)
	}
	filtering := func(n string) float64 {
		f, _ := links(t, n)["br1"].LinkInfo.Data["vlan_filtering"].(float64)
		return f
	}
	steps := []struct {
		name, ports string
		filtering   float64
		vlans       map[string][]string
	}{
		{"no ports", " []\n", 0, nil},
		{"a port with vlan {}", "\n    - {name: eth1, vlan: {}}\n", 0, nil},
		// One port: eth1 and eth2 both reach the lab's switch, a bridge of
		// the two would be a loop.
		{"a port without a vlan key: the default trunk", "\n    - {name: eth1}\n", 1,
			map[string][]string{"eth1": defaultTrunk}},
		{"the port reset with vlan {}", "\n    - {name: eth1, vlan: {}}\n", 0, nil},
	}
	for i, st := range steps {
		policy := fmt.Sprintf("bridge-vlan-filtering-%d", i+1)
		current = policy
		enact(t, policy, bridge(policy, st.ports))
		for _, n := range allNodes {
			if got := filtering(n); got != st.filtering {
				t.Errorf("%s: node %s: br1 vlan_filtering %v, want %v", st.name, n, got, st.filtering)
			}
			if st.vlans != nil {
				bridgeVLANs(t, n, "br1", st.vlans)
			} else if got := portVLANs(t, n)["eth1"]; len(got) > 1 {
				// Without filtering the kernel keeps only the default
				// PVID on a port.
				t.Errorf("%s: node %s: eth1 keeps VLANs %v", st.name, n, got)
			}
		}
		deletePolicy(t, policy)
	}
}

// TestVRFNameRoute: upstream's "VRF route configured using vrf-name"
// (vrf_test.go) on node01: the route names its VRF, not a table, and
// lands in the VRF's table 103; the VRF's port keeps its address.
func TestVRFNameRoute(t *testing.T) {
	requirePolicies(t)
	const policy = "vrf-name-route"
	defer cleanUp(t, []string{policy}, policy, `
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-interface: eth1, table-id: 103, state: absent}
interfaces:
- {name: vrf103, type: vrf, state: absent}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`)
	enact(t, policy, nodePolicyYAML(policy, "node01", nil, `
interfaces:
- name: vrf103
  type: vrf
  state: up
  vrf: {port: [eth1], route-table-id: 103}
- name: eth1
  type: ethernet
  state: up
  ipv4:
    enabled: true
    dhcp: false
    address: [{ip: 203.0.113.12, prefix-length: 24}]
routes:
  config:
  - {destination: 198.51.100.0/24, metric: 150, next-hop-address: 203.0.113.1, next-hop-interface: eth1, vrf-name: vrf103}
`))
	vrfWithRoute(t, "node01", "vrf103", 103, "203.0.113.12/24")
	if main := c.lab.MustExec(t, "node01", "ip", "-4", "route", "show", "table", "main", "198.51.100.0/24"); strings.TrimSpace(main) != "" {
		t.Errorf("node01: the VRF's route is in the main table too: %q", main)
	}
}
