package nmstate

// LinuxBridge is the `bridge` section of a linux-bridge.
type LinuxBridge struct {
	Options *LinuxBridgeOptions `nms:"options"`
	Port    []LinuxBridgePort   `nms:"port,alias=ports"`
}

// LinuxBridgeOptions are bridge-wide settings (kebab-case keys).
type LinuxBridgeOptions struct {
	GCTimer                        *uint64                `nms:"gc-timer"` // query only in practice
	GroupAddr                      *MAC                   `nms:"group-addr"`
	GroupForwardMask               *uint16                `nms:"group-forward-mask,alias=group-fwd-mask"`
	HashElasticity                 *uint32                `nms:"hash-elasticity"`
	HashMax                        *uint32                `nms:"hash-max"`
	HelloTimer                     *uint64                `nms:"hello-timer"` // query only in practice
	MACAgeingTime                  *uint32                `nms:"mac-ageing-time"`
	MulticastLastMemberCount       *uint32                `nms:"multicast-last-member-count"`
	MulticastLastMemberInterval    *uint64                `nms:"multicast-last-member-interval"`
	MulticastMembershipInterval    *uint64                `nms:"multicast-membership-interval"`
	MulticastQuerier               *bool                  `nms:"multicast-querier"`
	MulticastQuerierInterval       *uint64                `nms:"multicast-querier-interval"`
	MulticastQueryInterval         *uint64                `nms:"multicast-query-interval"`
	MulticastQueryResponseInterval *uint64                `nms:"multicast-query-response-interval"`
	MulticastQueryUseIfaddr        *bool                  `nms:"multicast-query-use-ifaddr"`
	MulticastRouter                *BridgeMulticastRouter `nms:"multicast-router"`
	MulticastSnooping              *bool                  `nms:"multicast-snooping"`
	MulticastStartupQueryCount     *uint32                `nms:"multicast-startup-query-count"`
	MulticastStartupQueryInterval  *uint64                `nms:"multicast-startup-query-interval"`
	STP                            *LinuxBridgeSTP        `nms:"stp"`
	VlanProtocol                   *VLANProto             `nms:"vlan-protocol"`
	VlanDefaultPVID                *uint16                `nms:"vlan-default-pvid"`
}

// BridgeMulticastRouter is multicast-router; 0/1/2 are the kernel values.
type BridgeMulticastRouter string

func (BridgeMulticastRouter) enumSpec() enumSpec {
	return enumSpec{
		values:  []string{"auto", "disabled", "enabled"},
		aliases: map[string]string{"0": "disabled", "1": "auto", "2": "enabled"},
	}
}

// LinuxBridgeSTP is the spanning tree block (timers in seconds).
type LinuxBridgeSTP struct {
	Enabled      *bool   `nms:"enabled"`
	ForwardDelay *uint8  `nms:"forward-delay"`
	HelloTime    *uint8  `nms:"hello-time"`
	MaxAge       *uint8  `nms:"max-age"`
	Priority     *uint16 `nms:"priority"`
}

// LinuxBridgePort is one port of a linux bridge.
type LinuxBridgePort struct {
	Name           string      `nms:"name,required"`
	STPHairpinMode *bool       `nms:"stp-hairpin-mode"`
	STPPathCost    *uint32     `nms:"stp-path-cost"`
	STPPriority    *uint16     `nms:"stp-priority"`
	VLAN           *BridgeVLAN `nms:"vlan"`
}

// BridgeVLAN is the VLAN filtering configuration of a bridge port, shared
// by linux-bridge and OVS bridge ports.
type BridgeVLAN struct {
	Mode         *BridgeVLANMode `nms:"mode"`
	Tag          *uint16         `nms:"tag"`
	EnableNative *bool           `nms:"enable-native"`
	TrunkTags    []TrunkTag      `nms:"trunk-tags"`
}

// BridgeVLANMode is trunk or access.
type BridgeVLANMode string

func (BridgeVLANMode) enumSpec() enumSpec { return enumSpec{values: []string{"trunk", "access"}} }

// TrunkTag is either a single VLAN id or an inclusive range; exactly one of
// the two is set.
type TrunkTag struct {
	ID      *uint16    `nms:"id"`
	IDRange *VLANRange `nms:"id-range"`
}

// VLANRange is an inclusive VLAN id range.
type VLANRange struct {
	Min uint16 `nms:"min,required"`
	Max uint16 `nms:"max,required"`
}

// IsEmpty reports whether the port VLAN section configures nothing (absent
// or `vlan: {}`): upstream keeps such a port out of VLAN filtering and adds
// no default trunk to it.
func (v *BridgeVLAN) IsEmpty() bool {
	return v == nil || v.Mode == nil && v.Tag == nil && v.EnableNative == nil && v.TrunkTags == nil
}
