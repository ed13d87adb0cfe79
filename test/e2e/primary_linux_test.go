// The tests of this file move a node's primary NIC, eth0 (its DHCP
// address, its default route, the API server's traffic), under a Linux
// bridge, as kubernetes-nmstate's default_bridged_network tests do, on
// either kernel; primary_qemu_test.go does the same with a bond.

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// primaryNode is the node whose primary NIC the tests move.
const primaryNode = "node02"

// primaryReset gives eth0 back its configuration as the lab's node
// runtime first applied it (DHCPv4, DHCPv6, autoconf), after the policy
// that moved it is deleted.
const primaryReset = `
interfaces:
- {name: brext, type: linux-bridge, state: absent}
- {name: eth0, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}, ipv6: {enabled: true, dhcp: true, autoconf: true}}
`

// bridgeOverEth0 is upstream's bridge on the default interface, written
// plainly.
const bridgeOverEth0 = `
interfaces:
- name: brext
  type: linux-bridge
  state: up
  ipv4: {enabled: true, dhcp: true}
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth0
`

// bridgeOverDefaultGW is the same with capture, as upstream writes it:
// the NIC of the default route is the port, and the bridge copies its MAC
// (so the DHCP server knows it again).
const bridgeOverDefaultGW = `
interfaces:
- name: brext
  type: linux-bridge
  state: up
  mac-address: "{{ capture.base-iface.interfaces.0.mac-address }}"
  ipv4: {enabled: true, dhcp: true}
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: "{{ capture.base-iface.interfaces.0.name }}"
`

var defaultGWCapture = map[string]string{
	"default-gw": `routes.running.destination=="0.0.0.0/0"`,
	"base-iface": `interfaces.name==capture.default-gw.routes.running.0.next-hop-interface`,
}

// TestPrimaryNICBridge: a bridge over eth0, plainly and with capture. The
// bridge gets eth0's lease (the same address, asserted), the default route
// moves to it, the handler keeps reaching the API (the enactment is
// Available and the NodeNetworkState shows the bridge with the address:
// both written through the bridge), and the reset gives eth0 its address
// and default route back.
func TestPrimaryNICBridge(t *testing.T) {
	requirePolicies(t)
	for _, tc := range []struct {
		name    string
		capture map[string]string
		desired string
	}{
		{"plain", nil, bridgeOverEth0},
		{"capture", defaultGWCapture, bridgeOverDefaultGW},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := primaryLease(t)
			policy := "primary-bridge-" + tc.name
			enact(t, policy, nodePolicyYAML(policy, primaryNode, tc.capture, tc.desired))
			movedTo(t, "brext", before)
			if m := links(t, primaryNode)["eth0"].Master; m != "brext" {
				t.Errorf("eth0's controller %q, want brext", m)
			}
			deletePolicy(t, policy)
			restore(t, policy, []string{primaryNode}, primaryReset)
			if after := primaryLease(t); after != before {
				t.Errorf("eth0 after the reset: %s, want %s as before", after, before)
			}
		})
	}
}

// TestPrimaryNICBridgeBrokenGatewayRollsBack: the bridge over eth0 with
// eth0's address written statically and the default route through an
// address nobody answers (upstream's DHCP-to-static break). The gateway
// probe fails, the change is rolled back: eth0 has its lease again, from
// its DHCP client (a dynamic address whose lifetime is renewed), and its
// default route.
func TestPrimaryNICBridgeBrokenGatewayRollsBack(t *testing.T) {
	requirePolicies(t)
	before := primaryLease(t)
	const policy = "primary-bridge-broken"
	c.kubectl.MustIn(t, nodePolicyYAML(policy, primaryNode, nil, fmt.Sprintf(`
interfaces:
- name: brext
  type: linux-bridge
  state: up
  ipv4:
    enabled: true
    dhcp: false
    address: [{ip: %s, prefix-length: 24}]
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth0
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: brext}
`, strings.TrimSuffix(before, "/24"))), "apply", "-f", "-")
	if err := policyReaches(t, policy, "Degraded", rollbackTimeout); err != nil {
		t.Fatal(err)
	}
	ens := enactments(t, policy)
	if len(ens) != 1 || !strings.Contains(ens[0].message("Failing"), "rolling back") {
		t.Fatalf("enactments %+v, want %s's Failing with a rollback", ens, primaryNode)
	}
	deletePolicy(t, policy)
	pristine(t, primaryNode)
	if after := primaryLease(t); after != before {
		t.Errorf("eth0 after the rollback: %s, want %s as before", after, before)
	}
	// Its DHCP client runs again: the lease is renewed (at half its 2
	// minute lifetime), so the address's lifetime goes up at some point.
	first := validLifetime(t, primaryNode, "eth0", before)
	suite.Eventually(t, 100*time.Second*c.slowdown, "eth0's lease renewed by its DHCP client", func() error {
		if now := validLifetime(t, primaryNode, "eth0", before); now > first {
			return nil
		} else {
			first = now
			return fmt.Errorf("valid lifetime %d s, not renewed yet", now)
		}
	})
}

