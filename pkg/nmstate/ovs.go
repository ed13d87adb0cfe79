package nmstate

// OVSBridge is the `bridge` section of an ovs-bridge.
type OVSBridge struct {
	AllowExtraPatchPorts *bool             `nms:"allow-extra-patch-ports"`
	Options              *OVSBridgeOptions `nms:"options"`
	Port                 []OVSBridgePort   `nms:"port,alias=ports"`
}

// OVSBridgeOptions are bridge-wide OVS settings.
type OVSBridgeOptions struct {
	// STP accepts a bare boolean on input (`stp: true`) and is always
	// printed as a mapping, as upstream does.
	STP                 *OVSBridgeSTP `nms:"stp"`
	RSTP                *bool         `nms:"rstp"`
	McastSnoopingEnable *bool         `nms:"mcast-snooping-enable"`
	FailMode            *string       `nms:"fail-mode"`
	Datapath            *string       `nms:"datapath"`
}

// OVSBridgeSTP is the OVS spanning tree block.
type OVSBridgeSTP struct {
	Enabled      *bool   `nms:"enabled"`
	ForwardDelay *uint16 `nms:"forward-delay"`
	HelloTime    *uint16 `nms:"hello-time"`
	MaxAge       *uint16 `nms:"max-age"`
	Priority     *uint16 `nms:"priority"`
}

// boolShorthand marks OVSBridgeSTP as decodable from a bare boolean.
func (OVSBridgeSTP) boolShorthand() string { return "enabled" }

// OVSBridgePort is one OVS port: a system/internal interface, or a bond
// when LinkAggregation is set (Name is then the bond's port name).
type OVSBridgePort struct {
	Name            string      `nms:"name,required"`
	VLAN            *BridgeVLAN `nms:"vlan"`
	LinkAggregation *OVSBond    `nms:"link-aggregation"`
}

func (OVSBridgePort) keyOrder() []string { return []string{"name"} }

// OVSBond is an OVS bond port.
type OVSBond struct {
	Mode          *OVSBondMode  `nms:"mode"`
	Port          []OVSBondPort `nms:"port,alias=ports"`
	BondDowndelay *uint32       `nms:"bond-downdelay"`
	BondUpdelay   *uint32       `nms:"bond-updelay"`
	OVSDB         *OVSDBIface   `nms:"ovs-db"`
}

// OVSBondMode is the OVS bond mode.
type OVSBondMode string

func (OVSBondMode) enumSpec() enumSpec {
	return enumSpec{values: []string{"active-backup", "balance-slb", "balance-tcp", "lacp"}}
}

// OVSBondPort is one member of an OVS bond.
type OVSBondPort struct {
	Name string `nms:"name,required"`
}

// OVSPatch is the `patch` section of an ovs-interface.
type OVSPatch struct {
	Peer string `nms:"peer,required"`
}

// OVSDPDK is the `dpdk` section of an ovs-interface.
type OVSDPDK struct {
	Devargs  *string `nms:"devargs"`
	RXQueue  *uint32 `nms:"rx-queue,alias=n_rxq"`
	NRXQDesc *uint32 `nms:"n_rxq_desc"`
	NTXQDesc *uint32 `nms:"n_txq_desc"`
}

// OVSDB is the top-level `ovs-db` section (Open_vSwitch table). A nil value
// removes the key.
type OVSDB struct {
	ExternalIDs map[string]*string `nms:"external_ids"`
	OtherConfig map[string]*string `nms:"other_config"`
}

// OVN is the top-level `ovn` section.
type OVN struct {
	BridgeMappings []OVNBridgeMapping `nms:"bridge-mappings"`
}

// OVNBridgeMapping maps an OVN localnet to an OVS bridge.
type OVNBridgeMapping struct {
	Localnet string                 `nms:"localnet,required"`
	Bridge   *string                `nms:"bridge"`
	State    *OVNBridgeMappingState `nms:"state"`
}

// OVNBridgeMappingState is present (default) or absent.
type OVNBridgeMappingState string

func (OVNBridgeMappingState) enumSpec() enumSpec {
	return enumSpec{values: []string{"present", "absent"}}
}
