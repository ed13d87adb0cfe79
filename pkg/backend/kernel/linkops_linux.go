package kernel

import (
	"errors"
	"fmt"
	"net"
	"reflect"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// typeKinds maps the nmstate types this backend creates to the kernel's
// link kind (as netlink.Link.Type() reports it).
var typeKinds = map[nmstate.InterfaceType]string{
	nmstate.TypeVeth:        "veth",
	nmstate.TypeLinuxBridge: "bridge",
	nmstate.TypeBond:        "bond",
	nmstate.TypeVLAN:        "vlan",
	nmstate.TypeVXLAN:       "vxlan",
	nmstate.TypeMacVlan:     "macvlan",
	nmstate.TypeMacVtap:     "macvtap",
	nmstate.TypeIPVlan:      "ipvlan",
	nmstate.TypeDummy:       "dummy",
	nmstate.TypeVRF:         "vrf",
	nmstate.TypeTeam:        "team",
	nmstate.TypeHSR:         "hsr",
	nmstate.TypeMACsec:      "macsec",
}

// linkDelete deletes a virtual link; a link already gone is success.
// Links without a kind (NICs, loopback) are never deleted.
func (ex *executor) linkDelete(name string) error {
	l, ok, err := ex.links.lookup(name)
	if err != nil || !ok {
		return err
	}
	if l.Type() == "device" {
		return &kernelError{kind: nmstate.InvalidArgument, msg: name + " is not a virtual interface and cannot be deleted"}
	}
	err = ex.b.h.LinkDel(l)
	if err == nil || errors.Is(err, unix.ENODEV) {
		ex.links.deleted(l)
		return nil
	}
	return classify(err)
}

// linkCreate creates a virtual link, down, with its link-level settings
// and type options. A link of that name and kind that already exists is
// converged instead (settings applied), so a re-run plan succeeds.
func (ex *executor) linkCreate(ifc nmstate.Interface) error {
	// nmstate treats a veth as an ethernet: an ethernet with a peer is a
	// veth pair to create.
	if ifc.Type == nmstate.TypeEthernet && ifc.Veth != nil {
		ifc.Type = nmstate.TypeVeth
	}
	if existing, ok, err := ex.links.lookup(ifc.Name); err != nil {
		return err
	} else if ok {
		return ex.converge(ifc, existing)
	}
	if _, ok := typeKinds[ifc.Type]; !ok {
		return notSupported("creating interfaces of type %s is not supported by the kernel backend", ifc.Type)
	}
	if ifc.Type == nmstate.TypeHSR || ifc.Type == nmstate.TypeMACsec {
		add := ex.addHSR
		if ifc.Type == nmstate.TypeMACsec {
			add = ex.addMACsec
		}
		if err := add(ifc); err != nil {
			return linkCreateError(ifc.Name, ifc.Type, err)
		}
		rest := ifc
		rest.MACAddress, rest.HSR, rest.MACsec = nil, nil, nil
		if !hasLinkSettings(rest) {
			return nil
		}
		return ex.linkModify(rest)
	}
	l, err := ex.newLink(ifc)
	if err != nil {
		return err
	}
	if err := ex.b.linkAdd(l); err != nil {
		if errors.Is(err, unix.EEXIST) {
			// Made by someone else since the cache was read.
			if existing, ok, ferr := ex.links.fresh(ifc.Name); ferr == nil && ok {
				return ex.converge(ifc, existing)
			}
		}
		return linkCreateError(ifc.Name, ifc.Type, err)
	}
	if v, ok := l.(*netlink.Veth); ok {
		ex.links.created(v.PeerName)
	}
	// The library looked the new link's index up after creating it; a
	// veth made by addVeth is resolved on first use.
	ex.links.added(l)
	// MTU and MAC went with the create; the rest is set like a modify.
	// A link with nothing more to set is not looked up at all, so a plan
	// that creates many links resolves them later in one dump.
	rest := ifc
	rest.MTU, rest.MACAddress = nil, nil
	if !hasLinkSettings(rest) {
		return nil
	}
	return ex.linkModify(rest)
}

// linkAdd creates l. A plain veth pair goes through addVeth; everything
// else through the library.
func (b *Backend) linkAdd(l netlink.Link) error {
	if v, ok := l.(*netlink.Veth); ok && plainVeth(v) {
		return b.addVeth(v)
	}
	return b.h.LinkAdd(l)
}

// plainVeth reports whether v sets nothing but what addVeth encodes: the
// name, MTU and MAC of the first end and the peer's name (what newLink
// builds for a veth).
func plainVeth(v *netlink.Veth) bool {
	want := netlink.Veth{LinkAttrs: netlink.NewLinkAttrs(), PeerName: v.PeerName}
	want.Name, want.MTU, want.HardwareAddr = v.Name, v.MTU, v.HardwareAddr
	return reflect.DeepEqual(*v, want)
}

// addVeth creates a veth pair with the request the library's LinkAdd
// sends for a plain veth (so the pair comes out the same, down to the
// peer's transmit queue length of 0), without the library's read-back of
// the new link by name: that is one RTM_GETLINK per pair, where the link
// cache resolves every new link in one dump when a later operation first
// needs them. v's index stays 0 (the cache's "pending").
func (b *Backend) addVeth(v *netlink.Veth) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(v.Name)))
	if v.MTU > 0 {
		req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(v.MTU))))
	}
	if v.HardwareAddr != nil {
		req.AddData(nl.NewRtAttr(unix.IFLA_ADDRESS, []byte(v.HardwareAddr)))
	}
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("veth"))
	peer := info.AddRtAttr(nl.IFLA_INFO_DATA, nil).AddRtAttr(nl.VETH_INFO_PEER, nil)
	nl.NewIfInfomsgChild(peer, unix.AF_UNSPEC)
	peer.AddRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(v.PeerName))
	// The library sends the peer's queue length whenever it is not
	// negative, and a Veth's zero value is 0.
	peer.AddRtAttr(unix.IFLA_TXQLEN, nl.Uint32Attr(uint32(v.PeerTxQLen)))
	if v.MTU > 0 {
		peer.AddRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(v.MTU)))
	}
	req.AddData(info)
	_, err := b.rawRequest(req, 0)
	return err
}

