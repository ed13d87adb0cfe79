package nmstate

// InterfaceType is the `type` of an interface. Types that live only in user
// space (OVSDB, libreswan) may share a name with a kernel interface.
type InterfaceType string

const (
	TypeEthernet     InterfaceType = "ethernet"
	TypeVeth         InterfaceType = "veth"
	TypeBond         InterfaceType = "bond"
	TypeLinuxBridge  InterfaceType = "linux-bridge"
	TypeVLAN         InterfaceType = "vlan"
	TypeVXLAN        InterfaceType = "vxlan"
	TypeMacVlan      InterfaceType = "mac-vlan"
	TypeMacVtap      InterfaceType = "mac-vtap"
	TypeIPVlan       InterfaceType = "ipvlan"
	TypeDummy        InterfaceType = "dummy"
	TypeLoopback     InterfaceType = "loopback"
	TypeVRF          InterfaceType = "vrf"
	TypeTeam         InterfaceType = "team"
	TypeOVSBridge    InterfaceType = "ovs-bridge"
	TypeOVSInterface InterfaceType = "ovs-interface"
	TypeInfiniBand   InterfaceType = "infiniband"
	TypeHSR          InterfaceType = "hsr"
	TypeMACsec       InterfaceType = "macsec"
	TypeIPsec        InterfaceType = "ipsec"
	TypeXfrm         InterfaceType = "xfrm"
	TypeTun          InterfaceType = "tun"
	TypeUnknown      InterfaceType = "unknown"
)

func (InterfaceType) enumSpec() enumSpec {
	return enumSpec{values: []string{
		"ethernet", "veth", "bond", "linux-bridge", "vlan", "vxlan", "mac-vlan",
		"mac-vtap", "ipvlan", "dummy", "loopback", "vrf", "team", "ovs-bridge",
		"ovs-interface", "infiniband", "hsr", "macsec", "ipsec", "xfrm", "tun",
		"unknown",
	}}
}

// IsController reports whether interfaces of this type hold ports.
func (t InterfaceType) IsController() bool {
	switch t {
	case TypeBond, TypeLinuxBridge, TypeOVSBridge, TypeVRF, TypeTeam:
		return true
	}
	return false
}

// IsUserSpace reports whether the type exists only outside the kernel link
// table (OVSDB bridge rows, libreswan connections); such an interface may
// share its name with a kernel interface.
func (t InterfaceType) IsUserSpace() bool {
	return t == TypeOVSBridge || t == TypeIPsec
}

// IsVirtual reports whether the kernel object is created and deleted by the
// engine (so `down` deletes it); physical NICs and loopback are not.
func (t InterfaceType) IsVirtual() bool {
	switch t {
	case TypeEthernet, TypeLoopback, TypeInfiniBand, TypeUnknown, "":
		return false
	}
	return true
}

// InterfaceState is the desired or reported administrative state.
type InterfaceState string

const (
	StateUp     InterfaceState = "up"
	StateDown   InterfaceState = "down"
	StateAbsent InterfaceState = "absent"
	StateIgnore InterfaceState = "ignore"
	// StateUnknown is reported by query only.
	StateUnknown InterfaceState = "unknown"
)

func (InterfaceState) enumSpec() enumSpec {
	return enumSpec{values: []string{"up", "down", "absent", "ignore", "unknown"}}
}

// Identifier selects how a desired interface is matched to a NIC.
type Identifier string

func (Identifier) enumSpec() enumSpec {
	return enumSpec{values: []string{"name", "mac-address"}}
}

// WaitIP is the activation gate `wait-ip`.
type WaitIP string

func (WaitIP) enumSpec() enumSpec {
	return enumSpec{values: []string{"any", "ipv4", "ipv6", "ipv4+ipv6"}}
}

