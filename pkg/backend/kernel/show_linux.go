package kernel

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Show reads the namespace (and the resolv.conf file and UTS namespace, if
// configured) into a reported nmstate state: interfaces in ifindex order,
// routes.config and routes.running, route rules, DNS and hostname.
func (b *Backend) Show(ctx context.Context) (*nmstate.State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The three dumps use three sockets and run at the same time: links
	// (raw), addresses (the library's), routes then rules (tables).
	// Failures are still reported in the order links, bridge VLANs,
	// addresses, routes, rules.
	type addrDump struct {
		addrs map[int][]netlink.Addr
		err   error
	}
	addrc := make(chan addrDump, 1)
	go func() {
		a, err := b.dumpAddrs()
		addrc <- addrDump{a, err}
	}()
	var routes []kernelRoute
	var rules []netlink.Rule
	var routeErr, ruleErr error
	tablesDone := make(chan struct{})
	go func() {
		defer close(tablesDone)
		if routes, routeErr = b.dumpRoutes(); routeErr == nil {
			rules, ruleErr = b.dumpRules()
		}
	}()
	type ethDump struct {
		info map[int]*ethtoolInfo
		err  error
	}
	ethc := make(chan ethDump, 1)
	go func() {
		e, err := b.dumpEthtool()
		ethc <- ethDump{e, err}
	}()
	links, err := b.dumpLinks()
	ad := <-addrc
	ed := <-ethc
	<-tablesDone
	if err != nil {
		return nil, err
	}
	v := newLinkView(links)
	v.peerName = b.peerResolver()
	for _, kl := range links {
		if kl.kind == "bridge" && attrBool(kl.data, unix.IFLA_BR_VLAN_FILTERING) != nil && *attrBool(kl.data, unix.IFLA_BR_VLAN_FILTERING) {
			if v.bridgeVLANs, err = b.dumpBridgeVLANs(); err != nil {
				return nil, err
			}
			break
		}
	}
	addrs, err := ad.addrs, ad.err
	if err != nil {
		return nil, err
	}
	if ed.err != nil {
		return nil, ed.err
	}
	st := &nmstate.State{Interfaces: make([]nmstate.Interface, 0, len(links))}
	for _, kl := range links {
		ifc := linkToInterface(kl, v)
		if ifc.Type == nmstate.TypeEthernet {
			if dir := sriovDir(kl); dir != "" {
				ifc.Ethernet = &nmstate.Ethernet{SRIOV: sriovSection(kl, dir)}
			}
		}
		if ifc.Type == nmstate.TypeEthernet || ifc.Type == nmstate.TypeVeth {
			// Ethernet NICs and veths, as upstream reports them; other
			// types have features too, but nothing configures them.
			ifc.Ethtool = ed.info[kl.attrs().Index].section()
			if ifc.IEEE8021X, err = b.readIEEE8021X(ifc.Name); err != nil {
				return nil, err
			}
			if ifc.LLDP, err = b.readLLDP(ifc.Name, time.Now()); err != nil {
				return nil, err
			}
		}
		if ifc.Type == nmstate.TypeMACsec {
			mka, err := b.readMKA(ifc.Name, ifc.MACsec)
			if err != nil {
				return nil, err
			}
			// With MKA the link's up flag is wpa_supplicant's controlled
			// port: it holds the link down until a peer agrees on keys
			// (and again while it rekeys), so a down link whose
			// supplicant runs is the up the apply asked for.
			if mka && ifc.State == nmstate.StateDown && b.supplicantPID(ifc.Name) != 0 {
				ifc.State = nmstate.StateUp
			}
		}
		// Ports too: a port's disabled IP is what the kernel holds, and
		// reporting it keeps "plan again" empty after an apply.
		ifc.IPv4, ifc.IPv6 = ipConfigs(kl, addrs[kl.attrs().Index])
		st.Interfaces = append(st.Interfaces, ifc)
	}

	if routeErr != nil {
		return nil, routeErr
	}
	st.Routes = &nmstate.Routes{Config: []nmstate.Route{}, Running: []nmstate.Route{}}
	for _, r := range routes {
		if routeShown(r, true) {
			st.Routes.Running = append(st.Routes.Running, kernelRouteToRoute(r, v))
		}
		if routeShown(r, false) {
			st.Routes.Config = append(st.Routes.Config, kernelRouteToRoute(r, v))
		}
	}

	if ruleErr != nil {
		return nil, ruleErr
	}
	st.RouteRules = &nmstate.RouteRules{Config: []nmstate.RouteRule{}}
	for _, r := range rules {
		if rr, ok := ruleToRouteRule(r); ok {
			st.RouteRules.Config = append(st.RouteRules.Config, rr)
		}
	}

	if b.opts.ResolvConf != "" {
		if st.DNSResolver, err = b.readDNS(); err != nil {
			return nil, err
		}
	}
	if b.uts >= 0 {
		if st.Hostname, err = b.readHostname(); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// peerResolver returns a function that names a link in another namespace
// known to this one by a namespace id (a veth peer's IFLA_LINK_NETNSID).
// Candidates are the named namespaces under /run/netns and PID 1's; the
// result is cached for one Show.
func (b *Backend) peerResolver() func(netnsID, index int) string {
	type key struct{ id, index int }
	cache := map[key]string{}
	var paths []string
	return func(netnsID, index int) string {
		k := key{netnsID, index}
		if name, ok := cache[k]; ok {
			return name
		}
		if paths == nil {
			paths = []string{"/proc/1/ns/net"}
			if entries, err := os.ReadDir("/run/netns"); err == nil {
				for _, e := range entries {
					paths = append(paths, filepath.Join("/run/netns", e.Name()))
				}
			}
		}
		name := ""
		for _, p := range paths {
			if name = b.linkNameIn(p, netnsID, index); name != "" {
				break
			}
		}
		cache[k] = name
		return name
	}
}

// linkNameIn names link index in the namespace at path if that namespace
// has id netnsID as seen from this backend's namespace.
func (b *Backend) linkNameIn(path string, netnsID, index int) string {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return ""
	}
	defer ns.Close()
	id, err := b.h.GetNetNsIdByFd(int(ns))
	if err != nil || id != netnsID {
		return ""
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return ""
	}
	defer h.Close()
	l, err := h.LinkByIndex(index)
	if err != nil {
		return ""
	}
	return l.Attrs().Name
}
