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
	// parentBus / parentDev name the device behind a NIC
	// (IFLA_PARENT_DEV_BUS_NAME / IFLA_PARENT_DEV_NAME, Linux 5.16+).
	parentBus, parentDev string
}

func (l *kernelLink) attrs() *netlink.LinkAttrs { return l.link.Attrs() }

// dumpLinks lists every link of the namespace in one RTM_GETLINK dump.
func (b *Backend) dumpLinks() ([]*kernelLink, error) {
	return dump("links", func() ([]*kernelLink, error) {
		msgs, err := b.rawRequest(linkDumpRequest(), unix.RTM_NEWLINK)
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

// rtextFilterSkipStats is RTEXT_FILTER_SKIP_STATS (include/uapi/linux/
// rtnetlink.h), which x/sys does not define: the dump leaves the link
// statistics out. Kernels before 4.5 ignore the bit.
const rtextFilterSkipStats = 1 << 3

// rtextFilterVF is RTEXT_FILTER_VF: the dump includes IFLA_NUM_VF and the
// VF list of SR-IOV physical functions (nothing for other links).
const rtextFilterVF = 1 << 0

// linkExtMask is the IFLA_EXT_MASK of every link read.
const linkExtMask = rtextFilterSkipStats | rtextFilterVF

// linkDumpRequest asks for every link, without the traffic counters:
// nothing here reports them (nmstate has no counters), and leaving them
// out spares the kernel summing them per link and the reader a third of
// each message.
func linkDumpRequest() *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_EXT_MASK, nl.Uint32Attr(linkExtMask)))
	return req
}

// dumpLinkObjects lists every link as the library's typed value alone,
// for the executor's name cache: without the attributes only Show reads.
func (b *Backend) dumpLinkObjects() ([]netlink.Link, error) {
	return dump("links", func() ([]netlink.Link, error) {
		msgs, err := b.rawRequest(linkDumpRequest(), unix.RTM_NEWLINK)
		out := make([]netlink.Link, 0, len(msgs))
		for _, m := range msgs {
			l, perr := netlink.LinkDeserialize(nil, m)
			if perr != nil {
				return nil, fmt.Errorf("decoding link message: %w", perr)
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
	err = walkAttrs(m[unix.SizeofIfInfomsg:], func(typ uint16, v []byte) {
		switch typ {
		case unix.IFLA_MIN_MTU:
			kl.minMTU = u32Ptr(v)
		case unix.IFLA_MAX_MTU:
			kl.maxMTU = u32Ptr(v)
		case unix.IFLA_LINKINFO:
			kl.parseLinkInfo(v)
		case unix.IFLA_AF_SPEC:
			kl.parseAFSpec(v)
		case unix.IFLA_PARENT_DEV_BUS_NAME:
			kl.parentBus = cString(v)
		case unix.IFLA_PARENT_DEV_NAME:
			kl.parentDev = cString(v)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("decoding link attributes: %w", err)
	}
	return kl, nil
}

func (kl *kernelLink) parseLinkInfo(b []byte) {
	_ = walkAttrs(b, func(typ uint16, v []byte) {
		switch typ {
		case unix.IFLA_INFO_KIND:
			kl.kind = cString(v)
		case unix.IFLA_INFO_SLAVE_KIND:
			kl.slaveKind = cString(v)
		case unix.IFLA_INFO_DATA:
			kl.data = attrMap(v)
		case unix.IFLA_INFO_SLAVE_DATA:
			kl.slaveData = attrMap(v)
		}
	})
}

func (kl *kernelLink) parseAFSpec(b []byte) {
	_ = walkAttrs(b, func(fam uint16, inner []byte) {
		_ = walkAttrs(inner, func(typ uint16, v []byte) {
			switch {
			case fam == unix.AF_INET6 && typ == unix.IFLA_INET6_CONF:
				kl.inet6 = make([]int32, len(v)/4)
				for i := range kl.inet6 {
					kl.inet6[i] = int32(nl.NativeEndian().Uint32(v[i*4:]))
				}
			case fam == unix.AF_INET && typ == unix.IFLA_INET_CONF:
				kl.inet = make([]uint32, len(v)/4)
				for i := range kl.inet {
					kl.inet[i] = nl.NativeEndian().Uint32(v[i*4:])
				}
			}
		})
	})
}

// attrMap indexes nested attributes by type (the nesting flag stripped).
func attrMap(b []byte) map[uint16][]byte {
	n, err := countAttrs(b)
	if err != nil {
		return nil
	}
	m := make(map[uint16][]byte, n)
	_ = walkAttrs(b, func(typ uint16, v []byte) { m[typ&^unix.NLA_F_NESTED] = v })
	return m
}

// walkAttrs calls f with the type and value of each attribute of the list
// b, in order, as nl.ParseRouteAttr would return them, without building
// the list: a link dump is parsed several times per apply, and those lists
// were most of its garbage. A malformed list is refused, as by
// ParseRouteAttr, before f sees any attribute.
func walkAttrs(b []byte, f func(typ uint16, v []byte)) error {
	if _, err := countAttrs(b); err != nil {
		return err
	}
	ne := nl.NativeEndian()
	for len(b) >= unix.SizeofRtAttr {
		n := int(ne.Uint16(b))
		f(ne.Uint16(b[2:]), b[unix.SizeofRtAttr:n])
		b = b[min(rtaAlign(n), len(b)):]
	}
	return nil
}

// countAttrs checks an attribute list as ParseRouteAttr does (every
// length at least a header and within the buffer) and counts it.
func countAttrs(b []byte) (int, error) {
	ne := nl.NativeEndian()
	count := 0
	for len(b) >= unix.SizeofRtAttr {
		n := int(ne.Uint16(b))
		if n < unix.SizeofRtAttr || n > len(b) {
			return 0, unix.EINVAL
		}
		count++
		b = b[min(rtaAlign(n), len(b)):]
	}
	return count, nil
}

func rtaAlign(n int) int { return (n + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1) }

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
