package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Routes are read and written with raw RTM_*ROUTE messages built with the
// library's nl helpers: the typed API neither reports nor sets a locked
// congestion window (RTAX_LOCK for RTAX_CWND), which nmstate's `cwnd` is.

// Route protocols nmstate reports (include/uapi/linux/rtnetlink.h).
const (
	rtprotRA         = 9
	rtprotDHCP       = 16
	rtprotMrouted    = 17
	rtprotKeepalived = 18
	rtprotBabel      = 42
)

// kernelRoute is one route of a route dump, flattened to one next hop.
type kernelRoute struct {
	family          uint8
	dst             netip.Prefix
	table           uint32
	protocol, scope uint8
	typ             uint8
	oif             int
	gw, src         netip.Addr
	metric          uint32
	hasMetric       bool
	cwnd            uint32
	cwndLocked      bool
	// The other route metrics nmstate shows (0 = not set).
	mtu, advmss, initcwnd, initrwnd uint32
	mtuLocked, quickack             bool
	weight                          uint16 // 0 = not a multipath next hop
}

// dumpRoutes lists the routes of every table and both families that
// routes.running may show (routeShown with running, which includes what
// routes.config shows): the kernel's own routes (local, broadcast,
// multicast, prefix routes), most of a dump, are dropped on their header
// before their attributes are decoded.
func (b *Backend) dumpRoutes() ([]kernelRoute, error) {
	return dump("routes", func() ([]kernelRoute, error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETROUTE, unix.NLM_F_DUMP)
		req.AddData(nl.NewRtMsg())
		msgs, err := b.tablesRequest(req, unix.RTM_NEWROUTE)
		var out []kernelRoute
		for _, m := range msgs {
			if len(m) >= unix.SizeofRtMsg {
				h := nl.DeserializeRtMsg(m)
				if !routeShown(kernelRoute{typ: h.Type, scope: h.Scope, protocol: h.Protocol}, true) {
					continue
				}
			}
			rs, perr := parseRouteMessage(m)
			if perr != nil {
				return nil, perr
			}
			out = append(out, rs...)
		}
		return out, err
	})
}

func parseRouteMessage(m []byte) ([]kernelRoute, error) {
	if len(m) < unix.SizeofRtMsg {
		return nil, errors.New("short route message")
	}
	msg := nl.DeserializeRtMsg(m)
	r := kernelRoute{
		family: msg.Family, table: uint32(msg.Table), protocol: msg.Protocol,
		scope: msg.Scope, typ: msg.Type,
	}
	var dst netip.Addr
	var multipath []byte
	err := walkAttrs(m[unix.SizeofRtMsg:], func(typ uint16, v []byte) {
		switch typ {
		case unix.RTA_DST:
			dst, _ = netip.AddrFromSlice(v)
		case unix.RTA_OIF:
			r.oif = int(nl.NativeEndian().Uint32(v))
		case unix.RTA_GATEWAY:
			r.gw, _ = netip.AddrFromSlice(v)
		case unix.RTA_PREFSRC:
			r.src, _ = netip.AddrFromSlice(v)
		case unix.RTA_PRIORITY:
			r.metric, r.hasMetric = nl.NativeEndian().Uint32(v), true
		case unix.RTA_TABLE:
			r.table = nl.NativeEndian().Uint32(v)
		case unix.RTA_METRICS:
			var lock uint32
			err := walkAttrs(v, func(mt uint16, mv []byte) {
				switch mt {
				case unix.RTAX_LOCK:
					lock = nl.NativeEndian().Uint32(mv)
				case unix.RTAX_CWND:
					r.cwnd = nl.NativeEndian().Uint32(mv)
				case unix.RTAX_MTU:
					r.mtu = nl.NativeEndian().Uint32(mv)
				case unix.RTAX_ADVMSS:
					r.advmss = nl.NativeEndian().Uint32(mv)
				case unix.RTAX_INITCWND:
					r.initcwnd = nl.NativeEndian().Uint32(mv)
				case unix.RTAX_INITRWND:
					r.initrwnd = nl.NativeEndian().Uint32(mv)
				case unix.RTAX_QUICKACK:
					r.quickack = nl.NativeEndian().Uint32(mv) != 0
				}
			})
			if err == nil {
				r.cwndLocked = lock&(1<<unix.RTAX_CWND) != 0
				r.mtuLocked = lock&(1<<unix.RTAX_MTU) != 0
			}
		case unix.RTA_MULTIPATH:
			multipath = v
		}
	})
	if err != nil {
		return nil, fmt.Errorf("decoding route attributes: %w", err)
	}
	if !dst.IsValid() {
		if msg.Family == unix.AF_INET6 {
			dst = netip.IPv6Unspecified()
		} else {
			dst = netip.IPv4Unspecified()
		}
	}
	r.dst = netip.PrefixFrom(dst, int(msg.Dst_len))
	if multipath == nil {
		return []kernelRoute{r}, nil
	}
	// struct rtnexthop { u16 len; u8 flags; u8 hops; s32 ifindex; } + attrs
	var out []kernelRoute
	for len(multipath) >= 8 {
		l := int(binary.NativeEndian.Uint16(multipath))
		if l < 8 || l > len(multipath) {
			break
		}
		nh := r
		nh.weight = uint16(multipath[3]) + 1
		nh.oif = int(int32(binary.NativeEndian.Uint32(multipath[4:])))
		nh.gw = netip.Addr{}
		_ = walkAttrs(multipath[8:l], func(typ uint16, v []byte) {
			if typ == unix.RTA_GATEWAY {
				nh.gw, _ = netip.AddrFromSlice(v)
			}
		})
		out = append(out, nh)
		multipath = multipath[min((l+3)&^3, len(multipath)):]
	}
	return out, nil
}

