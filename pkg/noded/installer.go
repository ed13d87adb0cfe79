package noded

import (
	"context"
	"net/netip"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Installer puts what leases hand out into the node. Deletions of things
// already gone succeed. KernelInstaller implements it over the kernel
// backend; tests of pure logic may fake it.
type Installer interface {
	// ReplaceAddress installs or refreshes a leased address with its
	// remaining lifetimes.
	ReplaceAddress(ctx context.Context, iface string, p netip.Prefix, valid, preferred time.Duration) error
	DeleteAddress(ctx context.Context, iface string, p netip.Prefix) error
	// AddRoute and DeleteRoute handle routes with protocol dhcp of one
	// interface. AddRoute adds next to routes to the same destination and
	// metric (another interface's lease in the same subnet keeps its
	// default route; both use the same metric, as NetworkManager's
	// per-device default of 100 for ethernet does) and succeeds when the
	// route is already there. DeleteRoute removes only the route of that
	// interface and protocol.
	AddRoute(ctx context.Context, r Route) error
	DeleteRoute(ctx context.Context, r Route) error
	// ManagesDNS reports whether there is a resolv.conf to maintain.
	ManagesDNS() bool
	ReadDNS(ctx context.Context) (nmstate.DNSConfig, error)
	WriteDNS(ctx context.Context, c nmstate.DNSConfig) error
	SetSysctl(ctx context.Context, s Sysctl) error
	// FlushAutoconf removes the addresses SLAAC made on an interface.
	FlushAutoconf(ctx context.Context, iface string) error
	// SetDHCPHostname makes name, from a lease, the running hostname if
	// the node's static hostname is empty, and reports whether it did.
	SetDHCPHostname(ctx context.Context, name string) (bool, error)
	// LLDPEnabled lists the interfaces whose LLDP neighbours to keep
	// (lldp.enabled: true); WriteLLDPNeighbors stores an interface's.
	LLDPEnabled(ctx context.Context) ([]string, error)
	WriteLLDPNeighbors(ctx context.Context, iface string, ns map[string]LLDPNeighbor) error
	// LLDPLock is the file whose lock makes one LLDP receiver of several
	// (node runtime, handler) listen; "" = no LLDP.
	LLDPLock() string
}

// LLDPNeighbor is one neighbour heard on an interface: nmstate's TLV
// objects and when its TTL runs out.
type LLDPNeighbor struct {
	TLVs    []any
	Expires time.Time
}
