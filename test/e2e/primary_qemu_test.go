//go:build qemu

package e2e

import "testing"

// TestPrimaryNICBond: upstream's bonding_default_interface test on the
// guest's kernel: an active-backup bond of eth0 and eth1 (eth0 primary,
// miimon, eth0's MAC copied) takes over eth0's lease (the same address,
// asserted) and default route, the handler keeps reaching the API, and the
// reset gives eth0 its address and route back.
func TestPrimaryNICBond(t *testing.T) {
	requirePolicies(t)
	before := primaryLease(t)
	mac := links(t, primaryNode)["eth0"].Address
	const policy = "primary-bond"
	enact(t, policy, nodePolicyYAML(policy, primaryNode, nil, `
interfaces:
- name: bond1
  type: bond
  state: up
  copy-mac-from: eth0
  ipv4: {enabled: true, dhcp: true}
  link-aggregation:
    mode: active-backup
    options: {miimon: '140', primary: eth0}
    port: [eth0, eth1]
`))
	movedTo(t, "bond1", before)
	l := bond(t, primaryNode, "bond1", "active-backup", 140, "eth0", "eth1")
	if p := l["bond1"].LinkInfo.Data["primary"]; p != "eth0" {
		t.Errorf("bond1's primary %v, want eth0", p)
	}
	if got := l["bond1"].Address; got != mac {
		t.Errorf("bond1's MAC %s, want eth0's %s", got, mac)
	}
	deletePolicy(t, policy)
	restore(t, policy, []string{primaryNode}, `
interfaces:
- {name: bond1, type: bond, state: absent}
- {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}, ipv6: {enabled: true, dhcp: true, autoconf: true}}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`)
	if after := primaryLease(t); after != before {
		t.Errorf("eth0 after the reset: %s, want %s as before", after, before)
	}
}
