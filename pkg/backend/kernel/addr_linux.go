package kernel

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// lifetimeForever is the kernel's infinite address lifetime.
const lifetimeForever = 0xffffffff

// dumpAddrs lists every address of the namespace, grouped by link index in
// the kernel's order (for IPv4 the primary address comes first).
func (b *Backend) dumpAddrs() (map[int][]netlink.Addr, error) {
	list, err := dump("addresses", func() ([]netlink.Addr, error) {
		return b.h.AddrList(nil, netlink.FAMILY_ALL)
	})
	if err != nil {
		return nil, err
	}
	out := map[int][]netlink.Addr{}
	for _, a := range list {
		out[a.LinkIndex] = append(out[a.LinkIndex], a)
	}
	return out, nil
}

// addrToAddress converts one kernel address. Finite lifetimes are kept
// ("<n>sec"), which marks the address as dynamic.
func addrToAddress(a netlink.Addr) (nmstate.Address, bool) {
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return nmstate.Address{}, false
	}
	ip = ip.Unmap()
	ones, _ := a.Mask.Size()
	out := nmstate.Address{IP: ip, PrefixLength: uint8(ones)}
	if uint32(a.ValidLft) != lifetimeForever {
		out.ValidLifetime = ptr(lifetimeText(a.ValidLft))
		out.PreferredLifetime = ptr(lifetimeText(a.PreferedLft))
	}
	return out, true
}

func lifetimeText(v int) string {
	if uint32(v) == lifetimeForever {
		return "forever"
	}
	return fmt.Sprintf("%dsec", v)
}

// ipConfigs builds the ipv4 and ipv6 sections of one link from its
// addresses and devconf, as nmstate's kernel query does: IPv4 is enabled
// when it has an address, IPv6 unless disable_ipv6 is set; dynamic
// addresses turn dhcp (v4) or autoconf (v6) on; IPv6 link-local addresses
// are left out.
func ipConfigs(kl *kernelLink, addrs []netlink.Addr) (v4, v6 *nmstate.IPConfig) {
	v4 = &nmstate.IPConfig{Address: []nmstate.Address{}}
	v6 = &nmstate.IPConfig{Address: []nmstate.Address{}}
	dyn4, dyn6 := false, false
	for _, a := range addrs {
		addr, ok := addrToAddress(a)
		if !ok {
			continue
		}
		if addr.IP.Is4() {
			v4.Address = append(v4.Address, addr)
			dyn4 = dyn4 || addr.IsDynamic()
			continue
		}
		if addr.IP.IsLinkLocalUnicast() {
			continue
		}
		v6.Address = append(v6.Address, addr)
		dyn6 = dyn6 || addr.IsDynamic()
	}
	if len(v4.Address) == 0 {
		v4 = &nmstate.IPConfig{Enabled: ptr(false)}
	} else {
		v4.Enabled = ptr(true)
		v4.DHCP = ptr(dyn4)
	}
	if kl.inet != nil && len(kl.inet) > inetDevconfForwards && v4.Enabled != nil && *v4.Enabled {
		v4.Forwarding = ptr(kl.inet[inetDevconfForwards] != 0)
	}
	if kl.inet6 == nil || len(kl.inet6) <= devconfDisableIPv6 || kl.inet6[devconfDisableIPv6] != 0 {
		v6 = &nmstate.IPConfig{Enabled: ptr(false)}
		return v4, v6
	}
	v6.Enabled = ptr(true)
	v6.DHCP = ptr(false)
	v6.Autoconf = ptr(dyn6)
	v6.Forwarding = ptr(kl.inet6[devconfForwarding] != 0)
	return v4, v6
}

// addressToAddr converts an nmstate address for AddrAdd/AddrDel. IPv6
// addresses skip duplicate address detection: the engine sets addresses
// it was told to use and verifies them at once.
func addressToAddr(a nmstate.Address) *netlink.Addr {
	ip := a.IP.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 128
	}
	out := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(ip.AsSlice()), Mask: net.CIDRMask(int(a.PrefixLength), bits)}}
	if ip.Is6() {
		out.Flags = unix.IFA_F_NODAD
	}
	return out
}
