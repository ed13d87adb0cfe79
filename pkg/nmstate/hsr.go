package nmstate

// HSR is the `hsr` section (HSR/PRP redundancy).
type HSR struct {
	Port1              *string      `nms:"port1"`
	Port2              *string      `nms:"port2"`
	SupervisionAddress *MAC         `nms:"supervision-address"`
	MulticastSpec      *uint8       `nms:"multicast-spec"`
	Protocol           *HSRProtocol `nms:"protocol"`
}

// HSRProtocol is hsr or prp.
type HSRProtocol string

func (HSRProtocol) enumSpec() enumSpec { return enumSpec{values: []string{"hsr", "prp"}} }
