//go:build qemu

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// TestPrimaryNICBond: upstream's bonding_default_interface test on the
// guest's kernel: an active-backup bond of eth0 and eth1 (eth0 primary,
// miimon, eth0's MAC copied) takes over eth0's lease (the same address,
// asserted) and default route, the handler keeps reaching the API, and the
// reset gives eth0 its address and route back. On NetworkManager nodes the
// bond's profiles persist: after lab reboot of the node, NetworkManager
// alone brings the bond and the lease back before the handler starts
// again, and the enactment stays Available. (On the kernel backend a
// reboot wipes the bond and the handler applies it again: the default
// mode's TestLabRebootReappliesPolicies.)
func TestPrimaryNICBond(t *testing.T) {
	requirePolicies(t)
	before := primaryLease(t)
	mac := links(t, primaryNode)["eth0"].Address
	const policy = "primary-bond"
	done := false
	reset := func() {
		if done {
			return
		}
		done = true
		deletePolicy(t, policy)
		restore(t, policy, []string{primaryNode}, `
interfaces:
- {name: bond1, type: bond, state: absent}
- {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}, ipv6: {enabled: true, dhcp: true, autoconf: true}}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`)
	}
	// Also when a check fails: the tests after this one start from
	// pristine nodes.
	defer reset()
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
	if *backend == lab.BackendNetworkManager {
		rebootKeepsBond(t, policy, before)
	}
	reset()
	if after := primaryLease(t); after != before {
		t.Errorf("eth0 after the reset: %s, want %s as before", after, before)
	}
}

// rebootKeepsBond reboots the primary node and checks that bond1, its
// ports and eth0's lease came back from NetworkManager's persistent
// profiles: the reboot returns once the node's address is back, and only
// then starts the handler.
func rebootKeepsBond(t *testing.T, policy, lease string) {
	t.Helper()
	res, err := lab.Reboot(t.Context(), c.dir, primaryNode)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reboot of %s: down %v, address back %v, handler started %v after the start",
		primaryNode, time.Duration(res.Down), time.Duration(res.Up), res.Handler.Sub(res.Start))
	if res.Handler.IsZero() || res.Handler.Sub(res.Start) < time.Duration(res.Up) {
		t.Errorf("handler started at %v, before the address was back (%v): the bond may be its doing", res.Handler.Sub(res.Start), time.Duration(res.Up))
	}
	movedTo(t, "bond1", lease)
	bond(t, primaryNode, "bond1", "active-backup", 140, "eth0", "eth1")
	suite.Eventually(t, time.Minute*c.slowdown, "bond1 connected by NetworkManager", func() error {
		out := c.lab.MustExec(t, primaryNode, "nmcli", "-g", "GENERAL.STATE", "device", "show", "bond1")
		if !strings.HasPrefix(strings.TrimSpace(out), "100") {
			return fmt.Errorf("bond1's NetworkManager state %q, want 100 (connected)", out)
		}
		return nil
	})
	avail, err := lab.AvailableEnactments(t.Context(), c.kubeconfig, primaryNode)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := avail[primaryNode+"."+policy]; !ok {
		t.Errorf("enactment %s.%s not Available after the reboot", primaryNode, policy)
	}
}
