package kernel

import (
	"errors"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

const (
	ethPVLAN   = 0x8100 // 802.1Q
	ethP8021AD = 0x88a8 // 802.1ad
	// userHZ is the unit of the kernel's clock_t bridge timers.
	userHZ = 100
)

// bridgeVLANEntry is one VLAN of a bridge port.
type bridgeVLANEntry struct {
	vid            uint16
	pvid, untagged bool
}

// bridgeSection converts a bridge's IFLA_BR_* attributes and its ports.
// Timers: the STP ones and mac-ageing-time are reported in seconds as
// nmstate does, the multicast ones in the kernel's centiseconds.
func bridgeSection(kl *kernelLink, v *linkView) *nmstate.LinuxBridge {
	d := kl.data
	o := &nmstate.LinuxBridgeOptions{
		GCTimer:                        attrU64(d, unix.IFLA_BR_GC_TIMER),
		GroupForwardMask:               attrU16(d, unix.IFLA_BR_GROUP_FWD_MASK),
		HashElasticity:                 attrU32(d, unix.IFLA_BR_MCAST_HASH_ELASTICITY),
		HashMax:                        attrU32(d, unix.IFLA_BR_MCAST_HASH_MAX),
		HelloTimer:                     attrU64(d, unix.IFLA_BR_HELLO_TIMER),
		MACAgeingTime:                  seconds32(attrU32(d, unix.IFLA_BR_AGEING_TIME)),
		MulticastLastMemberCount:       attrU32(d, unix.IFLA_BR_MCAST_LAST_MEMBER_CNT),
		MulticastLastMemberInterval:    attrU64(d, unix.IFLA_BR_MCAST_LAST_MEMBER_INTVL),
		MulticastMembershipInterval:    attrU64(d, unix.IFLA_BR_MCAST_MEMBERSHIP_INTVL),
		MulticastQuerier:               attrBool(d, unix.IFLA_BR_MCAST_QUERIER),
		MulticastQuerierInterval:       attrU64(d, unix.IFLA_BR_MCAST_QUERIER_INTVL),
		MulticastQueryInterval:         attrU64(d, unix.IFLA_BR_MCAST_QUERY_INTVL),
		MulticastQueryResponseInterval: attrU64(d, unix.IFLA_BR_MCAST_QUERY_RESPONSE_INTVL),
		MulticastQueryUseIfaddr:        attrBool(d, unix.IFLA_BR_MCAST_QUERY_USE_IFADDR),
		MulticastSnooping:              attrBool(d, unix.IFLA_BR_MCAST_SNOOPING),
		MulticastStartupQueryCount:     attrU32(d, unix.IFLA_BR_MCAST_STARTUP_QUERY_CNT),
		MulticastStartupQueryInterval:  attrU64(d, unix.IFLA_BR_MCAST_STARTUP_QUERY_INTVL),
		VlanDefaultPVID:                attrU16(d, unix.IFLA_BR_VLAN_DEFAULT_PVID),
	}
	if g, ok := d[unix.IFLA_BR_GROUP_ADDR]; ok && len(g) == 6 {
		o.GroupAddr = ptr(macText(g))
	}
	if r := attrU8(d, unix.IFLA_BR_MCAST_ROUTER); r != nil {
		switch *r {
		case 0:
			o.MulticastRouter = ptr(nmstate.BridgeMulticastRouter("disabled"))
		case 1:
			o.MulticastRouter = ptr(nmstate.BridgeMulticastRouter("auto"))
		case 2:
			o.MulticastRouter = ptr(nmstate.BridgeMulticastRouter("enabled"))
		}
	}
	if p := attrBE16(d, unix.IFLA_BR_VLAN_PROTOCOL); p != nil {
		switch *p {
		case ethPVLAN:
			o.VlanProtocol = ptr(nmstate.VLANProto("802.1q"))
		case ethP8021AD:
			o.VlanProtocol = ptr(nmstate.VLANProto("802.1ad"))
		}
	}
	stp := &nmstate.LinuxBridgeSTP{
		ForwardDelay: seconds8(attrU32(d, unix.IFLA_BR_FORWARD_DELAY)),
		HelloTime:    seconds8(attrU32(d, unix.IFLA_BR_HELLO_TIME)),
		MaxAge:       seconds8(attrU32(d, unix.IFLA_BR_MAX_AGE)),
		Priority:     attrU16(d, unix.IFLA_BR_PRIORITY),
	}
	if s := attrU32(d, unix.IFLA_BR_STP_STATE); s != nil {
		stp.Enabled = ptr(*s != 0)
	}
	o.STP = stp

	filtering := attrBool(d, unix.IFLA_BR_VLAN_FILTERING)
	br := &nmstate.LinuxBridge{Options: o, Port: []nmstate.LinuxBridgePort{}}
	for _, port := range v.ports[kl.attrs().Index] {
		bp := nmstate.LinuxBridgePort{Name: port.attrs().Name}
		if port.slaveKind == "bridge" {
			sd := port.slaveData
			bp.STPHairpinMode = attrBool(sd, unix.IFLA_BRPORT_MODE)
			bp.STPPathCost = attrU32(sd, unix.IFLA_BRPORT_COST)
			bp.STPPriority = attrU16(sd, unix.IFLA_BRPORT_PRIORITY)
			if filtering != nil && *filtering {
				bp.VLAN = portVLAN(v.bridgeVLANs[int32(port.attrs().Index)])
			}
		}
		br.Port = append(br.Port, bp)
	}
	return br
}

// portVLAN converts a port's VLAN entries: a single untagged PVID is an
// access port; anything else is a trunk whose untagged PVID (if any) is the
// native VLAN. Consecutive ids become ranges, as the kernel's compressed
// dump shows them.
func portVLAN(entries []bridgeVLANEntry) *nmstate.BridgeVLAN {
	if len(entries) == 0 {
		return nil
	}
	if len(entries) == 1 && entries[0].pvid && entries[0].untagged {
		return &nmstate.BridgeVLAN{Mode: ptr(nmstate.BridgeVLANMode("access")), Tag: ptr(entries[0].vid)}
	}
	out := &nmstate.BridgeVLAN{Mode: ptr(nmstate.BridgeVLANMode("trunk")), EnableNative: ptr(false), TrunkTags: []nmstate.TrunkTag{}}
	var ids []uint16
	for _, e := range entries {
		if e.pvid && e.untagged {
			out.EnableNative = ptr(true)
			out.Tag = ptr(e.vid)
			continue
		}
		ids = append(ids, e.vid)
	}
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			out.TrunkTags = append(out.TrunkTags, nmstate.TrunkTag{ID: ptr(ids[i])})
		} else {
			out.TrunkTags = append(out.TrunkTags, nmstate.TrunkTag{IDRange: &nmstate.VLANRange{Min: ids[i], Max: ids[j]}})
		}
		i = j + 1
	}
	return out
}

