package nmstate

import "net/netip"

// IPConfig is the `ipv4` or `ipv6` section. One type serves both families
// so merge and verify code is written once; the family-only keys are
// documented per field and rejected by Validate in the wrong family.
type IPConfig struct {
	Enabled *bool `nms:"enabled"`
	DHCP    *bool `nms:"dhcp"`
	// Autoconf (SLAAC) is IPv6 only.
	Autoconf *bool `nms:"autoconf"`
	// Address: nil = keep current addresses, empty = remove all.
	Address           []Address `nms:"address"`
	AutoDNS           *bool     `nms:"auto-dns"`
	AutoGateway       *bool     `nms:"auto-gateway"`
	AutoRoutes        *bool     `nms:"auto-routes"`
	AutoRouteTableID  *uint32   `nms:"auto-route-table-id"`
	AutoRouteMetric   *uint32   `nms:"auto-route-metric"`
	AllowExtraAddress *bool     `nms:"allow-extra-address"`
	// DHCPClientID is IPv4 only: "ll", "iaid+duid" or any string.
	DHCPClientID *string `nms:"dhcp-client-id"`
	// DHCPDUID is IPv6 only: "llt", "en", "ll", "uuid" or any string.
	DHCPDUID *string `nms:"dhcp-duid"`
	// AddrGenMode is IPv6 only: "eui64", "stable-privacy" or any string.
	AddrGenMode *string `nms:"addr-gen-mode"`
	// Token is IPv6 only: the interface identifier for SLAAC.
	Token              *netip.Addr `nms:"token"`
	DHCPSendHostname   *bool       `nms:"dhcp-send-hostname"`
	DHCPCustomHostname *string     `nms:"dhcp-custom-hostname"`
	// Forwarding is the per-interface forwarding sysctl (newer nmstate key).
	Forwarding *bool `nms:"forwarding"`
}

// IsAuto reports whether the stack is configured dynamically (DHCP, or
// autoconf for IPv6), as given in this value.
func (c *IPConfig) IsAuto() bool {
	return c != nil && ((c.DHCP != nil && *c.DHCP) || (c.Autoconf != nil && *c.Autoconf))
}

// Address is one IP address of an interface.
type Address struct {
	IP           netip.Addr `nms:"ip,required"`
	PrefixLength uint8      `nms:"prefix-length,required"`
	// ValidLifetime and PreferredLifetime are "forever" or "<n>sec" (query);
	// a finite lifetime marks a dynamic address.
	ValidLifetime     *string     `nms:"valid-life-time,alias=valid-lft"`
	PreferredLifetime *string     `nms:"preferred-life-time,alias=preferred-lft"`
	MPTCPFlags        []MPTCPFlag `nms:"mptcp-flags"`
}

// Prefix returns the address as a netip.Prefix (host bits kept).
func (a Address) Prefix() netip.Prefix { return netip.PrefixFrom(a.IP, int(a.PrefixLength)) }

// IsDynamic reports whether the address has a finite valid lifetime.
func (a Address) IsDynamic() bool {
	return a.ValidLifetime != nil && *a.ValidLifetime != "forever"
}

// keyOrder prints the address itself before its attributes.
func (Address) keyOrder() []string { return []string{"ip", "prefix-length"} }