// hasLinkSettings reports whether linkModify has anything to set (or
// refuse) for ifc.
func hasLinkSettings(ifc nmstate.Interface) bool {
	return ifc.MTU != nil || ifc.MACAddress != nil || ifc.AcceptAllMAC != nil || ifc.Description != nil || ifc.AltNames != nil ||
		ifc.Ethernet != nil || ifc.Ethtool != nil || ifc.IEEE8021X != nil || ifc.LLDP != nil || ifc.LinuxBridge != nil || ifc.LinkAggregation != nil ||
		ifc.VLAN != nil || ifc.MacVlan != nil || ifc.MacVtap != nil ||
		(ifc.VXLAN != nil && ifc.VXLAN.Learning != nil) || (ifc.IPVlan != nil && ifc.IPVlan.Mode != nil)
}

// converge applies ifc's settings to an existing link of the same name,
// which must be of ifc's kind.
func (ex *executor) converge(ifc nmstate.Interface, existing netlink.Link) error {
	if !kindMatches(ifc.Type, existing.Type()) {
		return &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("%s already exists with kind %s", ifc.Name, existing.Type())}
	}
	return ex.linkModify(ifc)
}

// kindMatches reports whether an existing link of kernel kind kind is an
// interface of type typ; an ethernet may be a NIC or a veth.
func kindMatches(typ nmstate.InterfaceType, kind string) bool {
	if typ == nmstate.TypeEthernet {
		return kind == "device" || kind == "veth"
	}
	return typeKinds[typ] == kind
}

