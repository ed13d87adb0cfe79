package kernel

import (
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"golang.org/x/sys/unix"
)

// kindTypes maps IFLA_INFO_KIND to the nmstate interface type. Kinds not
// listed are reported as `unknown`.
var kindTypes = map[string]nmstate.InterfaceType{
	"veth":    nmstate.TypeVeth,
	"bridge":  nmstate.TypeLinuxBridge,
	"bond":    nmstate.TypeBond,
	"vlan":    nmstate.TypeVLAN,
	"vxlan":   nmstate.TypeVXLAN,
	"macvlan": nmstate.TypeMacVlan,
	"macvtap": nmstate.TypeMacVtap,
	"ipvlan":  nmstate.TypeIPVlan,
	"dummy":   nmstate.TypeDummy,
	"vrf":     nmstate.TypeVRF,
	"tun":     nmstate.TypeTun,
	"xfrm":    nmstate.TypeXfrm,
	"hsr":     nmstate.TypeHSR,
	"macsec":  nmstate.TypeMACsec,
	"ipoib":   nmstate.TypeInfiniBand,
	"team":    nmstate.TypeTeam,
}

// linkType gives the nmstate type of a link.
func linkType(kl *kernelLink) nmstate.InterfaceType {
	if t, ok := kindTypes[kl.kind]; ok {
		return t
	}
	if kl.kind != "" {
		return nmstate.TypeUnknown
	}
	switch kl.attrs().EncapType {
	case "loopback":
		return nmstate.TypeLoopback
	case "ether":
		return nmstate.TypeEthernet
	}
	return nmstate.TypeUnknown
}

// linkView is what converting one link needs to know about the others.
type linkView struct {
	byIndex map[int]*kernelLink
	// ports lists the ports of each controller index, sorted by name.
	ports map[int][]*kernelLink
	// bridgeVLANs holds the bridge VLAN dump (ifindex → entries).
	bridgeVLANs map[int32][]bridgeVLANEntry
	// peerName resolves a veth peer in another namespace ("" = unknown).
	peerName func(netnsID, index int) string
}

func newLinkView(links []*kernelLink) *linkView {
	v := &linkView{byIndex: map[int]*kernelLink{}, ports: map[int][]*kernelLink{}}
	for _, kl := range links {
		v.byIndex[kl.attrs().Index] = kl
	}
	for _, kl := range links {
		if m := kl.attrs().MasterIndex; m != 0 {
			v.ports[m] = append(v.ports[m], kl)
		}
	}
	for _, p := range v.ports {
		sort.Slice(p, func(i, j int) bool { return p[i].attrs().Name < p[j].attrs().Name })
	}
	return v
}

// portNames lists the names of a controller's ports; never nil, so a
// controller without ports shows an empty list.
func (v *linkView) portNames(index int) []string {
	out := []string{}
	for _, p := range v.ports[index] {
		out = append(out, p.attrs().Name)
	}
	return out
}

func (v *linkView) name(index int) string {
	if kl, ok := v.byIndex[index]; ok {
		return kl.attrs().Name
	}
	return ""
}

// linkToInterface converts one link (without its IP configuration) into
// an nmstate interface.
func linkToInterface(kl *kernelLink, v *linkView) nmstate.Interface {
	a := kl.attrs()
	ifc := nmstate.Interface{
		Name:  a.Name,
		Type:  linkType(kl),
		State: nmstate.StateDown,
	}
	if a.RawFlags&unix.IFF_UP != 0 {
		ifc.State = nmstate.StateUp
	}
	ifc.MTU = ptr(uint64(a.MTU))
	if kl.minMTU != nil {
		ifc.MinMTU = ptr(uint64(*kl.minMTU))
	}
	if kl.maxMTU != nil {
		ifc.MaxMTU = ptr(uint64(*kl.maxMTU))
	}
	if len(a.HardwareAddr) > 0 {
		ifc.MACAddress = ptr(macText(a.HardwareAddr))
	}
	if len(a.PermHWAddr) > 0 {
		ifc.PermanentMACAddress = ptr(macText(a.PermHWAddr))
	}
	ifc.AcceptAllMAC = ptr(a.RawFlags&unix.IFF_PROMISC != 0)
	if a.Alias != "" {
		ifc.Description = ptr(a.Alias)
	}
	if len(a.AltNames) > 0 {
		names := slices.Sorted(slices.Values(a.AltNames))
		alt := make([]nmstate.AltName, len(names))
		for i, n := range names {
			alt[i] = nmstate.AltName{Name: n}
		}
		ifc.AltNames = &alt
	}
	if a.MasterIndex != 0 {
		if name := v.name(a.MasterIndex); name != "" {
			ifc.Controller = ptr(name)
		}
	}
	switch ifc.Type {
	case nmstate.TypeVeth:
		if peer := vethPeer(kl, v); peer != "" {
			ifc.Veth = &nmstate.Veth{Peer: peer}
		}
	case nmstate.TypeLinuxBridge:
		ifc.LinuxBridge = bridgeSection(kl, v)
	case nmstate.TypeBond:
		ifc.LinkAggregation = bondSection(kl, v)
	case nmstate.TypeVLAN:
		ifc.VLAN = vlanSection(kl, v)
	case nmstate.TypeVXLAN:
		ifc.VXLAN = vxlanSection(kl, v)
	case nmstate.TypeMacVlan:
		ifc.MacVlan = macvlanSection(kl, v)
	case nmstate.TypeMacVtap:
		ifc.MacVtap = macvlanSection(kl, v)
	case nmstate.TypeIPVlan:
		ifc.IPVlan = ipvlanSection(kl, v)
	case nmstate.TypeVRF:
		ifc.VRF = vrfSection(kl, v)
	case nmstate.TypeTun:
		ifc.Tun = tunSection(kl)
	case nmstate.TypeHSR:
		ifc.HSR = hsrSection(kl, v)
	case nmstate.TypeMACsec:
		ifc.MACsec = macsecSection(kl, v)
	case nmstate.TypeTeam:
		ifc.Team = &nmstate.Team{Port: []nmstate.TeamPort{}}
		for _, p := range v.portNames(a.Index) {
			ifc.Team.Port = append(ifc.Team.Port, nmstate.TeamPort{Name: p})
		}
	}
	return ifc
}

// vethPeer names the other end of a veth pair: IFLA_LINK is the peer's
// index, in the namespace named by IFLA_LINK_NETNSID when that is present.
func vethPeer(kl *kernelLink, v *linkView) string {
	a := kl.attrs()
	if a.ParentIndex == 0 {
		return ""
	}
	if a.NetNsID < 0 {
		return v.name(a.ParentIndex)
	}
	if v.peerName == nil {
		return ""
	}
	return v.peerName(a.NetNsID, a.ParentIndex)
}

func macText(hw net.HardwareAddr) nmstate.MAC {
	return nmstate.MAC(strings.ToUpper(hw.String()))
}

func ptr[T any](v T) *T { return &v }