// dumpBridgeVLANs reads the per-port VLAN table of every bridge port.
func (b *Backend) dumpBridgeVLANs() (map[int32][]bridgeVLANEntry, error) {
	raw, err := dump("bridge vlans", b.h.BridgeVlanList)
	if err != nil {
		return nil, err
	}
	out := make(map[int32][]bridgeVLANEntry, len(raw))
	for idx, list := range raw {
		out[idx] = bridgeVLANEntries(list)
	}
	return out, nil
}

// bridgeVLANEntries converts the library's VLAN infos, expanding ranges.
func bridgeVLANEntries(list []*nl.BridgeVlanInfo) []bridgeVLANEntry {
	var out []bridgeVLANEntry
	var rangeStart uint16
	for _, vi := range list {
		e := bridgeVLANEntry{pvid: vi.PortVID(), untagged: vi.EngressUntag()}
		switch {
		case vi.Flags&nl.BRIDGE_VLAN_INFO_RANGE_BEGIN != 0:
			rangeStart = vi.Vid
			continue
		case vi.Flags&nl.BRIDGE_VLAN_INFO_RANGE_END != 0:
			for id := rangeStart; id <= vi.Vid && id != 0; id++ {
				e.vid = id
				out = append(out, e)
				if id == vi.Vid {
					break
				}
			}
		default:
			e.vid = vi.Vid
			out = append(out, e)
		}
	}
	return out
}

func seconds32(cs *uint32) *uint32 {
	if cs == nil {
		return nil
	}
	return ptr(*cs / userHZ)
}

func seconds8(cs *uint32) *uint8 {
	if cs == nil {
		return nil
	}
	return ptr(uint8(*cs / userHZ))
}

