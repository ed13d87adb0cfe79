package kernel

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// This file is the node runtime's entry into the kernel (pkg/noded): it
// installs what DHCP and router advertisements hand out. Unlike plan
// operations these objects are dynamic: addresses carry the lease's
// lifetimes (the kernel drops them when the lease runs out even if the
// runtime is gone) and routes carry protocol dhcp or ra, so Show reports
// them in routes.running only and a later plan never mistakes them for
// configuration.

// RouteOrigin is the routing protocol a dynamic route is installed with.
type RouteOrigin uint8

const (
	// OriginDHCP is RTPROT_DHCP.
	OriginDHCP RouteOrigin = rtprotDHCP
	// OriginRA is RTPROT_RA.
	OriginRA RouteOrigin = rtprotRA
)

// DynamicAddress is a leased address with its remaining lifetimes
// (rounded down to whole seconds by the kernel; at least one second).
type DynamicAddress struct {
	Interface string
	Prefix    netip.Prefix
	Valid     time.Duration
	Preferred time.Duration
}

// DynamicRoute is a route learned from a lease. An unset Gateway is an
// on-link route. Table 0 means the main table.
type DynamicRoute struct {
	Interface   string
	Destination netip.Prefix
	Gateway     netip.Addr
	Source      netip.Addr
	Table       uint32
	Metric      uint32
	Origin      RouteOrigin
}

func (r DynamicRoute) String() string {
	s := r.Destination.String()
	if r.Gateway.IsValid() {
		s += " via " + r.Gateway.String()
	}
	return fmt.Sprintf("%s dev %s table %d metric %d proto %d", s, r.Interface, r.table(), r.Metric, r.Origin)
}

func (r DynamicRoute) table() uint32 {
	if r.Table == 0 {
		return unix.RT_TABLE_MAIN
	}
	return r.Table
}

// lifetimeSeconds converts a lease lifetime to the kernel's seconds,
// keeping "infinite" infinite and never reaching 0 (which the kernel would
// read as already expired).
func lifetimeSeconds(d time.Duration) int {
	if d >= time.Duration(lifetimeForever)*time.Second {
		return lifetimeForever
	}
	return max(int(d/time.Second), 1)
}

// ReplaceDynamicAddress adds the address, or updates its lifetimes when it
// is already there (a renewal).
func (b *Backend) ReplaceDynamicAddress(a DynamicAddress) error {
	l, err := b.mustLink(a.Interface)
	if err != nil {
		return err
	}
	na := addressToAddr(nmstate.Address{IP: a.Prefix.Addr(), PrefixLength: uint8(a.Prefix.Bits())})
	na.ValidLft = lifetimeSeconds(a.Valid)
	na.PreferedLft = min(lifetimeSeconds(a.Preferred), na.ValidLft)
	if err := b.h.AddrReplace(l, na); err != nil {
		return fmt.Errorf("installing %s on %s: %w", a.Prefix, a.Interface, classify(err))
	}
	return nil
}

// DeleteDynamicAddress removes the address; an address or interface that
// is already gone is success. A static address (infinite lifetime) with
// the same prefix is left alone: it belongs to the configuration now.
func (b *Backend) DeleteDynamicAddress(iface string, p netip.Prefix) error {
	l, ok, err := b.linkByName(iface)
	if err != nil || !ok {
		return err
	}
	list, err := dump("addresses", func() ([]netlink.Addr, error) {
		return b.h.AddrList(l, netlink.FAMILY_ALL)
	})
	if err != nil {
		return classify(err)
	}
	for _, a := range list {
		got, ok := addrToAddress(a)
		if !ok || got.Prefix() != p {
			continue
		}
		if uint32(a.ValidLft) == lifetimeForever {
			return nil
		}
		if got.IP.Is4() {
			// Removing a primary IPv4 address removes the secondaries of
			// its subnet too (a static address added while the lease was
			// primary) unless they are promoted; NetworkManager sets this
			// on every device it manages for the same reason.
			if err := b.sysctlSet(iface, "net.ipv4.conf."+iface+".promote_secondaries", "1"); err != nil {
				return fmt.Errorf("removing %s from %s: %w", p, iface, err)
			}
		}
		err := b.h.AddrDel(l, &a)
		if err == nil || errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("removing %s from %s: %w", p, iface, classify(err))
	}
	return nil
}

