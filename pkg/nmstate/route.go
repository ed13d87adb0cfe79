package nmstate

import "net/netip"

// Routes is the top-level `routes` section.
type Routes struct {
	// Config: the static routes apply reads; nil = not given.
	Config []Route `nms:"config"`
	// Running is query only (includes DHCP/RA routes).
	Running []Route `nms:"running"`
}

// RouteState is "absent" (a removal pattern) or "ignore" (nmstate 2.2.50:
// query marks routes through ignored interfaces so; apply skips them).
type RouteState string

func (RouteState) enumSpec() enumSpec { return enumSpec{values: []string{"absent", "ignore"}} }

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
	// The route metrics of nmstate 2.2.42 and later (RTAX_* of the kernel):
	// MTU (locked against path MTU discovery with LockMTU, 2.2.59),
	// initial congestion and receive windows, quick ACK, advertised MSS.
	MTU      *uint32 `nms:"mtu"`
	LockMTU  *bool   `nms:"lock-mtu"`
	InitCwnd *uint32 `nms:"initcwnd"`
	InitRwnd *uint32 `nms:"initrwnd"`
	QuickACK *bool   `nms:"quickack"`
	AdvMSS   *uint32 `nms:"advmss"`
	// VRFName (nmstate 2.2.55) puts the route into the table of the named
	// VRF interface; Merge resolves it to TableID (ResolveVRFNames).
	VRFName *string `nms:"vrf-name"`
}

// IsAbsent reports whether the route is a removal pattern.
func (r *Route) IsAbsent() bool { return r.State != nil && *r.State == "absent" }

// IsIgnored reports whether the route is marked `state: ignore`, which
// apply skips.
func (r *Route) IsIgnored() bool { return r.State != nil && *r.State == "ignore" }

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