// routeShown reports whether nmstate shows the route in routes.config
// (static/boot) or, with running set, in routes.running (also RA, DHCP
// and routing daemons). Kernel-made prefix routes are never shown. It
// reads only the message header's fields (type, scope, protocol), which
// dumpRoutes relies on to skip routes undecoded.
func routeShown(r kernelRoute, running bool) bool {
	switch r.typ {
	case unix.RTN_UNICAST, unix.RTN_BLACKHOLE, unix.RTN_UNREACHABLE, unix.RTN_PROHIBIT:
	default:
		return false
	}
	if r.scope != unix.RT_SCOPE_UNIVERSE && r.scope != unix.RT_SCOPE_LINK {
		return false
	}
	switch r.protocol {
	case unix.RTPROT_BOOT, unix.RTPROT_STATIC:
		return true
	case rtprotRA, rtprotDHCP, rtprotMrouted, rtprotKeepalived, rtprotBabel:
		return running
	}
	return false
}

var routeTypes = map[uint8]nmstate.RouteType{
	unix.RTN_BLACKHOLE:   "blackhole",
	unix.RTN_UNREACHABLE: "unreachable",
	unix.RTN_PROHIBIT:    "prohibit",
}

// kernelRouteToRoute converts one route (one next hop) for routes.config
// or routes.running. A special route type carries no next hop; a unicast
// route without gateway shows the unspecified address, as nmstate does.
func kernelRouteToRoute(r kernelRoute, v *linkView) nmstate.Route {
	out := nmstate.Route{
		Destination: ptr(r.dst),
		TableID:     ptr(r.table),
		Metric:      ptr(int64(r.metric)),
	}
	if t, ok := routeTypes[r.typ]; ok {
		out.RouteType = &t
	} else {
		if name := v.name(r.oif); name != "" {
			out.NextHopInterface = &name
		}
		gw := r.gw.Unmap()
		if !gw.IsValid() {
			gw = netip.IPv4Unspecified()
			if r.family == unix.AF_INET6 {
				gw = netip.IPv6Unspecified()
			}
		}
		out.NextHopAddress = &gw
	}
	if r.src.IsValid() {
		out.Source = ptr(r.src.Unmap())
	}
	if r.cwndLocked && r.cwnd != 0 {
		out.Cwnd = ptr(r.cwnd)
	}
	if r.weight != 0 {
		out.Weight = ptr(r.weight)
	}
	if r.mtu != 0 {
		out.MTU, out.LockMTU = ptr(r.mtu), ptr(r.mtuLocked)
	}
	if r.advmss != 0 {
		out.AdvMSS = ptr(r.advmss)
	}
	if r.initcwnd != 0 {
		out.InitCwnd = ptr(r.initcwnd)
	}
	if r.initrwnd != 0 {
		out.InitRwnd = ptr(r.initrwnd)
	}
	if r.quickack {
		out.QuickACK = ptr(true)
	}
	return out
}