// Interface is one entry of `interfaces`. Base keys come first; exactly one
// type-specific section may be set, and the decoder only accepts the
// section(s) that belong to Type (see the `types=` tag option). The
// `bridge` key is decoded into LinuxBridge or OVSBridge depending on Type.
//
// Optional fields are pointers (nil = not given = "do not change"); lists
// are nil when not given and non-nil (possibly empty) when given.
type Interface struct {
	Name  string         `nms:"name,required"`
	Type  InterfaceType  `nms:"type"`  // "" = not given, resolved by name against the current state
	State InterfaceState `nms:"state"` // "" = not given, which means up

	Description         *string     `nms:"description"`
	ProfileName         *string     `nms:"profile-name"`
	Identifier          *Identifier `nms:"identifier"`
	MTU                 *uint64     `nms:"mtu"`
	MinMTU              *uint64     `nms:"min-mtu"` // query only
	MaxMTU              *uint64     `nms:"max-mtu"` // query only
	MACAddress          *MAC        `nms:"mac-address"`
	PermanentMACAddress *MAC        `nms:"permanent-mac-address"` // query only
	CopyMACFrom         *string     `nms:"copy-mac-from"`
	AcceptAllMAC        *bool       `nms:"accept-all-mac-addresses"`
	Driver              *string     `nms:"driver"` // query only
	// AltNames (nmstate 2.2.51) are the link's alternative names. Apply
	// is incremental: listed names are added, names with state absent
	// removed, others kept (udev adds its own). See mergeAltNames. A
	// pointer, so that Interface stays comparable (verify_fast.go).
	AltNames *[]AltName `nms:"alt-names"`
	// Controller: nil = not given, "" = detach from any controller.
	Controller *string     `nms:"controller"`
	WaitIP     *WaitIP     `nms:"wait-ip"`
	IPv4       *IPConfig   `nms:"ipv4"`
	IPv6       *IPConfig   `nms:"ipv6"`
	MPTCP      *MPTCP      `nms:"mptcp"`
	LLDP       *LLDP       `nms:"lldp"`
	Ethtool    *Ethtool    `nms:"ethtool"`
	IEEE8021X  *IEEE8021X  `nms:"802.1x"`
	OVSDB      *OVSDBIface `nms:"ovs-db"`
	Dispatch   *Dispatch   `nms:"dispatch"`

	Ethernet        *Ethernet    `nms:"ethernet,types=ethernet|veth"`
	Veth            *Veth        `nms:"veth,types=ethernet|veth"`
	LinkAggregation *Bond        `nms:"link-aggregation,types=bond"`
	LinuxBridge     *LinuxBridge `nms:"bridge,types=linux-bridge"`
	OVSBridge       *OVSBridge   `nms:"bridge,types=ovs-bridge"`
	VLAN            *VLAN        `nms:"vlan,types=vlan"`
	VXLAN           *VXLAN       `nms:"vxlan,types=vxlan"`
	MacVlan         *MacVlan     `nms:"mac-vlan,types=mac-vlan"`
	MacVtap         *MacVlan     `nms:"mac-vtap,types=mac-vtap"`
	IPVlan          *IPVlan      `nms:"ipvlan,types=ipvlan"`
	VRF             *VRF         `nms:"vrf,types=vrf"`
	Team            *Team        `nms:"team,types=team"`
	Patch           *OVSPatch    `nms:"patch,types=ovs-interface"`
	DPDK            *OVSDPDK     `nms:"dpdk,types=ovs-interface"`
	InfiniBand      *InfiniBand  `nms:"infiniband,types=infiniband"`
	HSR             *HSR         `nms:"hsr,types=hsr"`
	MACsec          *MACsec      `nms:"macsec,types=macsec"`
	Libreswan       *Libreswan   `nms:"libreswan,types=ipsec"`
	Tun             *Tun         `nms:"tun,types=tun"`
}

// keyOrder puts name, type and state first, as nmstate's show does; the
// remaining keys follow alphabetically.
func (Interface) keyOrder() []string { return []string{"name", "type", "state"} }

// EffectiveState is State with the default (up) filled in.
func (i *Interface) EffectiveState() InterfaceState {
	if i.State == "" {
		return StateUp
	}
	return i.State
}

// Ports lists the port names this interface holds as a controller, and
// whether a port list was given at all (nil list = keep current ports).
func (i *Interface) Ports() ([]string, bool) {
	switch {
	case i.LinkAggregation != nil && i.LinkAggregation.Port != nil:
		return i.LinkAggregation.Port, true
	case i.LinuxBridge != nil && i.LinuxBridge.Port != nil:
		out := make([]string, 0, len(i.LinuxBridge.Port))
		for _, p := range i.LinuxBridge.Port {
			out = append(out, p.Name)
		}
		return out, true
	case i.OVSBridge != nil && i.OVSBridge.Port != nil:
		out := []string{}
		for _, p := range i.OVSBridge.Port {
			if p.LinkAggregation != nil {
				for _, bp := range p.LinkAggregation.Port {
					out = append(out, bp.Name)
				}
				continue
			}
			out = append(out, p.Name)
		}
		return out, true
	case i.VRF != nil && i.VRF.Port != nil:
		return i.VRF.Port, true
	case i.Team != nil && i.Team.Port != nil:
		out := make([]string, 0, len(i.Team.Port))
		for _, p := range i.Team.Port {
			out = append(out, p.Name)
		}
		return out, true
	}
	return nil, false
}

