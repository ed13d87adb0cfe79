package e2e

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// outcome is what an example is expected to end as in the lab.
type outcome int

const (
	// available: the policy reaches Available and the nodes carry it.
	available outcome = iota
	// degraded: the policy ends Degraded; an enactment's Failing message
	// names what this machine lacks, and the nodes are left as they were.
	degraded
	// rolledBack: applied, probes fail, rolled back (TestRollback).
	rolledBack
	// notAPolicy: not a NodeNetworkConfigurationPolicy (the NMState CR).
	notAPolicy
)

// allNodes are the lab's nodes.
var allNodes = []string{"node01", "node02", "node03"}

// example is one file of examples/ and what the lab must make of it.
type example struct {
	file   string
	policy string // metadata.name
	outcome
	// nodes the policy selects.
	nodes []string
	// feature is part of the Failing message of a degraded example.
	feature string
	// check asserts the nodes carry the policy's configuration
	// (available).
	check func(t *testing.T)
	// cleanup is the desired state applied (as a policy of its own) after
	// an available example, to give the next example the lab's initial
	// network: eth1 and eth2 up without addresses, no bridges.
	cleanup string
	// message is part of every enactment's Available message (an
	// available example).
	message string
	// ovs: the example needs Open vSwitch on the nodes; on a lab whose
	// nodes have none it is Degraded, the handler saying so.
	ovs bool
	// full, when set, is the expectation on a kernel with bonding, 802.1q,
	// VRF and bridge VLAN filtering (the guest's, -tags qemu): it replaces
	// outcome, check, cleanup and message.
	full *expectation
}

// expectation is what an example must end as on one kernel.
type expectation struct {
	outcome
	check   func(t *testing.T)
	cleanup string
	message string
}

// expected is the example as the nodes' kernel makes it.
func (e example) expected() example {
	if c.fullKernel && e.full != nil {
		e.outcome, e.check, e.cleanup, e.message = e.full.outcome, e.full.check, e.full.cleanup, e.full.message
	}
	if e.ovs && !c.ovs() {
		e.outcome, e.feature = degraded, "the OVS database is not reachable"
	}
	return e
}

// noTrunk is the Available message on a kernel without bridge VLAN
// filtering for a policy whose bridge ports had no vlan key.
func noTrunk(ports string) string {
	return "the default VLAN trunk (2-4094) was not applied to linux-bridge ports " + ports + ": this node's kernel cannot filter VLANs on bridges"
}

// defaultTrunk are a port's VLANs under upstream's default trunk, as
// `bridge -compressvlans vlan show` gives them: the bridge's default PVID untagged and
// 2-4094 tagged.
var defaultTrunk = []string{"1 PVID untagged", "2-4094"}

// cleanupBridges removes the bridges of the example policy CR.
const cleanupBridges = `
interfaces:
- {name: br0, type: linux-bridge, state: absent}
- {name: br1, type: linux-bridge, state: absent}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
- {name: eth2, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`

// bondGone removes bond0 and puts its ports back as the lab made them
// (interface entries, to follow others).
const bondGone = `- {name: bond0, type: bond, state: absent}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
- {name: eth2, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`

// cleanupBond removes bond0.
const cleanupBond = "interfaces:\n" + bondGone

// resetEth1 disables IPv4 (and DHCP) on eth1 again.
const resetEth1 = `
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`