// newLink converts an interface to the library's typed link for LinkAdd.
// Options the library cannot encode (bridge and bond options, macvlan
// flags) are set after creation by linkModify.
func (ex *executor) newLink(ifc nmstate.Interface) (netlink.Link, error) {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = ifc.Name
	if ifc.MTU != nil {
		attrs.MTU = int(*ifc.MTU)
	}
	if ifc.MACAddress != nil {
		attrs.HardwareAddr = net.HardwareAddr(ifc.MACAddress.Bytes())
	}
	if parent := ifc.Parent(); parent != "" {
		idx, err := ex.links.ifindex(parent)
		if err != nil {
			return nil, err
		}
		attrs.ParentIndex = idx
	}
	switch ifc.Type {
	case nmstate.TypeVeth:
		if ifc.Veth == nil || ifc.Veth.Peer == "" {
			return nil, &kernelError{kind: nmstate.InvalidArgument, msg: "veth " + ifc.Name + " needs a peer name"}
		}
		return &netlink.Veth{LinkAttrs: attrs, PeerName: ifc.Veth.Peer}, nil
	case nmstate.TypeLinuxBridge:
		return &netlink.Bridge{LinkAttrs: attrs}, nil
	case nmstate.TypeBond:
		bond := netlink.NewLinkBond(attrs)
		if ifc.LinkAggregation != nil && ifc.LinkAggregation.Mode != nil {
			bond.Mode = netlink.StringToBondMode(string(*ifc.LinkAggregation.Mode))
		}
		return bond, nil
	case nmstate.TypeVLAN:
		return newVLAN(attrs, ifc.VLAN)
	case nmstate.TypeVXLAN:
		return newVXLAN(attrs, ifc.VXLAN)
	case nmstate.TypeMacVlan:
		return &netlink.Macvlan{LinkAttrs: attrs, Mode: macvlanMode(ifc.MacVlan)}, nil
	case nmstate.TypeMacVtap:
		return &netlink.Macvtap{Macvlan: netlink.Macvlan{LinkAttrs: attrs, Mode: macvlanMode(ifc.MacVtap)}}, nil
	case nmstate.TypeIPVlan:
		return newIPVlan(attrs, ifc.IPVlan), nil
	case nmstate.TypeDummy:
		return &netlink.Dummy{LinkAttrs: attrs}, nil
	case nmstate.TypeVRF:
		if ifc.VRF == nil || ifc.VRF.RouteTableID == nil || *ifc.VRF.RouteTableID == 0 {
			return nil, &kernelError{kind: nmstate.InvalidArgument, msg: "vrf " + ifc.Name + " needs a non-zero route-table-id"}
		}
		return &netlink.Vrf{LinkAttrs: attrs, Table: *ifc.VRF.RouteTableID}, nil
	case nmstate.TypeTeam:
		// The team device only; its runner lives in teamd, which
		// nmstate 2.x dropped (validation refuses team documents).
		return &netlink.GenericLink{LinkAttrs: attrs, LinkType: "team"}, nil
	}
	return nil, notSupported("creating interfaces of type %s is not supported by the kernel backend", ifc.Type)
}

func newVLAN(attrs netlink.LinkAttrs, v *nmstate.VLAN) (netlink.Link, error) {
	if v == nil || v.ID == nil {
		return nil, &kernelError{kind: nmstate.InvalidArgument, msg: "vlan " + attrs.Name + " needs an id"}
	}
	out := &netlink.Vlan{LinkAttrs: attrs, VlanId: int(*v.ID), VlanProtocol: netlink.VLAN_PROTOCOL_8021Q}
	if v.Protocol != nil && *v.Protocol == "802.1ad" {
		out.VlanProtocol = netlink.VLAN_PROTOCOL_8021AD
	}
	out.ReorderHdr = v.ReorderHeaders
	out.LooseBinding = v.LooseBinding
	if v.RegistrationProtocol != nil {
		out.Gvrp = ptr(*v.RegistrationProtocol == "gvrp")
		out.Mvrp = ptr(*v.RegistrationProtocol == "mvrp")
	}
	return out, nil
}

