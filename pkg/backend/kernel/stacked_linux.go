package kernel

import (
	"net/netip"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Conversions of the link kinds stacked on a base interface (vlan, vxlan,
// macvlan/macvtap, ipvlan) and of vrf and tun.

// VLAN flags (IFLA_VLAN_FLAGS, include/uapi/linux/if_vlan.h).
const (
	vlanFlagReorderHdr   = 0x1
	vlanFlagGVRP         = 0x2
	vlanFlagLooseBinding = 0x4
	vlanFlagMVRP         = 0x8
)

// macvlanFlagNoPromisc is MACVLAN_FLAG_NOPROMISC.
const macvlanFlagNoPromisc = 1

// macvlanModes maps the kernel's IFLA_MACVLAN_MODE bits (enum
// macvlan_mode; the library's MacvlanMode is a different numbering).
var macvlanModes = map[uint32]nmstate.MacVlanMode{
	1:  "private",
	2:  "vepa",
	4:  "bridge",
	8:  "passthru",
	16: "source",
}

var ipvlanModes = map[netlink.IPVlanMode]nmstate.IPVlanMode{
	netlink.IPVLAN_MODE_L2:  "l2",
	netlink.IPVLAN_MODE_L3:  "l3",
	netlink.IPVLAN_MODE_L3S: "l3s",
}

func (v *linkView) base(kl *kernelLink) *string {
	if name := v.name(kl.attrs().ParentIndex); name != "" {
		return &name
	}
	return nil
}

func vlanSection(kl *kernelLink, v *linkView) *nmstate.VLAN {
	out := &nmstate.VLAN{BaseIface: v.base(kl)}
	if vl, ok := kl.link.(*netlink.Vlan); ok {
		out.ID = ptr(uint16(vl.VlanId))
		switch vl.VlanProtocol {
		case netlink.VLAN_PROTOCOL_8021AD:
			out.Protocol = ptr(nmstate.VLANProto("802.1ad"))
		default:
			out.Protocol = ptr(nmstate.VLANProto("802.1q"))
		}
	}
	// struct ifla_vlan_flags { __u32 flags; __u32 mask; }
	if f := attrU32(kl.data, unix.IFLA_VLAN_FLAGS); f != nil {
		out.ReorderHeaders = ptr(*f&vlanFlagReorderHdr != 0)
		out.LooseBinding = ptr(*f&vlanFlagLooseBinding != 0)
		reg := nmstate.VLANRegistration("none")
		switch {
		case *f&vlanFlagGVRP != 0:
			reg = "gvrp"
		case *f&vlanFlagMVRP != 0:
			reg = "mvrp"
		}
		out.RegistrationProtocol = &reg
	}
	return out
}

func vxlanSection(kl *kernelLink, v *linkView) *nmstate.VXLAN {
	vx, ok := kl.link.(*netlink.Vxlan)
	if !ok {
		return nil
	}
	out := &nmstate.VXLAN{
		ID:              ptr(uint32(vx.VxlanId)),
		DestinationPort: ptr(uint16(vx.Port)),
		Learning:        ptr(vx.Learning),
	}
	if vx.VtepDevIndex != 0 {
		if name := v.name(vx.VtepDevIndex); name != "" {
			out.BaseIface = &name
		}
	}
	if a, ok := netip.AddrFromSlice(vx.SrcAddr); ok && !a.Unmap().IsUnspecified() {
		out.Local = ptr(a.Unmap())
	}
	if a, ok := netip.AddrFromSlice(vx.Group); ok && !a.Unmap().IsUnspecified() {
		out.Remote = ptr(a.Unmap())
	}
	return out
}

func macvlanSection(kl *kernelLink, v *linkView) *nmstate.MacVlan {
	out := &nmstate.MacVlan{BaseIface: v.base(kl)}
	if m := attrU32(kl.data, unix.IFLA_MACVLAN_MODE); m != nil {
		if mode, ok := macvlanModes[*m]; ok {
			out.Mode = &mode
		} else {
			out.Mode = ptr(nmstate.MacVlanMode("unknown"))
		}
	}
	flags := attrU16(kl.data, unix.IFLA_MACVLAN_FLAGS)
	out.Promiscuous = ptr(flags == nil || *flags&macvlanFlagNoPromisc == 0)
	return out
}

func ipvlanSection(kl *kernelLink, v *linkView) *nmstate.IPVlan {
	out := &nmstate.IPVlan{BaseIface: v.base(kl)}
	if iv, ok := kl.link.(*netlink.IPVlan); ok {
		if mode, ok := ipvlanModes[iv.Mode]; ok {
			out.Mode = &mode
		}
		out.Private = ptr(iv.Flag == netlink.IPVLAN_FLAG_PRIVATE)
		out.VEPA = ptr(iv.Flag == netlink.IPVLAN_FLAG_VEPA)
	}
	return out
}

func vrfSection(kl *kernelLink, v *linkView) *nmstate.VRF {
	out := &nmstate.VRF{Port: v.portNames(kl.attrs().Index)}
	out.RouteTableID = attrU32(kl.data, unix.IFLA_VRF_TABLE)
	return out
}

// tunSection reports tun/tap settings; owner and group are omitted when
// unset (the kernel reports -1).
func tunSection(kl *kernelLink) *nmstate.Tun {
	t, ok := kl.link.(*netlink.Tuntap)
	if !ok {
		return nil
	}
	out := &nmstate.Tun{
		PI:         ptr(t.Flags&netlink.TUNTAP_NO_PI == 0),
		VnetHdr:    ptr(t.Flags&netlink.TUNTAP_VNET_HDR != 0),
		MultiQueue: ptr(t.Flags&netlink.TUNTAP_MULTI_QUEUE != 0),
		Persist:    ptr(!t.NonPersist),
	}
	switch t.Mode {
	case netlink.TUNTAP_MODE_TUN:
		out.Mode = ptr("tun")
	case netlink.TUNTAP_MODE_TAP:
		out.Mode = ptr("tap")
	}
	if t.Owner != ^uint32(0) {
		out.Owner = ptr(t.Owner)
	}
	if t.Group != ^uint32(0) {
		out.Group = ptr(t.Group)
	}
	return out
}