// examples in the order the suite applies them, one after another.
// Examples that build on the one before (a cleanup example) follow it.
var examples = []example{
	{file: "linux-bridge.yaml", policy: "linux-bridge", nodes: allNodes, check: func(t *testing.T) {
		for _, n := range allNodes {
			bridgeWithPorts(t, n, "br1", "eth1")
			dhcpAddress(t, n, "br1")
		}
	}, message: noTrunk("br1/eth1"), full: &expectation{check: func(t *testing.T) {
		for _, n := range allNodes {
			bridgeWithPorts(t, n, "br1", "eth1")
			bridgeVLANs(t, n, "br1", map[string][]string{"eth1": defaultTrunk})
			dhcpAddress(t, n, "br1") // untagged, through the default PVID
		}
	}, message: "successfully reconciled"}},
	// Upstream's way back from linux-bridge.yaml.
	{file: "detach-bridge-port-and-restore-eth.yaml", policy: "detach-bridge-port-and-restore-eth", nodes: allNodes, check: func(t *testing.T) {
		for _, n := range allNodes {
			l := links(t, n)
			if _, ok := l["br1"]; ok {
				t.Errorf("node %s: br1 still exists", n)
			}
			if m := l["eth1"].Master; m != "" {
				t.Errorf("node %s: eth1 is still a port of %s", n, m)
			}
			dhcpAddress(t, n, "eth1")
		}
	}, cleanup: resetEth1},
	{file: "dhcp.yaml", policy: "dhcp", nodes: allNodes, check: dhcpOnEth1(allNodes), cleanup: resetEth1},
	{file: "ethernet.yaml", policy: "ethernet", nodes: allNodes, check: dhcpOnEth1(allNodes), cleanup: resetEth1},
	{file: "worker-selector.yaml", policy: "worker-selector", nodes: []string{"node02", "node03"}, check: func(t *testing.T) {
		dhcpOnEth1([]string{"node02", "node03"})(t)
		noIPv4(t, "node01", "eth1")
	}, cleanup: resetEth1},
	{file: "per-interface-ipv4-forwarding.yaml", policy: "per-interface-ipv4-forwarding", nodes: allNodes, check: func(t *testing.T) {
		dhcpOnEth1(allNodes)(t)
		for _, n := range allNodes {
			if got := strings.TrimSpace(c.lab.MustExec(t, n, "cat", "/proc/sys/net/ipv4/conf/eth1/forwarding")); got != "1" {
				t.Errorf("node %s: net.ipv4.conf.eth1.forwarding = %s, want 1", n, got)
			}
		}
	}, cleanup: `
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`},
	{file: "static-ip.yaml", policy: "static-ip", nodes: []string{"node02"}, check: func(t *testing.T) {
		ipv4Is(t, "node02", "eth2", "198.51.100.12/24")
		noIPv4(t, "node01", "eth2")
		noIPv4(t, "node03", "eth2")
	}, cleanup: `
interfaces:
- {name: eth2, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`},
	{file: "route.yaml", policy: "route", nodes: []string{"node02"}, check: func(t *testing.T) {
		ipv4Is(t, "node02", "eth1", "203.0.113.12/24")
		got := strings.TrimSpace(c.lab.MustExec(t, "node02", "ip", "-4", "route", "show", "198.51.100.0/24"))
		if want := "198.51.100.0/24 via 203.0.113.1 dev eth1"; !strings.HasPrefix(got, want) || !strings.Contains(got, "metric 150") {
			t.Errorf("node02: route %q, want %q ... metric 150", got, want)
		}
	}, cleanup: `
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 203.0.113.1, next-hop-interface: eth1, state: absent}
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`},
	{file: "dns.yaml", policy: "dns", nodes: allNodes, check: func(t *testing.T) {
		for _, n := range allNodes {
			conf := nodeResolvConf(t, n)
			for _, want := range []string{"nameserver 8.8.8.8\n", "nameserver 2001:4860:4860::8888\n", "search example.com example.org"} {
				if !strings.Contains(conf, want) {
					t.Errorf("node %s: /etc/resolv.conf lacks %q:\n%s", n, want, conf)
				}
			}
			dhcpAddress(t, n, "eth1")
		}
	}},
	{file: "dns-cleanup.yaml", policy: "dns-cleanup", nodes: allNodes, check: func(t *testing.T) {
		for _, n := range allNodes {
			conf := nodeResolvConf(t, n)
			for _, gone := range []string{"8.8.8.8", "2001:4860:4860::8888", "example.com", "example.org"} {
				if strings.Contains(conf, gone) {
					t.Errorf("node %s: /etc/resolv.conf still has %q:\n%s", n, gone, conf)
				}
			}
		}
	}, cleanup: resetEth1},

	// Its bridge ports have no vlan key: upstream's default trunk needs
	// bridge VLAN filtering. Without it the handler leaves the trunk out
	// (and says so), and the bridges are plain ones.
	{file: "nmstate.io_v1_nodenetworkconfigurationpolicy_cr.yaml", policy: "example-nodenetworkconfigurationpolicy", nodes: allNodes, check: func(t *testing.T) {
		for _, n := range allNodes {
			bridgeWithPorts(t, n, "br0", "eth1")
			bridgeWithPorts(t, n, "br1", "eth2")
		}
	}, message: noTrunk("br0/eth1, br1/eth2"), cleanup: cleanupBridges, full: &expectation{check: func(t *testing.T) {
		for _, n := range allNodes {
			bridgeWithPorts(t, n, "br0", "eth1")
			bridgeWithPorts(t, n, "br1", "eth2")
			bridgeVLANs(t, n, "br0", map[string][]string{"eth1": defaultTrunk})
			bridgeVLANs(t, n, "br1", map[string][]string{"eth2": defaultTrunk})
		}
	}, cleanup: cleanupBridges, message: "successfully reconciled"}},

	// Kernel features this machine's kernel lacks: Degraded here, applied
	// on the guest's kernel (-tags qemu, make test-kernel).
	{file: "bond.yaml", policy: "bond", outcome: degraded, nodes: allNodes,
		feature: "bond0: kernel has no bonding support (module bonding)", full: &expectation{check: func(t *testing.T) {
			for _, n := range allNodes {
				l := bond(t, n, "bond0", "balance-rr", 140, "eth1", "eth2")
				if l["bond0"].Address != l["eth1"].Address {
					t.Errorf("node %s: bond0 MAC %s, want eth1's %s (copy-mac-from)", n, l["bond0"].Address, l["eth1"].Address)
				}
				dhcpAddress(t, n, "bond0") // through both ports, round robin
			}
		}, cleanup: cleanupBond}},
	{file: "bond-vlan.yaml", policy: "bond-vlan", outcome: degraded, nodes: allNodes,
		feature: "bond0: kernel has no bonding support (module bonding)", full: &expectation{check: func(t *testing.T) {
			for _, n := range allNodes {
				bond(t, n, "bond0", "balance-rr", 140, "eth1", "eth2")
				vlanOn(t, n, "bond0.102", "bond0", 102)
				dhcpAddress(t, n, "bond0")
				vlanLease(t, n, "bond0.102", 102) // tagged, from the switch's VLAN 102
			}
		}, cleanup: "interfaces:\n- {name: bond0.102, type: vlan, state: absent}\n" + bondGone}},
	{file: "vlan.yaml", policy: "vlan", outcome: degraded, nodes: allNodes,
		feature: "eth1.102: kernel has no 802.1q vlan support (module 8021q)", full: &expectation{check: func(t *testing.T) {
			for _, n := range allNodes {
				vlanOn(t, n, "eth1.102", "eth1", 102)
				vlanLease(t, n, "eth1.102", 102)
			}
		}, cleanup: "interfaces:\n- {name: eth1.102, type: vlan, state: absent}\n" + strings.TrimPrefix(resetEth1, "\ninterfaces:\n")}},
	{file: "vrf.yaml", policy: "vrf", outcome: degraded, nodes: []string{"node01"},
		feature: "vrf102: kernel has no vrf support (module vrf)", full: &expectation{check: func(t *testing.T) {
			vrfWithRoute(t, "node01", "vrf102", 102, "203.0.113.11/24")
		}, cleanup: `
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-interface: eth1, table-id: 102, state: absent}
interfaces:
- {name: vrf102, type: vrf, state: absent}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`}},
	{file: "linux-bridge-vlan.yaml", policy: "linux-bridge-vlan", outcome: degraded, nodes: allNodes,
		feature: "br1: kernel has no bridge vlan filtering support (CONFIG_BRIDGE_VLAN_FILTERING)", full: &expectation{check: func(t *testing.T) {
			for _, n := range allNodes {
				bridgeWithPorts(t, n, "br1", "eth1")
				// Native VLAN 100 untagged (enable-native, tag 100), 101
				// and 200-500 tagged.
				bridgeVLANs(t, n, "br1", map[string][]string{"eth1": {"100 PVID untagged", "101", "200-500"}})
			}
		}, cleanup: `
interfaces:
- {name: br1, type: linux-bridge, state: absent}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`}},
	// Open vSwitch: each node of the default mode has its own (userspace
	// datapath); elsewhere the handler has no OVS database and says so (on
	// NetworkManager nodes without OVS too).
	{file: "ovs-bridge.yaml", policy: "ovs-bridge", nodes: allNodes, ovs: true,
		check: func(t *testing.T) {
			for _, n := range allNodes {
				ovsBridgeWithPorts(t, n, "br1", "false", "eth1")
				if d := ovsVsctl(t, n, "get", "Bridge", "br1", "external_ids:knmstate-description"); d != `"ovs bridge with eth1 as a port"` {
					t.Errorf("node %s: br1 description %s, want the policy's", n, d)
				}
			}
		}, cleanup: cleanupOVS},
	// Its bridge runs STP: ovs0's DHCP lease comes once the ports forward.
	{file: "ovs-bridge-iface.yaml", policy: "ovs-bridge-iface", nodes: allNodes, ovs: true,
		check: func(t *testing.T) {
			for _, n := range allNodes {
				ovsBridgeWithPorts(t, n, "br1", "true", "eth1", "ovs0")
				if typ := ovsVsctl(t, n, "get", "Interface", "ovs0", "type"); typ != "internal" {
					t.Errorf("node %s: ovs0 is an OVS interface of type %q, want internal", n, typ)
				}
				dhcpAddressWithin(t, n, "ovs0", 90*time.Second)
			}
		}, cleanup: cleanupOVS},
	// The capture selects NICs of type ethernet. The default lab's NICs
	// are veths (their peers sit on the switch), reported as type veth as
	// upstream nmstate reports veths, so there is nothing to enable LLDP
	// on and the render fails naming the capture (TestLLDPNeighbors
	// enables LLDP on a veth by name). The guest's NICs are virtio-net
	// devices, ethernet as a virtual machine's NICs are upstream: every
	// NIC gets LLDP and lists the switch's lldpd as its neighbour.
	{file: "lldp.yaml", policy: "enable-lldp-ethernets-up", outcome: degraded, nodes: allNodes,
		feature: `capture "ethernets"`, full: &expectation{check: func(t *testing.T) {
			for _, n := range allNodes {
				for _, nic := range []string{"eth0", "eth1", "eth2"} {
					waitLLDPNeighbor(t, n, nic)
				}
			}
		}, cleanup: `
interfaces:
- {name: eth0, type: ethernet, state: up, lldp: {enabled: false}}
- {name: eth1, type: ethernet, state: up, lldp: {enabled: false}}
- {name: eth2, type: ethernet, state: up, lldp: {enabled: false}}
`}},

	{file: "break-gateway.yaml", policy: "break-gateway", outcome: rolledBack, nodes: []string{"node02"}},
	// The operator's CR; the lab runs no operator, so it is only stored.
	{file: "nmstate.io_v1_nmstate_cr.yaml", policy: "nmstate", outcome: notAPolicy},
}