// newVXLAN fills nmstate's defaults the kernel does not share: port 4789
// (the kernel's is 8472) and learning on.
func newVXLAN(attrs netlink.LinkAttrs, v *nmstate.VXLAN) (netlink.Link, error) {
	if v == nil || v.ID == nil {
		return nil, &kernelError{kind: nmstate.InvalidArgument, msg: "vxlan " + attrs.Name + " needs an id"}
	}
	out := &netlink.Vxlan{LinkAttrs: attrs, VxlanId: int(*v.ID), Port: 4789, Learning: true}
	out.VtepDevIndex, out.ParentIndex = attrs.ParentIndex, 0
	if v.DestinationPort != nil {
		out.Port = int(*v.DestinationPort)
	}
	if v.Learning != nil {
		out.Learning = *v.Learning
	}
	if v.Local != nil && v.Local.IsValid() {
		out.SrcAddr = net.IP(v.Local.Unmap().AsSlice())
	}
	if v.Remote != nil && v.Remote.IsValid() {
		out.Group = net.IP(v.Remote.Unmap().AsSlice())
	}
	return out, nil
}

// macvlanMode converts to the library's numbering (it maps to the
// kernel's bits itself); nmstate's default mode is vepa, as the kernel's.
func macvlanMode(m *nmstate.MacVlan) netlink.MacvlanMode {
	if m == nil || m.Mode == nil {
		return netlink.MACVLAN_MODE_DEFAULT
	}
	switch *m.Mode {
	case "private":
		return netlink.MACVLAN_MODE_PRIVATE
	case "vepa":
		return netlink.MACVLAN_MODE_VEPA
	case "bridge":
		return netlink.MACVLAN_MODE_BRIDGE
	case "passthru":
		return netlink.MACVLAN_MODE_PASSTHRU
	case "source":
		return netlink.MACVLAN_MODE_SOURCE
	}
	return netlink.MACVLAN_MODE_DEFAULT
}

func newIPVlan(attrs netlink.LinkAttrs, v *nmstate.IPVlan) netlink.Link {
	out := &netlink.IPVlan{LinkAttrs: attrs, Mode: netlink.IPVLAN_MODE_L3, Flag: netlink.IPVLAN_FLAG_BRIDGE}
	if v == nil {
		return out
	}
	if v.Mode != nil {
		switch *v.Mode {
		case "l2":
			out.Mode = netlink.IPVLAN_MODE_L2
		case "l3s":
			out.Mode = netlink.IPVLAN_MODE_L3S
		}
	}
	switch {
	case v.Private != nil && *v.Private:
		out.Flag = netlink.IPVLAN_FLAG_PRIVATE
	case v.VEPA != nil && *v.VEPA:
		out.Flag = netlink.IPVLAN_FLAG_VEPA
	}
	return out
}

