// Package labnet owns the network fixture of the lab and of kernel tests
// that need a real DHCP/DNS/RA server: a "switch" network namespace holding
// a Linux bridge with gateway addresses and a dnsmasq process, and "node"
// namespaces whose NICs (eth0, eth1, ...) are veth pairs with the peer
// enslaved to the switch bridge.
//
// Everything it creates lives in namespaces it created itself (names start
// with Prefix), in one temporary directory, and in the dnsmasq process it
// started; Close removes all of it. It must not touch the caller's own
// network namespace (interfaces, routes, sysctls) nor /etc/resolv.conf:
// each node gets its own generated resolv.conf file instead.
//
// Typical use in a test (Close registered before anything else can fail):
//
//	var sw *labnet.Switch
//	t.Cleanup(func() { if sw != nil { sw.Close() } })
//	sw, err := labnet.NewSwitch(ctx, labnet.Options{LeaseTime: 2 * time.Minute})
//	node, err := sw.AddNode("node1", "eth0", "eth1", "eth2")
//	// node.NS.Handle / node.NS.Netlink reach the node's namespace,
//	// node.ResolvConf is its resolv.conf, sw.Leases() dnsmasq's leases.
//
// The defaults are 192.0.2.1/24 and 2001:db8::1/64 on the bridge, DHCPv4
// .100-.199 and DHCPv6 ::100-::1ff with 2 minute leases, router
// advertisements with the A flag (SLAAC) and M flag (DHCPv6) on the /64,
// and DNS for lab.example answered locally, never forwarded. The bridge
// has IPv6 forwarding on, as the router it advertises itself as would, so
// its neighbour advertisements carry the Router flag and the nodes keep
// their RA default route when they confirm the gateway's reachability.
//
// It does not configure the nodes' NICs: that is the job of the code under
// test (the node runtime, the kernel backend).
//
// For the lab (internal/testbed/lab), Options.Name names the namespaces after the
// lab (NamespaceName: "knml-<lab>_switch", "knml-<lab>_<node>") instead of
// random hex, Options.Dir places the temporary directory, and
// Options.NodeNamespaces gives each node a mount namespace whose
// /etc/resolv.conf is a bind mount of the node's own resolv.conf (the host's
// is never touched) and a UTS namespace with the node's name as hostname;
// both are pinned by bind mounts in a private directory of the switch's
// temporary directory. Sweep removes a lab's leftovers after its owner
// died: processes inside its namespaces, the namespaces, and the mounts
// below its directory.
//
// dnsmasq is started by forking from an OS thread that has been switched
// into the switch namespace (the child inherits the thread's network
// namespace), rather than through `ip netns exec`: the PID we hold is
// dnsmasq's own, no iproute2 is needed, and no mount namespace is created.
package labnet