// bridgeOptionAttrs encodes the given bridge options as IFLA_BR_*
// attributes (seconds and the STP timers scaled to the kernel's clock_t).
func bridgeOptionAttrs(o *nmstate.LinuxBridgeOptions) []*nl.RtAttr {
	var out []*nl.RtAttr
	u8 := func(t int, v *bool) {
		if v != nil {
			out = append(out, nl.NewRtAttr(t, boolAttr(*v)))
		}
	}
	u16 := func(t int, v *uint16) {
		if v != nil {
			out = append(out, nl.NewRtAttr(t, nl.Uint16Attr(*v)))
		}
	}
	u32 := func(t int, v *uint32) {
		if v != nil {
			out = append(out, nl.NewRtAttr(t, nl.Uint32Attr(*v)))
		}
	}
	u64 := func(t int, v *uint64) {
		if v != nil {
			out = append(out, nl.NewRtAttr(t, nl.Uint64Attr(*v)))
		}
	}
	if o.STP != nil {
		s := o.STP
		for _, x := range []struct {
			t int
			v *uint8
		}{{unix.IFLA_BR_FORWARD_DELAY, s.ForwardDelay}, {unix.IFLA_BR_HELLO_TIME, s.HelloTime}, {unix.IFLA_BR_MAX_AGE, s.MaxAge}} {
			if x.v != nil {
				out = append(out, nl.NewRtAttr(x.t, nl.Uint32Attr(uint32(*x.v)*userHZ)))
			}
		}
		if s.Enabled != nil {
			state := uint32(0)
			if *s.Enabled {
				state = 1
			}
			out = append(out, nl.NewRtAttr(unix.IFLA_BR_STP_STATE, nl.Uint32Attr(state)))
		}
		u16(unix.IFLA_BR_PRIORITY, s.Priority)
	}
	if o.MACAgeingTime != nil {
		out = append(out, nl.NewRtAttr(unix.IFLA_BR_AGEING_TIME, nl.Uint32Attr(*o.MACAgeingTime*userHZ)))
	}
	u16(unix.IFLA_BR_GROUP_FWD_MASK, o.GroupForwardMask)
	if o.GroupAddr != nil {
		out = append(out, nl.NewRtAttr(unix.IFLA_BR_GROUP_ADDR, o.GroupAddr.Bytes()))
	}
	if o.MulticastRouter != nil {
		v := map[nmstate.BridgeMulticastRouter]uint8{"disabled": 0, "auto": 1, "enabled": 2}[*o.MulticastRouter]
		out = append(out, nl.NewRtAttr(unix.IFLA_BR_MCAST_ROUTER, []byte{v}))
	}
	u8(unix.IFLA_BR_MCAST_SNOOPING, o.MulticastSnooping)
	u8(unix.IFLA_BR_MCAST_QUERY_USE_IFADDR, o.MulticastQueryUseIfaddr)
	u8(unix.IFLA_BR_MCAST_QUERIER, o.MulticastQuerier)
	u32(unix.IFLA_BR_MCAST_HASH_ELASTICITY, o.HashElasticity)
	u32(unix.IFLA_BR_MCAST_HASH_MAX, o.HashMax)
	u32(unix.IFLA_BR_MCAST_LAST_MEMBER_CNT, o.MulticastLastMemberCount)
	u32(unix.IFLA_BR_MCAST_STARTUP_QUERY_CNT, o.MulticastStartupQueryCount)
	u64(unix.IFLA_BR_MCAST_LAST_MEMBER_INTVL, o.MulticastLastMemberInterval)
	u64(unix.IFLA_BR_MCAST_MEMBERSHIP_INTVL, o.MulticastMembershipInterval)
	u64(unix.IFLA_BR_MCAST_QUERIER_INTVL, o.MulticastQuerierInterval)
	u64(unix.IFLA_BR_MCAST_QUERY_INTVL, o.MulticastQueryInterval)
	u64(unix.IFLA_BR_MCAST_QUERY_RESPONSE_INTVL, o.MulticastQueryResponseInterval)
	u64(unix.IFLA_BR_MCAST_STARTUP_QUERY_INTVL, o.MulticastStartupQueryInterval)
	return out
}

