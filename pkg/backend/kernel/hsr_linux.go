package kernel

import (
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// HSR and PRP links (net/hsr). The library has no typed hsr link, so they
// are created with a raw RTM_NEWLINK and read from IFLA_INFO_DATA. The
// kernel has no changelink for hsr: a changed hsr section is a re-create,
// which the planner already orders.

// hsrProtocolPRP is HSR_PROTOCOL_PRP (include/uapi/linux/if_link.h).
const hsrProtocolPRP = 1

// addHSR creates an hsr (or prp) link over its two ports.
func (ex *executor) addHSR(ifc nmstate.Interface) error {
	c := ifc.HSR
	if c == nil || c.Port1 == nil || c.Port2 == nil {
		return &kernelError{kind: nmstate.InvalidArgument, msg: "hsr " + ifc.Name + " needs port1 and port2"}
	}
	p1, err := ex.links.ifindex(*c.Port1)
	if err != nil {
		return err
	}
	p2, err := ex.links.ifindex(*c.Port2)
	if err != nil {
		return err
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(ifc.Name)))
	if ifc.MACAddress != nil {
		req.AddData(nl.NewRtAttr(unix.IFLA_ADDRESS, ifc.MACAddress.Bytes()))
	}
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("hsr"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(unix.IFLA_HSR_SLAVE1, nl.Uint32Attr(uint32(p1)))
	data.AddRtAttr(unix.IFLA_HSR_SLAVE2, nl.Uint32Attr(uint32(p2)))
	if c.MulticastSpec != nil {
		data.AddRtAttr(unix.IFLA_HSR_MULTICAST_SPEC, []byte{*c.MulticastSpec})
	}
	if c.Protocol != nil && *c.Protocol == "prp" {
		data.AddRtAttr(unix.IFLA_HSR_PROTOCOL, []byte{hsrProtocolPRP})
	}
	req.AddData(info)
	if _, err := ex.b.rawRequest(req, 0); err != nil {
		return err
	}
	ex.links.added(&netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: ifc.Name}, LinkType: "hsr"})
	return nil
}

// hsrSection reads an hsr link's ports, protocol and supervision address.
// The kernel reports the multicast spec only as the supervision address's
// last byte (IFLA_HSR_MULTICAST_SPEC is write-only), which is how nmstate
// reports it too.
func hsrSection(kl *kernelLink, v *linkView) *nmstate.HSR {
	out := &nmstate.HSR{Protocol: ptr(nmstate.HSRProtocol("hsr"))}
	port := func(t uint16) *string {
		if i := attrU32(kl.data, t); i != nil {
			if name := v.name(int(*i)); name != "" {
				return &name
			}
		}
		return nil
	}
	out.Port1, out.Port2 = port(unix.IFLA_HSR_SLAVE1), port(unix.IFLA_HSR_SLAVE2)
	if a := kl.data[unix.IFLA_HSR_SUPERVISION_ADDR]; len(a) == 6 {
		mac := macText(a)
		out.SupervisionAddress = &mac
		out.MulticastSpec = ptr(a[5])
	}
	if p := attrU8(kl.data, unix.IFLA_HSR_PROTOCOL); p != nil && *p == hsrProtocolPRP {
		out.Protocol = ptr(nmstate.HSRProtocol("prp"))
	}
	return out
}
