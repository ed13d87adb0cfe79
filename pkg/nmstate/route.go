package nmstate

import "net/netip"

// Routes is the top-level `routes` section.
type Routes struct {
	// Config: the static routes apply reads; nil = not given.
	Config []Route `nms:"config"`
	// Running is query only (includes DHCP/RA routes).
	Running []Route `nms:"running"`
}

// RouteState is only ever "absent" (a removal pattern).
type RouteState string

func (RouteState) enumSpec() enumSpec { return enumSpec{values: []string{"absent"}} }

// Route is one route. A route with State absent is a pattern: unset fields
// match anything.
type Route struct {
	State *RouteState `nms:"state"`
	// Destination is always masked on decode (198.51.100.7/24 becomes
	// 198.51.100.0/24) and a bare address becomes a host prefix.
	Destination      *netip.Prefix `nms:"destination"`
	NextHopInterface *string       `nms:"next-hop-interface"`
	// NextHopAddress: a pointer to the zero netip.Addr means the empty
	// string was given.
	NextHopAddress *netip.Addr `nms:"next-hop-address,empty"`
	// Metric -1 means the default.
	Metric *int64 `nms:"metric"`
	// TableID 0 means the main table (254).
	TableID   *uint32     `nms:"table-id"`
	Weight    *uint16     `nms:"weight"`
	RouteType *RouteType  `nms:"route-type"`
	Cwnd      *uint32     `nms:"cwnd"`
	Source    *netip.Addr `nms:"source,empty"`
}

// IsAbsent reports whether the route is a removal pattern.
func (r *Route) IsAbsent() bool { return r.State != nil && *r.State == "absent" }

// RouteType is a special route type.
type RouteType string

func (RouteType) enumSpec() enumSpec {
	return enumSpec{values: []string{"blackhole", "unreachable", "prohibit"}}
}

// RouteRules is the top-level `route-rules` section.
type RouteRules struct {
	Config []RouteRule `nms:"config"`
}

// RouteRule is one policy routing rule; with State absent it is a pattern.
type RouteRule struct {
	Family *Family     `nms:"family"`
	State  *RouteState `nms:"state"`
	// IPFrom/IPTo: a pointer to the zero netip.Prefix means the empty string
	// was given ("must be unset" in an absent pattern).
	IPFrom               *netip.Prefix    `nms:"ip-from,empty"`
	IPTo                 *netip.Prefix    `nms:"ip-to,empty"`
	Priority             *int64           `nms:"priority"`
	RouteTable           *uint32          `nms:"route-table"`
	FWMark               *Hex32           `nms:"fwmark"`
	FWMask               *Hex32           `nms:"fwmask"`
	Action               *RouteRuleAction `nms:"action"`
	IIF                  *string          `nms:"iif"`
	SuppressPrefixLength *uint32          `nms:"suppress-prefix-length,alias=suppress_prefixlength"`
}

// IsAbsent reports whether the rule is a removal pattern.
func (r *RouteRule) IsAbsent() bool { return r.State != nil && *r.State == "absent" }

// Family is ipv4 or ipv6.
type Family string

func (Family) enumSpec() enumSpec { return enumSpec{values: []string{"ipv4", "ipv6"}} }

// RouteRuleAction is the rule action other than table lookup.
type RouteRuleAction string

func (RouteRuleAction) enumSpec() enumSpec {
	return enumSpec{values: []string{"blackhole", "unreachable", "prohibit"}}
}
