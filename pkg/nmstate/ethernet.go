package nmstate

// Ethernet is the `ethernet` section of ethernet (and veth) interfaces.
type Ethernet struct {
	AutoNegotiation *bool   `nms:"auto-negotiation"`
	Speed           *uint32 `nms:"speed"`
	Duplex          *Duplex `nms:"duplex"`
	SRIOV           *SRIOV  `nms:"sr-iov"`
}

// Duplex is the ethernet duplex mode.
type Duplex string

func (Duplex) enumSpec() enumSpec { return enumSpec{values: []string{"full", "half"}} }

// SRIOV configures the virtual functions of a physical function.
type SRIOV struct {
	DriversAutoprobe *bool    `nms:"drivers-autoprobe"`
	TotalVFs         *uint32  `nms:"total-vfs"`
	VFs              []VFConf `nms:"vfs"`
}

// VFConf is one SR-IOV virtual function.
type VFConf struct {
	ID         uint32     `nms:"id,required"`
	IfaceName  *string    `nms:"iface-name"` // query only
	MACAddress *MAC       `nms:"mac-address"`
	SpoofCheck *bool      `nms:"spoof-check"`
	Trust      *bool      `nms:"trust"`
	MinTxRate  *uint32    `nms:"min-tx-rate"`
	MaxTxRate  *uint32    `nms:"max-tx-rate"`
	VlanID     *uint32    `nms:"vlan-id"`
	QoS        *uint32    `nms:"qos"`
	VlanProto  *VLANProto `nms:"vlan-proto"`
}

// Veth is the `veth` section; Peer names the other end of the pair.
type Veth struct {
	Peer string `nms:"peer,required"`
}

// Ethtool holds the `ethtool` section.
type Ethtool struct {
	Pause    *EthtoolPause    `nms:"pause"`
	Feature  map[string]bool  `nms:"feature"`
	Coalesce *EthtoolCoalesce `nms:"coalesce"`
	Ring     *EthtoolRing     `nms:"ring"`
}

// EthtoolPause is flow control.
type EthtoolPause struct {
	Autoneg *bool `nms:"autoneg"`
	RX      *bool `nms:"rx"`
	TX      *bool `nms:"tx"`
}

// EthtoolCoalesce is interrupt coalescing.
type EthtoolCoalesce struct {
	AdaptiveRX         *bool   `nms:"adaptive-rx"`
	AdaptiveTX         *bool   `nms:"adaptive-tx"`
	PktRateHigh        *uint32 `nms:"pkt-rate-high"`
	PktRateLow         *uint32 `nms:"pkt-rate-low"`
	RateSampleInterval *uint32 `nms:"rate-sample-interval"`
	RXFrames           *uint32 `nms:"rx-frames"`
	RXFramesHigh       *uint32 `nms:"rx-frames-high"`
	RXFramesIRQ        *uint32 `nms:"rx-frames-irq"`
	RXFramesLow        *uint32 `nms:"rx-frames-low"`
	RXUsecs            *uint32 `nms:"rx-usecs"`
	RXUsecsHigh        *uint32 `nms:"rx-usecs-high"`
	RXUsecsIRQ         *uint32 `nms:"rx-usecs-irq"`
	RXUsecsLow         *uint32 `nms:"rx-usecs-low"`
	StatsBlockUsecs    *uint32 `nms:"stats-block-usecs"`
	TXFrames           *uint32 `nms:"tx-frames"`
	TXFramesHigh       *uint32 `nms:"tx-frames-high"`
	TXFramesIRQ        *uint32 `nms:"tx-frames-irq"`
	TXFramesLow        *uint32 `nms:"tx-frames-low"`
	TXUsecs            *uint32 `nms:"tx-usecs"`
	TXUsecsHigh        *uint32 `nms:"tx-usecs-high"`
	TXUsecsIRQ         *uint32 `nms:"tx-usecs-irq"`
	TXUsecsLow         *uint32 `nms:"tx-usecs-low"`
}

// EthtoolRing is ring buffer sizing; the *-max keys are query only.
type EthtoolRing struct {
	RX         *uint32 `nms:"rx"`
	RXMax      *uint32 `nms:"rx-max"`
	RXJumbo    *uint32 `nms:"rx-jumbo"`
	RXJumboMax *uint32 `nms:"rx-jumbo-max"`
	RXMini     *uint32 `nms:"rx-mini"`
	RXMiniMax  *uint32 `nms:"rx-mini-max"`
	TX         *uint32 `nms:"tx"`
	TXMax      *uint32 `nms:"tx-max"`
}
