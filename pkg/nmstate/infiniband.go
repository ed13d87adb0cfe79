package nmstate

// InfiniBand is the `infiniband` section (IPoIB).
type InfiniBand struct {
	Mode      *InfiniBandMode `nms:"mode"`
	BaseIface *string         `nms:"base-iface"`
	// PKey is printed as a hex string (`'0x80ff'`), as upstream does.
	PKey *Hex16 `nms:"pkey"`
}

// InfiniBandMode is the IPoIB transport mode.
type InfiniBandMode string

func (InfiniBandMode) enumSpec() enumSpec {
	return enumSpec{values: []string{"datagram", "connected"}}
}