// dhcpPool is the switch's dynamic DHCPv4 range (node eth0s have
// reservations below it).
var dhcpPool = [2]netip.Addr{netip.MustParseAddr("192.0.2.100"), netip.MustParseAddr("192.0.2.199")}

// dhcpAddress waits until iface of node holds a lease of the switch's
// dynamic pool: a policy with dhcp: true is Available once the node runtime
// runs the client; the lease may land a moment later.
func dhcpAddress(t *testing.T, node, iface string) {
	t.Helper()
	dhcpAddressWithin(t, node, iface, 30*time.Second)
}

// dhcpAddressWithin is dhcpAddress with its own wait (an STP bridge
// forwards only after its forward delays).
func dhcpAddressWithin(t *testing.T, node, iface string, wait time.Duration) {
	t.Helper()
	suite.Eventually(t, wait*c.slowdown, fmt.Sprintf("node %s: DHCPv4 lease on %s", node, iface), func() error {
		addrs := links(t, node)[iface].ipv4()
		for _, a := range addrs {
			p, err := netip.ParsePrefix(a)
			if err == nil && p.Bits() == 24 && p.Addr().Compare(dhcpPool[0]) >= 0 && p.Addr().Compare(dhcpPool[1]) <= 0 {
				return nil
			}
		}
		return fmt.Errorf("IPv4 %v, want one of 192.0.2.100-199/24", addrs)
	})
}

