package probe

import (
	"net/netip"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// mainTable is the kernel's main routing table; a route without table-id
// is in it.
const mainTable = 254

// Gateway is a default route's next hop.
type Gateway struct {
	Addr  netip.Addr
	Iface string
}

// DefaultGateway returns the next hop of the first running default route
// (0.0.0.0/0 or ::/0) of the main table, as upstream's ping probe picks
// it: default routes of other tables (policy routing) are not the node's
// connectivity. ok is false when there is none.
func DefaultGateway(s *nmstate.State) (gw Gateway, ok bool) {
	if s == nil || s.Routes == nil {
		return Gateway{}, false
	}
	for _, r := range s.Routes.Running {
		if r.Destination == nil || r.Destination.Bits() != 0 || r.IsAbsent() {
			continue
		}
		if r.TableID != nil && *r.TableID != 0 && *r.TableID != mainTable {
			continue
		}
		if r.NextHopAddress == nil || !r.NextHopAddress.IsValid() || r.NextHopInterface == nil {
			continue
		}
		return Gateway{Addr: *r.NextHopAddress, Iface: *r.NextHopInterface}, true
	}
	return Gateway{}, false
}

// NameServers returns the running name servers of s.
func NameServers(s *nmstate.State) []netip.Addr {
	if s == nil || s.DNSResolver == nil || s.DNSResolver.Running == nil {
		return nil
	}
	return s.DNSResolver.Running.Server
}