// Parent returns the interface this one is stacked on (vlan, vxlan,
// mac-vlan/vtap, ipvlan, infiniband pkey, macsec base-iface; veth peer is
// not a parent), or "".
func (i *Interface) Parent() string {
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	switch {
	case i.VLAN != nil:
		return deref(i.VLAN.BaseIface)
	case i.VXLAN != nil:
		return deref(i.VXLAN.BaseIface)
	case i.MacVlan != nil:
		return deref(i.MacVlan.BaseIface)
	case i.MacVtap != nil:
		return deref(i.MacVtap.BaseIface)
	case i.IPVlan != nil:
		return deref(i.IPVlan.BaseIface)
	case i.InfiniBand != nil:
		return deref(i.InfiniBand.BaseIface)
	case i.MACsec != nil:
		return deref(i.MACsec.BaseIface)
	}
	return ""
}

// stripForAbsent drops everything but name, type and state, as nmstate does
// when it parses an absent interface.
func (i *Interface) stripForAbsent() {
	*i = Interface{Name: i.Name, Type: i.Type, State: i.State}
}

// MPTCP holds per-interface Multipath TCP endpoint flags.
type MPTCP struct {
	AddressFlags []MPTCPFlag `nms:"address-flags"`
}

// MPTCPFlag is one MPTCP endpoint flag.
type MPTCPFlag string

func (MPTCPFlag) enumSpec() enumSpec {
	return enumSpec{values: []string{"signal", "subflow", "backup", "fullmesh"}}
}

// LLDP enables LLDP reception; Neighbors is query-only and kept opaque
// (lists of TLV objects).
type LLDP struct {
	Enabled   *bool `nms:"enabled"`
	Neighbors []any `nms:"neighbors"`
}

// IEEE8021X is the `802.1x` supplicant configuration.
type IEEE8021X struct {
	Identity           *string  `nms:"identity"`
	EAPMethods         []string `nms:"eap-methods"`
	PrivateKey         *string  `nms:"private-key"`
	ClientCert         *string  `nms:"client-cert"`
	CACert             *string  `nms:"ca-cert"`
	CAPath             *string  `nms:"ca-path"`
	PrivateKeyPassword *string  `nms:"private-key-password"`
	Phase2Auth         *string  `nms:"phase2-auth"`
	Password           *string  `nms:"password"`
}

// OVSDBIface holds per-interface OVSDB columns. A nil value removes the key.
type OVSDBIface struct {
	ExternalIDs map[string]*string `nms:"external_ids"`
	OtherConfig map[string]*string `nms:"other_config"`
}

// Dispatch holds scripts run after activation/deactivation.
type Dispatch struct {
	PostActivation   *string `nms:"post-activation"`
	PostDeactivation *string `nms:"post-deactivation"`
}

// Tun is reported by query only.
type Tun struct {
	Mode       *string `nms:"mode"`
	Owner      *uint32 `nms:"owner"`
	Group      *uint32 `nms:"group"`
	PI         *bool   `nms:"pi"`
	VnetHdr    *bool   `nms:"vnet-hdr"`
	MultiQueue *bool   `nms:"multi-queue"`
	Persist    *bool   `nms:"persist"`
}

// AltName is one alternative name of a link (`alt-names` entry).
type AltName struct {
	Name string `nms:"name,required"`
	// State absent removes the name; unset adds or keeps it.
	State *AltNameState `nms:"state"`
}

// AltNameState is only ever "absent".
type AltNameState string

func (AltNameState) enumSpec() enumSpec { return enumSpec{values: []string{"absent"}} }

// IsAbsent reports whether the entry removes the name.
func (a AltName) IsAbsent() bool { return a.State != nil && *a.State == "absent" }
