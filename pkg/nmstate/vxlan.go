package nmstate

import "net/netip"

// VXLAN is the `vxlan` section.
type VXLAN struct {
	BaseIface       *string     `nms:"base-iface"`
	ID              *uint32     `nms:"id"`
	Local           *netip.Addr `nms:"local"`
	Remote          *netip.Addr `nms:"remote"`
	DestinationPort *uint16     `nms:"destination-port"`
	Learning        *bool       `nms:"learning"`
}