func dhcpOnEth1(nodes []string) func(t *testing.T) {
	return func(t *testing.T) {
		for _, n := range nodes {
			dhcpAddress(t, n, "eth1")
		}
	}
}

// vrfWithRoute checks that vrf is a VRF on table with eth1 as its port
// holding addr, and that table has the vrf examples' route to
// 198.51.100.0/24 via 203.0.113.1 (metric 150).
func vrfWithRoute(t *testing.T, node, vrf string, table int, addr string) {
	t.Helper()
	l := links(t, node)
	if v := l[vrf]; v.LinkInfo.Kind != "vrf" || v.LinkInfo.Data["table"] != float64(table) {
		t.Errorf("%s: %s is a %q with %v, want a vrf on table %d", node, vrf, v.LinkInfo.Kind, v.LinkInfo.Data, table)
	}
	if m := l["eth1"].Master; m != vrf {
		t.Errorf("%s: eth1's controller %q, want %s", node, m, vrf)
	}
	ipv4Is(t, node, "eth1", addr)
	got := c.lab.MustExec(t, node, "ip", "-4", "route", "show", "table", strconv.Itoa(table), "198.51.100.0/24")
	if want := "198.51.100.0/24 via 203.0.113.1 dev eth1"; !strings.HasPrefix(got, want) || !strings.Contains(got, "metric 150") {
		t.Errorf("%s: route in table %d %q, want %q ... metric 150", node, table, got, want)
	}
}

