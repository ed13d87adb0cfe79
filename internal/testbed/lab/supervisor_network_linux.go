package lab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
)

// The lab's network: the switch (bridge, DHCP and DNS) and each node's
// namespaces, NICs and eth0 lease.

// lanPrefix is the switch's IPv4 network; the gateway (the switch's own
// address) is where the API server listens in every mode.
var lanPrefix = netip.MustParsePrefix("192.0.2.1/24")

// switchVLANs are the tagged networks of the switch in guest mode, with
// DHCP: upstream's examples and e2e tests put VLANs 102 and 103 on the
// nodes' NICs and bonds.
var switchVLANs = []labnet.VLAN{
	{ID: 102, Gateway4: netip.MustParsePrefix("10.102.0.1/24")},
	{ID: 103, Gateway4: netip.MustParsePrefix("10.103.0.1/24")},
}

// planNodes names the lab's n nodes and gives each its role and address
// (what the switch's DHCP server reserves for its eth0).
func planNodes(n int) []NodeState {
	nodes := make([]NodeState, n)
	for i := range nodes {
		role := RoleWorker
		if i == 0 {
			role = RoleControlPlane
		}
		b := lanPrefix.Addr().As4()
		b[3] = byte(11 + i)
		nodes[i] = NodeState{Name: NodeName(i), Role: role, Address: netip.AddrFrom4(b).String()}
	}
	return nodes
}

// newSwitch creates the switch namespace with its bridge and dnsmasq
// (reservations for the nodes' eth0 MACs) and the spawners children start
// from; the teardown removes them.
func (s *supervisor) newSwitch(ctx context.Context, nodes []NodeState, teardown *[]func()) (*labnet.Switch, error) {
	o := s.opts
	var extra []string
	for _, n := range nodes {
		// The address the node's DHCP client gets (by eth0's MAC).
		extra = append(extra, fmt.Sprintf("dhcp-host=%s,%s,%s", n.mac(), n.Name, n.Address))
	}
	var vlans []labnet.VLAN
	if o.Kernel != "" {
		vlans = switchVLANs // the switch needs 8021q: the guest's kernel
	}
	sw, err := labnet.NewSwitch(ctx, labnet.Options{
		Cables:         s.cables,
		VLANs:          vlans,
		Gateway4:       lanPrefix,
		Name:           o.Name,
		Dir:            o.Dir,
		NodeNamespaces: true,
		Records:        map[string]netip.Addr{apiHost: lanPrefix.Addr(), registryName + ".lab.example": lanPrefix.Addr()},
		DnsmasqExtra:   extra,
		// The switch announces itself over LLDP (lldpd), so lldp.enabled
		// on a node's NIC lists it as neighbour.
		LLDP: true,
		// The NICs are born unconfigured: no SLAAC from the switch's router
		// advertisements. eth0, the primary NIC, accepts them (addNode).
		NodeSysctls: map[string]string{
			"net/ipv6/conf/default/accept_ra": "0",
			"net/ipv6/conf/default/autoconf":  "0",
		},
	})
	if err != nil {
		return nil, err
	}
	*teardown = append(*teardown, func() {
		if err := sw.Close(); err != nil {
			s.log.Error("remove switch", "err", err)
		}
	})
	s.mu.Lock()
	s.state.SwitchNS, s.state.SwitchDir = sw.NS.Name, sw.Dir
	s.mu.Unlock()
	if err := s.startSpawners(ctx, sw.NS.Path, teardown); err != nil {
		return nil, err
	}
	return sw, nil
}

// addNodes creates the nodes' namespaces and NICs, starts their Open
// vSwitch and node runtimes and waits for their eth0 leases.
func (s *supervisor) addNodes(ctx context.Context, sw *labnet.Switch, nodes []NodeState, teardown *[]func()) error {
	tn := time.Now()
	dhcp := s.opts.Nmstatectl != "" && s.opts.Nmstatectl != NoNodeRuntime
	if !dhcp && !s.opts.eth0ByNetworkManager() {
		s.note("no node runtime (nmstatectl): eth0 addresses are installed statically (the address DHCP would give), no DHCP client runs")
	}
	withOVS, err := s.ovsAvailable()
	if err != nil {
		return err
	}
	for i := range nodes {
		if withOVS {
			// Known before the node runtime starts, which connects
			// once the database listens.
			nodes[i].OVSDB = "unix:" + filepath.Join(s.ovsDir(nodes[i].Name), "db.sock")
		}
		if err := s.addNode(sw, &nodes[i], lanPrefix, dhcp); err != nil {
			return err
		}
		if withOVS {
			if err := s.startOVS(ctx, &nodes[i], teardown); err != nil {
				return err
			}
		}
	}
	s.mu.Lock()
	s.state.Nodes = append([]NodeState(nil), nodes...)
	s.mu.Unlock()
	s.publish()
	s.step(fmt.Sprintf("%d node namespaces with eth0..eth2", len(nodes)), tn)
	if dhcp && !s.opts.eth0ByNetworkManager() {
		tn = time.Now()
		if err := waitLeases(ctx, sw, nodes, s.scale(time.Minute)); err != nil {
			return err
		}
		s.step("node runtimes: eth0 configured by DHCP", tn)
	}
	if s.opts.FirstBootDir != "" {
		if err := s.installFirstBootFiles(nodes); err != nil {
			return err
		}
		for i := range nodes {
			s.firstBoot(ctx, &nodes[i])
		}
	}
	return nil
}

