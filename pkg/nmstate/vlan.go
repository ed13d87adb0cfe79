package nmstate

// VLAN is the `vlan` section.
type VLAN struct {
	BaseIface            *string           `nms:"base-iface"`
	ID                   *uint16           `nms:"id"`
	Protocol             *VLANProto        `nms:"protocol"`
	RegistrationProtocol *VLANRegistration `nms:"registration-protocol"`
	ReorderHeaders       *bool             `nms:"reorder-headers"`
	LooseBinding         *bool             `nms:"loose-binding"`
}

// VLANProto is the VLAN ethertype.
type VLANProto string

func (VLANProto) enumSpec() enumSpec { return enumSpec{values: []string{"802.1q", "802.1ad"}} }

// VLANRegistration is the VLAN registration protocol.
type VLANRegistration string

func (VLANRegistration) enumSpec() enumSpec {
	return enumSpec{values: []string{"gvrp", "mvrp", "none"}}
}
