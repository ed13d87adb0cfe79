package noded

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/noded/dhcp"
)

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// Route is a dynamic route as the runtime installs it (protocol dhcp).
type Route struct {
	Interface   string       `json:"interface"`
	Destination netip.Prefix `json:"destination"`
	Gateway     netip.Addr   `json:"gateway,omitzero"`
	Table       uint32       `json:"table"`
	Metric      uint32       `json:"metric"`
}

// LeaseRoutes are the routes to install for a lease under the given auto
// settings. auto-routes false installs none; auto-gateway false leaves out
// default routes. Classless static routes (option 121), when the server
// sent any, replace the router option (RFC 3442). When the routes go to a
// table other than main, the lease's subnet is added there too, so the
// gateway is reachable from lookups in that table alone (the kernel puts
// the prefix route in main only).
func LeaseRoutes(l dhcp.Lease, a Auto) []Route {
	if !a.Routes || l.Family != dhcp.IPv4 {
		return nil
	}
	var out []Route
	add := func(dst netip.Prefix, gw netip.Addr) {
		if dst.Bits() == 0 && !a.Gateway {
			return
		}
		r := Route{Interface: l.Interface, Destination: dst.Masked(), Gateway: gw, Table: a.Table, Metric: a.Metric}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	if a.Table != MainTable && l.Address.IsValid() {
		add(l.Address.Masked(), netip.Addr{})
	}
	if len(l.Routes) > 0 {
		for _, r := range l.Routes {
			add(r.Destination, r.Gateway)
		}
		return out
	}
	if len(l.Routers) > 0 {
		add(netip.PrefixFrom(netip.IPv4Unspecified(), 0), l.Routers[0])
	}
	return out
}

// DynamicDNS is what the leases contribute to the resolver.
type DynamicDNS struct {
	Server []netip.Addr `json:"server,omitempty"`
	Search []string     `json:"search,omitempty"`
}

// LeaseDNS collects the servers and search domains of the installed
// leases whose family has auto-dns: IPv4 leases first, then IPv6, each in
// interface name order.
func LeaseDNS(leases []InstalledLease, specs map[string]Spec) DynamicDNS {
	sorted := slices.Clone(leases)
	slices.SortStableFunc(sorted, func(a, b InstalledLease) int {
		if a.Family != b.Family {
			return a.Family - b.Family
		}
		return strings.Compare(a.Interface, b.Interface)
	})
	var d DynamicDNS
	for _, l := range sorted {
		if a, ok := autoFor(specs, Key{l.Interface, l.Family}); !ok || !a.DNS {
			continue
		}
		for _, s := range l.DNS {
			if !slices.Contains(d.Server, s) {
				d.Server = append(d.Server, s)
			}
		}
		for _, s := range l.Search {
			if !slices.Contains(d.Search, s) {
				d.Search = append(d.Search, s)
			}
		}
	}
	return d
}

// MergeDNS computes the resolv.conf to write. file is what the file holds
// now, added what the runtime appended last time (it is taken out again:
// the rest is the static configuration, whoever wrote it), dyn what the
// leases offer now. The result lists the static servers and search
// domains first, then the dynamic ones not already there, as nmstate
// does; appended is what was added this time, to remember for the next
// call.
func MergeDNS(file nmstate.DNSConfig, added, dyn DynamicDNS) (out nmstate.DNSConfig, appended DynamicDNS) {
	static := nmstate.DNSConfig{
		Server:  withoutTail(file.Server, added.Server),
		Search:  withoutTail(file.Search, added.Search),
		Options: slices.Clone(file.Options),
	}
	out = nmstate.DNSConfig{
		Server:  slices.Clone(static.Server),
		Search:  slices.Clone(static.Search),
		Options: static.Options,
	}
	for _, s := range dyn.Server {
		if !slices.Contains(out.Server, s) {
			out.Server = append(out.Server, s)
			appended.Server = append(appended.Server, s)
		}
	}
	for _, s := range dyn.Search {
		if !slices.Contains(out.Search, s) {
			out.Search = append(out.Search, s)
			appended.Search = append(appended.Search, s)
		}
	}
	return out, appended
}

// withoutTail removes tail from the end of list when list ends with it
// (what the runtime appended is still there), and otherwise removes each
// of its elements wherever it is: someone rewrote the file, and entries
// that came from leases must not become static.
func withoutTail[T comparable](list, tail []T) []T {
	if len(tail) == 0 {
		return slices.Clone(list)
	}
	if len(list) >= len(tail) && slices.Equal(list[len(list)-len(tail):], tail) {
		return slices.Clone(list[:len(list)-len(tail)])
	}
	var out []T
	for _, v := range list {
		if !slices.Contains(tail, v) {
			out = append(out, v)
		}
	}
	return out
}