func (b *Backend) dynamicRoute(r DynamicRoute) (*netlink.Route, bool, error) {
	l, ok, err := b.linkByName(r.Interface)
	if err != nil || !ok {
		return nil, ok, err
	}
	nr := &netlink.Route{
		LinkIndex: l.Attrs().Index,
		Dst:       prefixIPNet(r.Destination.Masked()),
		Table:     int(r.table()),
		Priority:  int(r.Metric),
		Protocol:  netlink.RouteProtocol(r.Origin),
		Scope:     netlink.SCOPE_UNIVERSE,
	}
	if r.Gateway.IsValid() {
		nr.Gw = net.IP(r.Gateway.AsSlice())
	} else if r.Destination.Addr().Is4() {
		nr.Scope = netlink.SCOPE_LINK
	}
	if r.Source.IsValid() {
		nr.Src = net.IP(r.Source.AsSlice())
	}
	return nr, true, nil
}

// ReplaceDynamicRoute installs (or refreshes) a route learned from a lease.
func (b *Backend) ReplaceDynamicRoute(r DynamicRoute) error {
	nr, ok, err := b.dynamicRoute(r)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("installing route %s: no interface %s", r, r.Interface)
	}
	if err := b.h.RouteReplace(nr); err != nil {
		return fmt.Errorf("installing route %s: %w", r, classify(err))
	}
	return nil
}

// AddDynamicRoute installs a route learned from a lease next to any
// route to the same destination with the same metric (NLM_F_APPEND):
// another interface's lease route (two NICs in one subnet each have a
// default route, as with NetworkManager's per-device metrics when both
// default to the same value) must never be replaced by this one. The
// same route already present (a renewal) is success.
func (b *Backend) AddDynamicRoute(r DynamicRoute) error {
	nr, ok, err := b.dynamicRoute(r)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("installing route %s: no interface %s", r, r.Interface)
	}
	if err := b.h.RouteAppend(nr); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("installing route %s: %w", r, classify(err))
	}
	return nil
}

// DeleteDynamicRoute removes a route learned from a lease; a route (or
// interface) that is already gone is success.
func (b *Backend) DeleteDynamicRoute(r DynamicRoute) error {
	nr, ok, err := b.dynamicRoute(r)
	if err != nil || !ok {
		return err
	}
	err = b.h.RouteDel(nr)
	if err == nil || errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("removing route %s: %w", r, classify(err))
}

// ReadResolvConf parses the configured resolv.conf (missing = empty).
func (b *Backend) ReadResolvConf() (nmstate.DNSConfig, error) {
	if b.opts.ResolvConf == "" {
		return nmstate.DNSConfig{}, errors.New("no resolv.conf file configured")
	}
	r, err := b.readDNS()
	if err != nil {
		return nmstate.DNSConfig{}, err
	}
	return *r.Config, nil
}

// WriteResolvConf replaces the configured resolv.conf atomically.
func (b *Backend) WriteResolvConf(c nmstate.DNSConfig) error {
	if err := b.writeDNS(c); err != nil {
		return fmt.Errorf("writing %s: %w", b.opts.ResolvConf, err)
	}
	return nil
}

// SetSysctl writes a per-namespace net.* sysctl of the backend's namespace
// (net.ipv6.conf.<iface>.<key>), as SysctlSet operations do.
func (b *Backend) SetSysctl(iface, key, value string) error {
	if err := b.sysctlSet(iface, key, value); err != nil {
		return fmt.Errorf("setting %s=%s: %w", key, value, err)
	}
	return nil
}

// HasResolvConf reports whether the backend was opened with a resolv.conf
// file, i.e. whether DNS can be read and written.
func (b *Backend) HasResolvConf() bool { return b.opts.ResolvConf != "" }

// DeleteAutoconfAddresses removes the addresses SLAAC made on iface:
// global IPv6 addresses that are not permanent and not a /128 (the
// kernel's SLAAC addresses carry the advertised prefix, a DHCPv6 lease is
// installed as /128). Turning the autoconf sysctl off keeps existing ones
// until their lifetime ends, which autoconf: false must not wait for.
func (b *Backend) DeleteAutoconfAddresses(iface string) error {
	l, ok, err := b.linkByName(iface)
	if err != nil || !ok {
		return err
	}
	list, err := dump("addresses", func() ([]netlink.Addr, error) {
		return b.h.AddrList(l, netlink.FAMILY_V6)
	})
	if err != nil {
		return classify(err)
	}
	for _, a := range list {
		ones, bits := a.Mask.Size()
		if a.Scope != unix.RT_SCOPE_UNIVERSE || a.Flags&unix.IFA_F_PERMANENT != 0 || ones == bits {
			continue
		}
		err := b.h.AddrDel(l, &a)
		if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("removing autoconf address %s from %s: %w", a.IPNet, iface, classify(err))
		}
	}
	return nil
}
