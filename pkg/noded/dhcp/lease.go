package dhcp

import (
	"net/netip"
	"time"
)

// Family is the IP family of a lease.
type Family uint8

const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// Infinite is the lifetime of a lease that never expires (0xffffffff
// seconds on the wire, in both DHCPv4 and DHCPv6).
const Infinite = time.Duration(0xffffffff) * time.Second

// Route is one classless static route (DHCPv4 option 121).
type Route struct {
	Destination netip.Prefix
	Gateway     netip.Addr
}

// Lease is what a server granted, in the form the runtime applies. When a
// lease has classless static routes, RFC 3442 says Routers must be ignored
// for routing; both are reported and the runtime decides.
type Lease struct {
	Family    Family
	Interface string
	// Address is the leased address with the prefix length to install:
	// the subnet mask for DHCPv4, /128 for a DHCPv6 IA_NA address (the
	// on-link prefix comes from router advertisements).
	Address netip.Prefix
	// Server is the DHCPv4 server identifier; unset for DHCPv6, whose
	// server is known by ServerID.
	Server netip.Addr
	// ServerID is the DHCPv6 server DUID (nil for DHCPv4).
	ServerID []byte
	// Start is when the request that led to this lease was sent; the
	// lifetimes count from it (RFC 2131 4.4.1).
	Start time.Time
	// Lifetime is the DHCPv4 lease time or the DHCPv6 valid lifetime.
	Lifetime time.Duration
	// Preferred is the DHCPv6 preferred lifetime; for DHCPv4 it equals
	// Lifetime.
	Preferred time.Duration
	// T1 and T2 are the renew and rebind times, relative to Start.
	T1, T2        time.Duration
	Routers       []netip.Addr
	Routes        []Route
	DNS           []netip.Addr
	SearchDomains []string
	DomainName    string
	// Hostname is the host name the server gives (DHCPv4 option 12).
	Hostname string
	// MTU is the interface MTU option (26); 0 when not sent.
	MTU int
}

// RenewAt is when the client starts renewing with its server.
func (l Lease) RenewAt() time.Time { return l.Start.Add(l.T1) }

// RebindAt is when the client starts asking any server.
func (l Lease) RebindAt() time.Time { return l.Start.Add(l.T2) }

// ExpiresAt is when the address must no longer be used.
func (l Lease) ExpiresAt() time.Time { return l.Start.Add(l.Lifetime) }

// withDefaultTimers fills in T1 and T2 when the server did not send usable
// values: 1/2 and 7/8 of the lifetime for DHCPv4 (RFC 2131 4.4.5), 1/2 and
// 4/5 of the preferred lifetime for DHCPv6 (RFC 8415 21.4).
func (l Lease) withDefaultTimers() Lease {
	if l.Lifetime >= Infinite {
		l.T1, l.T2 = Infinite, Infinite
		return l
	}
	base, t2 := l.Lifetime, l.Lifetime/8*7
	if l.Family == IPv6 {
		base = l.Preferred
		t2 = base / 5 * 4
	}
	if l.T1 <= 0 || l.T1 > l.Lifetime {
		l.T1 = base / 2
	}
	if l.T2 <= 0 || l.T2 > l.Lifetime || l.T2 < l.T1 {
		l.T2 = max(t2, l.T1)
	}
	return l
}
