package handler

import (
	"path"
	"slices"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// DefaultUnmanagedVeth returns the host-side names container runtimes and
// CNI plugins give pod veths: "veth" + hex (bridge, ptp, flannel, kindnet,
// containerd), "cali" (Calico), "lxc" (Cilium).
func DefaultUnmanagedVeth() []string { return []string{"veth*", "cali*", "lxc*"} }

// FilterOptions say what the node network state leaves out.
type FilterOptions struct {
	// UnmanagedVeth are path.Match patterns of veth names that count as
	// unmanaged when their peer is outside the namespace (see Filter).
	UnmanagedVeth []string
}

// Filter returns the state a node reports in its NodeNetworkState: st
// without what changes by itself or belongs to someone else, so that the
// report changes only when the node's configuration does. It does not
// modify st.
//
// Upstream drops interfaces NetworkManager reports as `type: veth, state:
// ignore` (veths NetworkManager did not create: pod veths). Our kernel
// engine has no "ignore" state, so an unmanaged veth is defined here as a
// veth whose name matches opts.UnmanagedVeth and whose peer is outside the
// namespace (no interface of st names it back as its peer). That is the
// host side of a pod's network: created and deleted by the container
// runtime with every pod, never by knmstate. Veth pairs with both ends in
// the node (what an nmstate `veth` interface creates) and veths with other
// names (the lab's node NICs eth0, eth1, ... are veths to a lab switch) are
// kept. Then, as upstream:
//   - routes (config and running) whose next-hop-interface is a dropped
//     veth are dropped; so are route rules with that iif, and dropped veths
//     are removed from controllers' port lists (a CNI bridge's ports would
//     otherwise change with every pod);
//   - linux-bridge gc-timer and hello-timer (running countdowns) are
//     removed;
//   - address valid-life-time and preferred-life-time (counting down on
//     leased addresses) are removed.
//
// Unlike upstream, every other top-level section (route-rules, hostname,
// ovs-db, ...) is kept: NNS shows everything the engine reports.
func Filter(st *nmstate.State, opts FilterOptions) *nmstate.State {
	out := st.Clone()
	if out == nil {
		return nil
	}
	drop := unmanagedVeths(out, opts.UnmanagedVeth)
	if len(drop) > 0 {
		out.Interfaces = slices.DeleteFunc(out.Interfaces, func(i nmstate.Interface) bool { return drop[i.Name] })
	}
	for i := range out.Interfaces {
		ifc := &out.Interfaces[i]
		if len(drop) > 0 {
			dropPorts(ifc, drop)
		}
		if ifc.LinuxBridge != nil && ifc.LinuxBridge.Options != nil {
			ifc.LinuxBridge.Options.GCTimer = nil
			ifc.LinuxBridge.Options.HelloTimer = nil
		}
		stripLifetimes(ifc.IPv4)
		stripLifetimes(ifc.IPv6)
	}
	if len(drop) > 0 && out.Routes != nil {
		viaDropped := func(r nmstate.Route) bool { return r.NextHopInterface != nil && drop[*r.NextHopInterface] }
		out.Routes.Config = slices.DeleteFunc(out.Routes.Config, viaDropped)
		out.Routes.Running = slices.DeleteFunc(out.Routes.Running, viaDropped)
	}
	if len(drop) > 0 && out.RouteRules != nil {
		out.RouteRules.Config = slices.DeleteFunc(out.RouteRules.Config, func(r nmstate.RouteRule) bool {
			return r.IIF != nil && drop[*r.IIF]
		})
	}
	return out
}

// unmanagedVeths names the veths Filter drops.
func unmanagedVeths(st *nmstate.State, patterns []string) map[string]bool {
	if len(patterns) == 0 {
		return nil
	}
	peerOf := map[string]string{}
	for _, i := range st.Interfaces {
		if i.Type == nmstate.TypeVeth && i.Veth != nil {
			peerOf[i.Name] = i.Veth.Peer
		}
	}
	var drop map[string]bool
	for _, i := range st.Interfaces {
		if i.Type != nmstate.TypeVeth || !matchAny(patterns, i.Name) {
			continue
		}
		// Both ends here name each other; a peer in another namespace may
		// share a name with a local interface, but that one does not name
		// this veth back.
		if p, ok := peerOf[i.Name]; ok && p != "" && peerOf[p] == i.Name {
			continue
		}
		if drop == nil {
			drop = map[string]bool{}
		}
		drop[i.Name] = true
	}
	return drop
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// dropPorts removes dropped interfaces from ifc's port lists.
func dropPorts(ifc *nmstate.Interface, drop map[string]bool) {
	dropped := func(name string) bool { return drop[name] }
	if b := ifc.LinkAggregation; b != nil && b.Port != nil {
		b.Port = slices.DeleteFunc(b.Port, dropped)
	}
	if b := ifc.LinuxBridge; b != nil && b.Port != nil {
		b.Port = slices.DeleteFunc(b.Port, func(p nmstate.LinuxBridgePort) bool { return drop[p.Name] })
	}
	if b := ifc.OVSBridge; b != nil && b.Port != nil {
		b.Port = slices.DeleteFunc(b.Port, func(p nmstate.OVSBridgePort) bool { return drop[p.Name] })
	}
	if v := ifc.VRF; v != nil && v.Port != nil {
		v.Port = slices.DeleteFunc(v.Port, dropped)
	}
}

func stripLifetimes(c *nmstate.IPConfig) {
	if c == nil {
		return
	}
	for i := range c.Address {
		c.Address[i].ValidLifetime = nil
		c.Address[i].PreferredLifetime = nil
	}
}