func ipv4Is(t *testing.T, node, iface string, want ...string) {
	t.Helper()
	if got := links(t, node)[iface].ipv4(); !slices.Equal(got, want) {
		t.Errorf("node %s: %s IPv4 %v, want %v", node, iface, got, want)
	}
}

func noIPv4(t *testing.T, node, iface string) {
	t.Helper()
	ipv4Is(t, node, iface)
}

// bridgeWithPorts checks that bridge is a Linux bridge with STP off (as
// every example asks) and exactly ports.
func bridgeWithPorts(t *testing.T, node, bridge string, ports ...string) {
	t.Helper()
	l := links(t, node)
	br, ok := l[bridge]
	if !ok {
		t.Errorf("node %s: no %s", node, bridge)
		return
	}
	if br.LinkInfo.Kind != "bridge" {
		t.Errorf("node %s: %s is a %q, want a bridge", node, bridge, br.LinkInfo.Kind)
	}
	if stp, _ := br.LinkInfo.Data["stp_state"].(float64); stp != 0 {
		t.Errorf("node %s: %s stp_state %v, want 0 (disabled)", node, bridge, stp)
	}
	// A kernel without bridge VLAN filtering does not report it at all;
	// on one with it, bridgeVLANs checks it.
	if f, ok := br.LinkInfo.Data["vlan_filtering"].(float64); !c.fullKernel && ok && f != 0 {
		t.Errorf("node %s: %s vlan_filtering %v, want 0 (no VLAN filtering on this kernel)", node, bridge, f)
	}
	portsAre(t, node, l, bridge, ports)
}

// portsAre checks that the links whose controller is master are exactly
// ports (sorted).
func portsAre(t *testing.T, node string, l map[string]ipLink, master string, ports []string) {
	t.Helper()
	var got []string
	for name, link := range l {
		if link.Master == master {
			got = append(got, name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, ports) {
		t.Errorf("node %s: ports of %s %v, want %v", node, master, got, ports)
	}
}
