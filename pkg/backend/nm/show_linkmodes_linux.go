package nm

import (
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// The kernel backend reads no link modes (and sets none: it refuses
// ethernet speed/duplex/auto-negotiation). Through NetworkManager they
// are the profile's (802-3-ethernet, profile_ethernet.go), and like
// nmstate (from nispor) this backend reports what the kernel then shows:
// ethtool's LINKMODES_GET, one dump over the namespace's devices.

// showLinkModes adds the kernel's link modes to the ethernet section of
// ethernet and veth interfaces.
func (b *Backend) showLinkModes(s *nmstate.State) {
	modes := b.kernel.LinkModes()
	for i := range s.Interfaces {
		ifc := &s.Interfaces[i]
		m := modes[ifc.Name]
		if m == nil || (ifc.Type != nmstate.TypeEthernet && ifc.Type != nmstate.TypeVeth) {
			continue
		}
		if ifc.Ethernet == nil {
			ifc.Ethernet = &nmstate.Ethernet{}
		}
		ifc.Ethernet.AutoNegotiation, ifc.Ethernet.Speed, ifc.Ethernet.Duplex = m.AutoNegotiation, m.Speed, m.Duplex
	}
}