// routeRequest builds RTM_NEWROUTE (replace) or RTM_DELROUTE for a route.
// Routes are installed with protocol static so they read back as config.
// For deletion, unset fields match anything (scope nowhere, protocol 0).
func (b *Backend) routeRequest(r nmstate.Route, del bool, ifindex func(string) (int, error)) (*nl.NetlinkRequest, error) {
	if r.Destination == nil {
		return nil, errors.New("route without destination")
	}
	dst := r.Destination.Masked()
	family := uint8(unix.AF_INET)
	if dst.Addr().Is6() {
		family = unix.AF_INET6
	}
	var req *nl.NetlinkRequest
	msg := nl.NewRtMsg()
	msg.Family = family
	msg.Dst_len = uint8(dst.Bits())
	if del {
		req = nl.NewNetlinkRequest(unix.RTM_DELROUTE, unix.NLM_F_ACK)
		msg.Scope = unix.RT_SCOPE_NOWHERE
		msg.Protocol = 0
		msg.Type = 0
	} else {
		req = nl.NewNetlinkRequest(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE|unix.NLM_F_ACK)
		msg.Protocol = unix.RTPROT_STATIC
		msg.Type = unix.RTN_UNICAST
		msg.Scope = unix.RT_SCOPE_UNIVERSE
	}
	table := uint32(unix.RT_TABLE_MAIN)
	if r.TableID != nil && *r.TableID != 0 {
		table = *r.TableID
	}
	if table < 256 {
		msg.Table = uint8(table)
	} else {
		msg.Table = unix.RT_TABLE_UNSPEC
	}
	special := r.RouteType != nil
	if special {
		switch *r.RouteType {
		case "blackhole":
			msg.Type = unix.RTN_BLACKHOLE
		case "unreachable":
			msg.Type = unix.RTN_UNREACHABLE
		case "prohibit":
			msg.Type = unix.RTN_PROHIBIT
		default:
			return nil, fmt.Errorf("unknown route type %q", *r.RouteType)
		}
	}
	hasGW := r.NextHopAddress != nil && r.NextHopAddress.IsValid() && !r.NextHopAddress.IsUnspecified()
	if !del && !special && !hasGW {
		msg.Scope = unix.RT_SCOPE_LINK
	}
	req.AddData(msg)
	if dst.Bits() > 0 || !dst.Addr().IsUnspecified() {
		req.AddData(nl.NewRtAttr(unix.RTA_DST, dst.Addr().AsSlice()))
	}
	req.AddData(nl.NewRtAttr(unix.RTA_TABLE, nl.Uint32Attr(table)))
	if !special && r.NextHopInterface != nil && *r.NextHopInterface != "" {
		idx, err := ifindex(*r.NextHopInterface)
		if err != nil {
			return nil, err
		}
		req.AddData(nl.NewRtAttr(unix.RTA_OIF, nl.Uint32Attr(uint32(idx))))
	}
	if hasGW && !special {
		gw := r.NextHopAddress.Unmap()
		if gw.Is4() != dst.Addr().Is4() {
			return nil, fmt.Errorf("next hop %s is not in the family of %s", gw, dst)
		}
		req.AddData(nl.NewRtAttr(unix.RTA_GATEWAY, gw.AsSlice()))
	}
	if r.Metric != nil && *r.Metric >= 0 {
		req.AddData(nl.NewRtAttr(unix.RTA_PRIORITY, nl.Uint32Attr(uint32(*r.Metric))))
	}
	if r.Source != nil && r.Source.IsValid() {
		req.AddData(nl.NewRtAttr(unix.RTA_PREFSRC, r.Source.Unmap().AsSlice()))
	}
	if !del {
		if m := routeMetrics(r); m != nil {
			req.AddData(m)
		}
	}
	return req, nil
}

// routeMetrics is the RTA_METRICS attribute of a route, nil when it sets
// none: cwnd always locked (nmstate's cwnd is the locked window), mtu
// locked with lock-mtu, advmss, initcwnd, initrwnd and quickack as given.
func routeMetrics(r nmstate.Route) *nl.RtAttr {
	var lock uint32
	type metric struct {
		typ int
		val uint32
	}
	var ms []metric
	if r.Cwnd != nil && *r.Cwnd != 0 {
		lock |= 1 << unix.RTAX_CWND
		ms = append(ms, metric{unix.RTAX_CWND, *r.Cwnd})
	}
	if r.MTU != nil && *r.MTU != 0 {
		if r.LockMTU != nil && *r.LockMTU {
			lock |= 1 << unix.RTAX_MTU
		}
		ms = append(ms, metric{unix.RTAX_MTU, *r.MTU})
	}
	for _, m := range []struct {
		typ int
		val *uint32
	}{{unix.RTAX_ADVMSS, r.AdvMSS}, {unix.RTAX_INITCWND, r.InitCwnd}, {unix.RTAX_INITRWND, r.InitRwnd}} {
		if m.val != nil && *m.val != 0 {
			ms = append(ms, metric{m.typ, *m.val})
		}
	}
	if r.QuickACK != nil && *r.QuickACK {
		ms = append(ms, metric{unix.RTAX_QUICKACK, 1})
	}
	if len(ms) == 0 {
		return nil
	}
	attr := nl.NewRtAttr(unix.RTA_METRICS, nil)
	if lock != 0 {
		attr.AddRtAttr(unix.RTAX_LOCK, nl.Uint32Attr(lock))
	}
	for _, m := range ms {
		attr.AddRtAttr(m.typ, nl.Uint32Attr(m.val))
	}
	return attr
}
