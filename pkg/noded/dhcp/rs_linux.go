package dhcp

import (
	"fmt"
	"net"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// SolicitRouters sends one ICMPv6 Router Solicitation on ifname in ns, so
// that routers answer at once instead of at their next periodic
// advertisement (up to minutes). The kernel solicits only when the link
// comes up; turning autoconf on later (an apply) needs this to get its
// SLAAC address quickly. The kernel fills in the checksum of raw ICMPv6
// sockets; the source is the interface's link-local address (an
// interface without a usable one yet fails with EADDRNOTAVAIL: the
// kernel solicits by itself once it has one).
func SolicitRouters(ns netns.NsHandle, ifname string) error {
	return nsrun.Do(ns, func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return fmt.Errorf("router solicitation on %s: %w", ifname, err)
		}
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6)
		if err != nil {
			return fmt.Errorf("router solicitation on %s: icmpv6 socket: %w", ifname, err)
		}
		defer unix.Close(fd)
		// Neighbour discovery messages must carry hop limit 255 (RFC 4861 6.1.1).
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_HOPS, 255); err != nil {
			return fmt.Errorf("router solicitation on %s: %w", ifname, err)
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF, ifi.Index); err != nil {
			return fmt.Errorf("router solicitation on %s: %w", ifname, err)
		}
		// Type 133, code 0, checksum (kernel), 4 reserved bytes, then the
		// source link-layer address option (type 1, 8 octets) so the
		// router can answer without resolving us first.
		msg := []byte{133, 0, 0, 0, 0, 0, 0, 0}
		if len(ifi.HardwareAddr) == 6 {
			msg = append(append(msg, 1, 1), ifi.HardwareAddr...)
		}
		to := &unix.SockaddrInet6{ZoneId: uint32(ifi.Index)}
		copy(to.Addr[:], net.ParseIP("ff02::2").To16())
		if err := unix.Sendto(fd, msg, 0, to); err != nil {
			return fmt.Errorf("router solicitation on %s: %w", ifname, err)
		}
		return nil
	})
}