// linkModify sets the given (non-nil) settable attributes of an existing
// link: MTU, MAC, promiscuous mode, alias, and the type options. Values
// compared with the current ones (MTU, MAC, alias, bond mode) are read
// fresh from the kernel; a link with nothing to set is only looked up.
func (ex *executor) linkModify(ifc nmstate.Interface) error {
	b := ex.b
	if e := ifc.Ethernet; e != nil && (e.AutoNegotiation != nil || e.Speed != nil || e.Duplex != nil) {
		if _, err := ex.links.mustLink(ifc.Name); err != nil {
			return err
		}
		return notSupported("%s: ethernet speed, duplex and auto-negotiation are not supported by the kernel backend", ifc.Name)
	}
	var (
		l   netlink.Link
		err error
	)
	if ifc.MTU != nil || ifc.MACAddress != nil || ifc.Description != nil || ifc.LinkAggregation != nil || ifc.AltNames != nil {
		l, err = ex.links.freshLink(ifc.Name)
	} else {
		l, err = ex.links.mustLink(ifc.Name)
	}
	if err != nil {
		return err
	}
	a := l.Attrs()
	if ifc.MTU != nil && uint64(a.MTU) != *ifc.MTU {
		if err := b.h.LinkSetMTU(l, int(*ifc.MTU)); err != nil {
			return classify(err)
		}
	}
	if ifc.MACAddress != nil && macText(a.HardwareAddr) != *ifc.MACAddress {
		if err := b.h.LinkSetHardwareAddr(l, net.HardwareAddr(ifc.MACAddress.Bytes())); err != nil {
			return classify(err)
		}
	}
	if ifc.AcceptAllMAC != nil {
		set := b.h.SetPromiscOff
		if *ifc.AcceptAllMAC {
			set = b.h.SetPromiscOn
		}
		if err := set(l); err != nil {
			return classify(err)
		}
	}
	if ifc.Description != nil && a.Alias != *ifc.Description {
		if err := b.h.LinkSetAlias(l, *ifc.Description); err != nil {
			return classify(err)
		}
	}
	if ifc.AltNames != nil {
		if err := b.setAltNames(l, *ifc.AltNames); err != nil {
			return err
		}
	}
	if e := ifc.Ethtool; e != nil && (e.Pause != nil || len(e.Feature) > 0 || e.Coalesce != nil || e.Ring != nil) {
		if err := b.setEthtool(ifc.Name, a.Index, e); err != nil {
			return err
		}
	}
	if ifc.IEEE8021X != nil {
		if err := b.setIEEE8021X(ifc.Name, ifc.IEEE8021X); err != nil {
			return err
		}
	}
	if ifc.LLDP != nil && ifc.LLDP.Enabled != nil {
		if err := b.setLLDP(ifc.Name, *ifc.LLDP.Enabled); err != nil {
			return err
		}
	}
	if ifc.Ethernet != nil && ifc.Ethernet.SRIOV != nil {
		if err := ex.setSRIOV(l, ifc.Ethernet.SRIOV); err != nil {
			return err
		}
	}
	switch {
	case ifc.LinuxBridge != nil:
		return b.setBridgeOptions(l, ifc.LinuxBridge)
	case ifc.LinkAggregation != nil:
		return ex.setBondOptions(l, ifc.LinkAggregation)
	case ifc.VLAN != nil:
		return b.changeLink(l, "vlan", vlanFlagAttrs(ifc.VLAN))
	case ifc.MacVlan != nil:
		return b.changeLink(l, "macvlan", macvlanAttrs(ifc.MacVlan))
	case ifc.MacVtap != nil:
		return b.changeLink(l, "macvtap", macvlanAttrs(ifc.MacVtap))
	case ifc.VXLAN != nil && ifc.VXLAN.Learning != nil:
		return b.changeLink(l, "vxlan", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_VXLAN_LEARNING, boolAttr(*ifc.VXLAN.Learning))})
	case ifc.IPVlan != nil && ifc.IPVlan.Mode != nil:
		mode := newIPVlan(netlink.LinkAttrs{}, ifc.IPVlan).(*netlink.IPVlan).Mode
		return b.changeLink(l, "ipvlan", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IPVLAN_MODE, nl.Uint16Attr(uint16(mode)))})
	}
	return nil
}

// changeLink sends IFLA_INFO_DATA attributes for an existing link of kind
// kind (RTM_NEWLINK without NLM_F_CREATE: the kernel's changelink).
func (b *Backend) changeLink(l netlink.Link, kind string, data []*nl.RtAttr) error {
	if len(data) == 0 {
		return nil
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(l.Attrs().Index)
	req.AddData(msg)
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated(kind))
	d := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	for _, a := range data {
		d.AddChild(a)
	}
	req.AddData(info)
	_, err := b.rawRequest(req, 0)
	return classify(err)
}

func boolAttr(v bool) []byte {
	if v {
		return []byte{1}
	}
	return []byte{0}
}

