package probe

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// Ping sends one ICMP echo request to addr through iface from inside the
// network namespace netns and waits for the matching reply until ctx ends
// (at most 3 s without a deadline). The socket is a raw ICMP socket bound
// to iface, so a link-local IPv6 gateway works and the reply must come back
// the way the request left.
func Ping(ctx context.Context, netns string, addr netip.Addr, iface string) error {
	addr = addr.Unmap()
	network, laddr, proto := "ip4:icmp", "0.0.0.0", 1
	var reqType, replyType icmp.Type = ipv4.ICMPTypeEcho, ipv4.ICMPTypeEchoReply
	if addr.Is6() {
		network, laddr, proto = "ip6:ipv6-icmp", "::", 58
		reqType, replyType = ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		if iface == "" {
			return nil
		}
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, iface)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("binding to %s: %w", iface, serr)
		}
		return nil
	}}
	var conn net.PacketConn
	zone := addr.Zone()
	if zone == "" {
		zone = iface
	}
	if err := nsrun.DoPath(netns, func() error {
		// A zone names an interface of the namespace: resolve it here,
		// where the name means the node's interface, to its index (a
		// name would be looked up in whatever namespace sends).
		if addr.Is6() && addr.IsLinkLocalUnicast() && zone != "" {
			if _, err := strconv.Atoi(zone); err != nil {
				ifi, err := net.InterfaceByName(zone)
				if err != nil {
					return fmt.Errorf("zone %s: %w", zone, err)
				}
				zone = strconv.Itoa(ifi.Index)
			}
		}
		var err error
		conn, err = lc.ListenPacket(ctx, network, laddr)
		return err
	}); err != nil {
		return fmt.Errorf("ping %s: opening ICMP socket: %w", addr, err)
	}
	defer conn.Close()

	var idb [4]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return fmt.Errorf("ping %s: %w", addr, err)
	}
	id, seq := int(binary.BigEndian.Uint16(idb[:2])), int(binary.BigEndian.Uint16(idb[2:]))
	msg := icmp.Message{Type: reqType, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("knmstate-probe")}}
	wb, err := msg.Marshal(nil) // the kernel fills the ICMPv6 checksum
	if err != nil {
		return fmt.Errorf("ping %s: %w", addr, err)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(3 * time.Second)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return fmt.Errorf("ping %s: %w", addr, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	dst := &net.IPAddr{IP: addr.AsSlice()}
	if addr.Is6() && addr.IsLinkLocalUnicast() {
		dst.Zone = zone
	}
	if _, err := conn.WriteTo(wb, dst); err != nil {
		return fmt.Errorf("ping %s dev %s: %w", addr, iface, err)
	}
	rb := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(rb)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.EAGAIN) || isTimeout(err) {
				return fmt.Errorf("ping %s dev %s: no reply", addr, iface)
			}
			return fmt.Errorf("ping %s dev %s: %w", addr, iface, err)
		}
		m, err := icmp.ParseMessage(proto, rb[:n])
		if err != nil || m.Type != replyType {
			continue
		}
		echo, ok := m.Body.(*icmp.Echo)
		if !ok || echo.ID != id || echo.Seq != seq {
			continue
		}
		if ip, ok := from.(*net.IPAddr); ok {
			if got, ok := netip.AddrFromSlice(ip.IP); ok && got.Unmap() != addr.WithZone("") {
				continue
			}
		}
		return nil
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