// bridgeVLANOptionAttrs encodes the options that need bridge VLAN
// filtering in the kernel; filtering turns vlan_filtering on.
func bridgeVLANOptionAttrs(o *nmstate.LinuxBridgeOptions, filtering bool) []*nl.RtAttr {
	var out []*nl.RtAttr
	if filtering {
		out = append(out, nl.NewRtAttr(unix.IFLA_BR_VLAN_FILTERING, []byte{1}))
	}
	if o == nil {
		return out
	}
	if o.VlanProtocol != nil {
		proto := uint16(ethPVLAN)
		if *o.VlanProtocol == "802.1ad" {
			proto = ethP8021AD
		}
		out = append(out, nl.NewRtAttr(unix.IFLA_BR_VLAN_PROTOCOL, []byte{byte(proto >> 8), byte(proto)}))
	}
	if o.VlanDefaultPVID != nil {
		out = append(out, nl.NewRtAttr(unix.IFLA_BR_VLAN_DEFAULT_PVID, nl.Uint16Attr(*o.VlanDefaultPVID)))
	}
	return out
}

// setBridgeOptions applies a bridge section's options; VLAN filtering is
// switched on when a port carries VLAN configuration.
func (b *Backend) setBridgeOptions(l netlink.Link, br *nmstate.LinuxBridge) error {
	filtering := false
	for _, p := range br.Port {
		filtering = filtering || !p.VLAN.IsEmpty()
	}
	if br.Options != nil {
		if err := b.changeLink(l, "bridge", bridgeOptionAttrs(br.Options)); err != nil {
			return err
		}
	}
	if err := b.changeLink(l, "bridge", bridgeVLANOptionAttrs(br.Options, filtering)); err != nil {
		return vlanFilteringError(l.Attrs().Name, err)
	}
	return nil
}

// bridgePortSet sets a port's STP cost, priority and hairpin mode through
// its bridge protinfo (RTM_SETLINK, AF_BRIDGE), as `bridge link set` does.
func (ex *executor) bridgePortSet(bridge string, port nmstate.LinuxBridgePort) error {
	b := ex.b
	l, err := ex.links.mustLink(port.Name)
	if err != nil {
		return err
	}
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_BRIDGE)
	msg.Index = int32(l.Attrs().Index)
	req.AddData(msg)
	info := nl.NewRtAttr(unix.IFLA_PROTINFO|unix.NLA_F_NESTED, nil)
	n := 0
	if port.STPPriority != nil {
		info.AddRtAttr(unix.IFLA_BRPORT_PRIORITY, nl.Uint16Attr(*port.STPPriority))
		n++
	}
	if port.STPPathCost != nil {
		info.AddRtAttr(unix.IFLA_BRPORT_COST, nl.Uint32Attr(*port.STPPathCost))
		n++
	}
	if port.STPHairpinMode != nil {
		info.AddRtAttr(unix.IFLA_BRPORT_MODE, boolAttr(*port.STPHairpinMode))
		n++
	}
	if n == 0 {
		return nil
	}
	req.AddData(info)
	_, err = b.rawRequest(req, 0)
	return classify(err)
}

// bridgeVLANSet replaces a port's VLAN membership: VLANs not wanted are
// removed, wanted ones added (adding an existing VLAN updates its flags).
// nil restores the bridge's default PVID, untagged.
// The bridge is read fresh: its default PVID may have changed.
func (ex *executor) bridgeVLANSet(bridge, name string, vlan *nmstate.BridgeVLAN) error {
	b := ex.b
	br, err := ex.links.freshLink(bridge)
	if err != nil {
		return err
	}
	if err := b.changeLink(br, "bridge", bridgeVLANOptionAttrs(nil, true)); err != nil {
		return vlanFilteringError(bridge, err)
	}
	port, err := ex.links.mustLink(name)
	if err != nil {
		return err
	}
	want, err := b.wantedVLANs(br, vlan)
	if err != nil {
		return err
	}
	all, err := b.dumpBridgeVLANs()
	if err != nil {
		return classify(err)
	}
	wanted := map[uint16]bool{}
	for _, e := range want {
		wanted[e.vid] = true
	}
	var unwanted []bridgeVLANEntry
	for _, e := range all[int32(port.Attrs().Index)] {
		if !wanted[e.vid] {
			unwanted = append(unwanted, bridgeVLANEntry{vid: e.vid})
		}
	}
	// Ranges: the default trunk is 4093 VLANs, one request each is
	// thousands of round trips (tens of seconds in a TCG guest).
	// (The kernel refuses a range of one id.)
	for _, r := range vlanRuns(unwanted) {
		var err error
		if r.from == r.to {
			err = b.h.BridgeVlanDel(port, r.from, false, false, false, false)
		} else {
			err = b.h.BridgeVlanDelRange(port, r.from, r.to, false, false, false, false)
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return vlanFilteringError(bridge, err)
		}
	}
	for _, r := range vlanRuns(want) {
		var err error
		if r.from == r.to {
			err = b.h.BridgeVlanAdd(port, r.from, r.pvid, r.untagged, false, false)
		} else {
			err = b.h.BridgeVlanAddRange(port, r.from, r.to, r.pvid, r.untagged, false, false)
		}
		if err != nil {
			return vlanFilteringError(bridge, err)
		}
	}
	return nil
}

