package labnet

import (
	"net"
	"net/netip"
)

// prefixIPNet converts an address with prefix length (not masked) to the
// form netlink takes.
func prefixIPNet(p netip.Prefix) *net.IPNet {
	bits := 32
	if p.Addr().Is6() {
		bits = 128
	}
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), bits)}
}