func vlanFlagAttrs(v *nmstate.VLAN) []*nl.RtAttr {
	var flags, mask uint32
	set := func(bit uint32, on *bool) {
		if on != nil {
			mask |= bit
			if *on {
				flags |= bit
			}
		}
	}
	set(vlanFlagReorderHdr, v.ReorderHeaders)
	set(vlanFlagLooseBinding, v.LooseBinding)
	if v.RegistrationProtocol != nil {
		set(vlanFlagGVRP, ptr(*v.RegistrationProtocol == "gvrp"))
		set(vlanFlagMVRP, ptr(*v.RegistrationProtocol == "mvrp"))
	}
	if mask == 0 {
		return nil
	}
	b := make([]byte, 8)
	nl.NativeEndian().PutUint32(b, flags)
	nl.NativeEndian().PutUint32(b[4:], mask)
	return []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_VLAN_FLAGS, b)}
}

func macvlanAttrs(m *nmstate.MacVlan) []*nl.RtAttr {
	var out []*nl.RtAttr
	if m.Mode != nil {
		for bit, name := range macvlanModes {
			if name == *m.Mode {
				out = append(out, nl.NewRtAttr(unix.IFLA_MACVLAN_MODE, nl.Uint32Attr(bit)))
			}
		}
	}
	if m.Promiscuous != nil {
		var flags uint16
		if !*m.Promiscuous {
			flags = macvlanFlagNoPromisc
		}
		out = append(out, nl.NewRtAttr(unix.IFLA_MACVLAN_FLAGS, nl.Uint16Attr(flags)))
	}
	return out
}

// linkSetController attaches a link to a controller or releases it.
// Bonding and team refuse ports that are up, so a port is taken down
// first. The controller and up state are read fresh where they decide
// anything; attaching to a bridge or vrf needs no read, since the kernel
// accepts setting the controller a link already has.
func (ex *executor) linkSetController(name, controller string) error {
	b := ex.b
	if controller == "" {
		if _, ok, err := ex.links.lookup(name); err != nil || !ok {
			return err
		}
		l, ok, err := ex.links.fresh(name)
		if err != nil || !ok || l.Attrs().MasterIndex == 0 {
			return err
		}
		err = b.h.LinkSetNoMaster(l)
		if errors.Is(err, unix.ENODEV) {
			return nil
		}
		return classify(err)
	}
	l, err := ex.links.mustLink(name)
	if err != nil {
		return err
	}
	m, err := ex.links.mustLink(controller)
	if err != nil {
		return err
	}
	if m.Type() == "bond" || m.Type() == "team" {
		if l, err = ex.links.freshLink(name); err != nil {
			return err
		}
		if l.Attrs().MasterIndex == m.Attrs().Index {
			return ex.attachedToBond(name, controller, l)
		}
		if l.Attrs().RawFlags&unix.IFF_UP != 0 {
			if err := b.h.LinkSetDown(l); err != nil {
				return classify(err)
			}
		}
	}
	if err := b.h.LinkSetMaster(l, m); err != nil {
		return classify(err)
	}
	return ex.attachedToBond(name, controller, l)
}

// setAltNames makes the link's alternative names the target set: names
// not in it are removed first (a name may move between links), then the
// missing ones are added.
func (b *Backend) setAltNames(l netlink.Link, target []nmstate.AltName) error {
	want := map[string]bool{}
	for _, a := range target {
		if !a.IsAbsent() {
			want[a.Name] = true
		}
	}
	have := map[string]bool{}
	for _, n := range l.Attrs().AltNames {
		have[n] = true
		if !want[n] {
			if err := b.h.LinkDelAltName(l, n); err != nil {
				return fmt.Errorf("removing alternative name %s of %s: %w", n, l.Attrs().Name, classify(err))
			}
		}
	}
	for _, a := range target {
		if want[a.Name] && !have[a.Name] {
			if err := b.h.LinkAddAltName(l, a.Name); err != nil {
				return fmt.Errorf("adding alternative name %s to %s: %w", a.Name, l.Attrs().Name, classify(err))
			}
		}
	}
	return nil
}
