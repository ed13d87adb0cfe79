package kernel

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Indexes into the IFLA_INET6_CONF array (enum DEVCONF_* in
// include/uapi/linux/ipv6.h); x/sys does not define them.
const (
	devconfForwarding   = 0
	devconfDisableIPv6  = 26
	inetDevconfForwards = 0 // IPV4_DEVCONF_FORWARDING - 1: the array is 0-based
)

// kernelLink is one link of a link dump: the library's typed view plus the
// raw attributes it does not parse.
type kernelLink struct {
	link netlink.Link
	// kind / slaveKind are IFLA_INFO_KIND / IFLA_INFO_SLAVE_KIND.
	kind, slaveKind string
	// data / slaveData are IFLA_INFO_DATA / IFLA_INFO_SLAVE_DATA by type.
	data, slaveData map[uint16][]byte
	minMTU, maxMTU  *uint32
	// inet6 holds the IPv6 devconf array; nil when the link has no IPv6
	// state at all.
	inet6 []int32
	// inet holds the IPv4 devconf array; nil without IPv4 state.
	inet []uint32
}

func (l *kernelLink) attrs() *netlink.LinkAttrs { return l.link.Attrs() }

// dumpLinks lists every link of the namespace in one RTM_GETLINK dump.
func (b *Backend) dumpLinks() ([]*kernelLink, error) {
	return dump("links", func() ([]*kernelLink, error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
		req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
		msgs, err := b.rawRequest(req, unix.RTM_NEWLINK)
		out := make([]*kernelLink, 0, len(msgs))
		for _, m := range msgs {
			l, perr := parseLinkMessage(m)
			if perr != nil {
				return nil, perr
			}
			out = append(out, l)
		}
		return out, err
	})
}

// parseLinkMessage decodes one RTM_NEWLINK payload.
func parseLinkMessage(m []byte) (*kernelLink, error) {
	link, err := netlink.LinkDeserialize(nil, m)
	if err != nil {
		return nil, fmt.Errorf("decoding link message: %w", err)
	}
	kl := &kernelLink{link: link}
	attrs, err := nl.ParseRouteAttr(m[unix.SizeofIfInfomsg:])
	if err != nil {
		return nil, fmt.Errorf("decoding link attributes: %w", err)
	}
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFLA_MIN_MTU:
			kl.minMTU = u32Ptr(a.Value)
		case unix.IFLA_MAX_MTU:
			kl.maxMTU = u32Ptr(a.Value)
		case unix.IFLA_LINKINFO:
			kl.parseLinkInfo(a.Value)
		case unix.IFLA_AF_SPEC:
			kl.parseAFSpec(a.Value)
		}
	}
	return kl, nil
}

func (kl *kernelLink) parseLinkInfo(b []byte) {
	attrs, err := nl.ParseRouteAttr(b)
	if err != nil {
		return
	}
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFLA_INFO_KIND:
			kl.kind = cString(a.Value)
		case unix.IFLA_INFO_SLAVE_KIND:
			kl.slaveKind = cString(a.Value)
		case unix.IFLA_INFO_DATA:
			kl.data = attrMap(a.Value)
		case unix.IFLA_INFO_SLAVE_DATA:
			kl.slaveData = attrMap(a.Value)
		}
	}
}

func (kl *kernelLink) parseAFSpec(b []byte) {
	attrs, err := nl.ParseRouteAttr(b)
	if err != nil {
		return
	}
	for _, fam := range attrs {
		inner, err := nl.ParseRouteAttr(fam.Value)
		if err != nil {
			continue
		}
		for _, a := range inner {
			switch {
			case fam.Attr.Type == unix.AF_INET6 && a.Attr.Type == unix.IFLA_INET6_CONF:
				kl.inet6 = make([]int32, len(a.Value)/4)
				for i := range kl.inet6 {
					kl.inet6[i] = int32(nl.NativeEndian().Uint32(a.Value[i*4:]))
				}
			case fam.Attr.Type == unix.AF_INET && a.Attr.Type == unix.IFLA_INET_CONF:
				kl.inet = make([]uint32, len(a.Value)/4)
				for i := range kl.inet {
					kl.inet[i] = nl.NativeEndian().Uint32(a.Value[i*4:])
				}
			}
		}
	}
}

// attrMap indexes nested attributes by type (the nesting flag stripped).
func attrMap(b []byte) map[uint16][]byte {
	attrs, err := nl.ParseRouteAttr(b)
	if err != nil {
		return nil
	}
	m := make(map[uint16][]byte, len(attrs))
	for _, a := range attrs {
		m[a.Attr.Type&^unix.NLA_F_NESTED] = a.Value
	}
	return m
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func u32Ptr(b []byte) *uint32 {
	if len(b) < 4 {
		return nil
	}
	v := nl.NativeEndian().Uint32(b)
	return &v
}

// Typed readers of an attribute map; each returns nil when the attribute
// is missing or short, so the caller reports nothing rather than a zero.

func attrU8(m map[uint16][]byte, t uint16) *uint8 {
	if v, ok := m[t]; ok && len(v) >= 1 {
		x := v[0]
		return &x
	}
	return nil
}

func attrBool(m map[uint16][]byte, t uint16) *bool {
	if v := attrU8(m, t); v != nil {
		x := *v != 0
		return &x
	}
	return nil
}

func attrU16(m map[uint16][]byte, t uint16) *uint16 {
	if v, ok := m[t]; ok && len(v) >= 2 {
		x := nl.NativeEndian().Uint16(v)
		return &x
	}
	return nil
}

// attrBE16 reads a network-byte-order 16-bit attribute (ethertypes).
func attrBE16(m map[uint16][]byte, t uint16) *uint16 {
	if v, ok := m[t]; ok && len(v) >= 2 {
		x := binary.BigEndian.Uint16(v)
		return &x
	}
	return nil
}

func attrU32(m map[uint16][]byte, t uint16) *uint32 {
	if v, ok := m[t]; ok {
		return u32Ptr(v)
	}
	return nil
}

func attrU64(m map[uint16][]byte, t uint16) *uint64 {
	if v, ok := m[t]; ok && len(v) >= 8 {
		x := nl.NativeEndian().Uint64(v)
		return &x
	}
	return nil
}
