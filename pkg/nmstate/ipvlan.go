package nmstate

// IPVlan is the `ipvlan` section.
type IPVlan struct {
	BaseIface *string     `nms:"base-iface"`
	Mode      *IPVlanMode `nms:"mode"`
	Private   *bool       `nms:"private"`
	VEPA      *bool       `nms:"vepa"`
}

// IPVlanMode is the ipvlan mode.
type IPVlanMode string

func (IPVlanMode) enumSpec() enumSpec { return enumSpec{values: []string{"l2", "l3", "l3s"}} }