// vlanRun is consecutive VLAN ids with the same flags.
type vlanRun struct {
	from, to       uint16
	pvid, untagged bool
}

// vlanRuns groups entries, in order, into runs of consecutive ids with the
// same flags; a PVID entry is a run of its own (a range cannot carry it).
func vlanRuns(entries []bridgeVLANEntry) []vlanRun {
	var out []vlanRun
	for _, e := range entries {
		if n := len(out); n > 0 && !e.pvid && !out[n-1].pvid && out[n-1].untagged == e.untagged && out[n-1].to+1 == e.vid {
			out[n-1].to = e.vid
			continue
		}
		out = append(out, vlanRun{from: e.vid, to: e.vid, pvid: e.pvid, untagged: e.untagged})
	}
	return out
}

// wantedVLANs expands a port VLAN configuration to its VLAN entries. A
// port without one (nil or `vlan: {}`) has the bridge's default PVID,
// untagged; so has a trunk port whose enable-native is not set, unless a
// trunk tag is that VLAN (NetworkManager's bridge.vlan-default-pvid:
// kubernetes-nmstate's default trunk is "PVID 1 untagged, 2-4094 tagged").
func (b *Backend) wantedVLANs(br netlink.Link, vlan *nmstate.BridgeVLAN) ([]bridgeVLANEntry, error) {
	defaultPVID := uint16(1)
	if x, ok := br.(*netlink.Bridge); ok && x.VlanDefaultPVID != nil {
		defaultPVID = *x.VlanDefaultPVID
	}
	if vlan.IsEmpty() {
		return []bridgeVLANEntry{{vid: defaultPVID, pvid: true, untagged: true}}, nil
	}
	var out []bridgeVLANEntry
	access := vlan.Mode != nil && *vlan.Mode == "access"
	if access || (vlan.EnableNative != nil && *vlan.EnableNative) {
		if vlan.Tag == nil {
			return nil, &kernelError{kind: nmstate.InvalidArgument, msg: "port vlan needs a tag for access mode or enable-native"}
		}
		out = append(out, bridgeVLANEntry{vid: *vlan.Tag, pvid: true, untagged: true})
	}
	if access {
		return out, nil
	}
	tagged := map[uint16]bool{}
	for _, t := range vlan.TrunkTags {
		switch {
		case t.ID != nil:
			out = append(out, bridgeVLANEntry{vid: *t.ID})
			tagged[*t.ID] = true
		case t.IDRange != nil:
			for id := int(t.IDRange.Min); id <= int(t.IDRange.Max); id++ {
				out = append(out, bridgeVLANEntry{vid: uint16(id)})
				tagged[uint16(id)] = true
			}
		}
	}
	if vlan.EnableNative == nil && defaultPVID != 0 && !tagged[defaultPVID] {
		out = append([]bridgeVLANEntry{{vid: defaultPVID, pvid: true, untagged: true}}, out...)
	}
	return out, nil
}

// bridgeVLANFiltering switches a bridge's VLAN filtering on or off.
func (ex *executor) bridgeVLANFiltering(bridge string, on bool) error {
	br, err := ex.links.freshLink(bridge)
	if err != nil {
		return err
	}
	v := byte(0)
	if on {
		v = 1
	}
	if err := ex.b.changeLink(br, "bridge", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_BR_VLAN_FILTERING, []byte{v})}); err != nil {
		return vlanFilteringError(bridge, err)
	}
	return nil
}
