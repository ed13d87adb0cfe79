package nm

import (
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// MPTCP endpoints are NetworkManager's (connection.mptcp-flags, one
// endpoint per address of the profile); like nmstate (from nispor), this
// backend reports what the kernel holds: the path manager's endpoints
// (generic netlink family mptcp_pm), as per-address mptcp-flags and, when
// every address of the interface has the same flags, the interface's
// mptcp.address-flags.

// showMPTCP reports the kernel's MPTCP endpoints on the interfaces'
// addresses, as nmstate does.
func (b *Backend) showMPTCP(s *nmstate.State) {
	eps := b.kernel.MPTCPEndpoints()
	if eps == nil {
		return
	}
	for i := range s.Interfaces {
		ifc := &s.Interfaces[i]
		if ifc.Type.IsUserSpace() {
			continue
		}
		var common []nmstate.MPTCPFlag
		valid, same := false, true
		for _, c := range []*nmstate.IPConfig{ifc.IPv4, ifc.IPv6} {
			if c == nil {
				continue
			}
			for j := range c.Address {
				a := &c.Address[j]
				ip := a.IP
				if ip.IsLoopback() || ip.IsMulticast() || ip.IsLinkLocalUnicast() || ip.Is6() && ip.As16()[0]&0xfe == 0xfc {
					continue
				}
				valid = true
				fl := eps[ip]
				if fl == nil {
					fl = []nmstate.MPTCPFlag{}
				}
				a.MPTCPFlags = fl
				switch {
				case common == nil:
					common = fl
				case !sameFlags(common, fl):
					same = false
				}
			}
		}
		if valid && same {
			ifc.MPTCP = &nmstate.MPTCP{AddressFlags: common}
		}
	}
}

func sameFlags(a, b []nmstate.MPTCPFlag) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