// nodeNICs are every node's NICs; eth0 is the primary one.
var nodeNICs = []string{"eth0", "eth1", "eth2"}

// addNode creates a node's namespaces and NICs and gives eth0 the address
// the switch's DHCP server reserves for the node, with the default route.
func (s *supervisor) addNode(sw *labnet.Switch, n *NodeState, gw4 netip.Prefix, dhcp bool) error {
	node, err := sw.AddNode(n.Name, nodeNICs...)
	if err != nil {
		return err
	}
	n.NetNS, n.MountNS, n.UTSNS, n.ResolvConf, n.NICs = node.NS.Name, node.MountNS, node.UTSNS, node.ResolvConf, node.NICs
	eth0, err := node.NS.Netlink.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("node %s: eth0: %w", n.Name, err)
	}
	// A fixed MAC, so the switch's DHCP reservation finds the node.
	if err := node.NS.Netlink.LinkSetHardwareAddr(eth0, n.mac()); err != nil {
		return fmt.Errorf("node %s: eth0 MAC %s: %w", n.Name, n.mac(), err)
	}
	if s.opts.eth0ByNetworkManager() {
		// The node's NetworkManager, once its init runs; eth0 stays
		// unconfigured until then (it takes router advertisements
		// itself): with an address from SLAAC it would only assume it.
		return nil
	}
	// The primary NIC takes the switch's router advertisements (SLAAC and
	// the IPv6 default route), as a DHCP-configured NIC does.
	for _, k := range []string{"accept_ra", "autoconf"} {
		if err := node.NS.Sysctl("net/ipv6/conf/eth0/"+k, "1"); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if dhcp {
		n.RuntimeStateDir = s.nodedStateDir(n.Name)
		return s.startNodeRuntime(n)
	}
	addr := netip.PrefixFrom(netip.MustParseAddr(n.Address), gw4.Bits())
	a, err := netlink.ParseAddr(addr.String())
	if err != nil {
		return err
	}
	if err := node.NS.Netlink.AddrAdd(eth0, a); err != nil {
		return fmt.Errorf("node %s: adding %s to eth0: %w", n.Name, addr, err)
	}
	gw := gw4.Addr().AsSlice()
	if err := node.NS.Netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: gw}); err != nil {
		return fmt.Errorf("node %s: default route via %s: %w", n.Name, gw4.Addr(), err)
	}
	return nil
}

// mac is the node's eth0 MAC address: locally administered, derived from
// the node's address.
func (n *NodeState) mac() net.HardwareAddr {
	a := netip.MustParseAddr(n.Address).As4()
	return net.HardwareAddr{0x02, 0x6b, 0x6e, 0x6d, a[2], a[3]}
}

// waitLeases waits until every node's eth0 has its reserved IPv4 address
// and a default route.
func waitLeases(ctx context.Context, sw *labnet.Switch, nodes []NodeState, timeout time.Duration) error {
	return waitNodeAddress(ctx, sw, nodes, "eth0", timeout)
}

// waitAddress waits until every node has its reserved IPv4 address and a
// default route on whichever link (a NetworkManager node's persistent
// profiles may have put eth0 under a bridge or bond).
func waitAddress(ctx context.Context, sw *labnet.Switch, nodes []NodeState, timeout time.Duration) error {
	return waitNodeAddress(ctx, sw, nodes, "", timeout)
}

// waitNodeAddress waits for the nodes' addresses on link ("" = any).
func waitNodeAddress(ctx context.Context, sw *labnet.Switch, nodes []NodeState, link string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var missing []string
		for _, n := range nodes {
			if !hasLease(n, link) {
				missing = append(missing, n.Name)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			on := "on " + link + " "
			if link == "" {
				on = ""
			}
			return fmt.Errorf("no DHCP lease %sof %s (see nodes/*/noded.log and %s): %w", on, strings.Join(missing, ", "), sw.LogPath(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// hasLease reports whether the node's link (eth0; "" = any) has its
// address and a default route.
func hasLease(n NodeState, link string) bool {
	h, err := netns.GetFromName(n.NetNS)
	if err != nil {
		return false
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
	if err != nil {
		return false
	}
	defer nl.Close()
	var l netlink.Link
	if link != "" {
		if l, err = nl.LinkByName(link); err != nil {
			return false
		}
	}
	addrs, err := nl.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return false
	}
	found := false
	for _, a := range addrs {
		found = found || a.IP.String() == n.Address
	}
	if !found {
		return false
	}
	routes, err := nl.RouteList(l, netlink.FAMILY_V4)
	if err != nil {
		return false
	}
	for _, r := range routes {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() {
			return true
		}
	}
	return false
}
