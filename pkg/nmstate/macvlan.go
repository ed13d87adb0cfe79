package nmstate

// MacVlan is the `mac-vlan` and `mac-vtap` section.
type MacVlan struct {
	BaseIface *string      `nms:"base-iface"`
	Mode      *MacVlanMode `nms:"mode"`
	// Promiscuous accepts `accept-all-mac` as an alias.
	Promiscuous *bool `nms:"promiscuous,alias=accept-all-mac"`
}

// MacVlanMode is the macvlan/macvtap mode.
type MacVlanMode string

func (MacVlanMode) enumSpec() enumSpec {
	return enumSpec{values: []string{"vepa", "bridge", "private", "passthru", "source", "unknown"}}
}