// primaryLease is the primary node's eth0 DHCP address ("192.0.2.12/24"),
// with a default route through the switch; the test fails otherwise.
func primaryLease(t *testing.T) string {
	t.Helper()
	addrs := links(t, primaryNode)["eth0"].ipv4()
	if len(addrs) != 1 || !dynamic(t, primaryNode, "eth0", addrs[0]) {
		t.Fatalf("%s: eth0 has IPv4 %v, want its one DHCP address", primaryNode, addrs)
	}
	if r := c.lab.MustExec(t, primaryNode, "ip", "-4", "route", "show", "default"); !strings.HasPrefix(r, "default via 192.0.2.1 dev eth0") {
		t.Fatalf("%s: default route %q, want one through 192.0.2.1 on eth0", primaryNode, r)
	}
	return addrs[0]
}

// movedTo waits until iface holds the address eth0 had, from DHCP, with
// the default route, and the NodeNetworkState (written by the handler
// through iface) reports it there.
func movedTo(t *testing.T, iface, addr string) {
	t.Helper()
	suite.Eventually(t, 30*time.Second*c.slowdown, primaryNode+": eth0's lease and default route on "+iface, func() error {
		l := links(t, primaryNode)
		if got := l[iface].ipv4(); len(got) != 1 || got[0] != addr || !dynamic(t, primaryNode, iface, addr) {
			return fmt.Errorf("%s has IPv4 %v, want %s from DHCP", iface, got, addr)
		}
		if got := l["eth0"].ipv4(); len(got) != 0 {
			return fmt.Errorf("eth0 still has IPv4 %v", got)
		}
		if r := c.lab.MustExec(t, primaryNode, "ip", "-4", "route", "show", "default"); !strings.HasPrefix(r, "default via 192.0.2.1 dev "+iface) || strings.Count(r, "\n") != 1 {
			return fmt.Errorf("default routes %q, want only one through 192.0.2.1 on %s", r, iface)
		}
		return nil
	})
	ip := strings.TrimSuffix(addr, "/24")
	suite.Eventually(t, 30*time.Second*c.slowdown, primaryNode+"'s NodeNetworkState showing "+iface, func() error {
		out := c.kubectl.Must(t, "get", "nns", primaryNode, "-o", "jsonpath={.status.currentState.interfaces[?(@.name==\""+iface+"\")].ipv4.address[*].ip}")
		if !strings.Contains(out, ip) {
			return fmt.Errorf("%s's addresses %q, want %s", iface, out, ip)
		}
		return nil
	})
}

// addrInfo is the part of `ip -j addr` the lease checks read.
type addrInfo struct {
	Local     string `json:"local"`
	PrefixLen int    `json:"prefixlen"`
	Dynamic   bool   `json:"dynamic"`
	ValidLife int64  `json:"valid_life_time"`
}

func addrInfoOf(t *testing.T, node, iface, addr string) (addrInfo, bool) {
	t.Helper()
	var list []struct {
		AddrInfo []addrInfo `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(c.lab.MustExec(t, node, "ip", "-j", "-4", "addr", "show", "dev", iface)), &list); err != nil {
		t.Fatalf("node %s: ip -j addr show dev %s: %v", node, iface, err)
	}
	for _, l := range list {
		for _, a := range l.AddrInfo {
			if fmt.Sprintf("%s/%d", a.Local, a.PrefixLen) == addr {
				return a, true
			}
		}
	}
	return addrInfo{}, false
}

// dynamic reports whether addr on iface has a finite lifetime: a DHCP
// client installed it (a static address is permanent).
func dynamic(t *testing.T, node, iface, addr string) bool {
	a, ok := addrInfoOf(t, node, iface, addr)
	return ok && a.Dynamic
}

// validLifetime is addr's remaining valid lifetime on iface, in seconds.
func validLifetime(t *testing.T, node, iface, addr string) int64 {
	t.Helper()
	a, ok := addrInfoOf(t, node, iface, addr)
	if !ok {
		t.Fatalf("node %s: %s has no %s", node, iface, addr)
	}
	return a.ValidLife
}
