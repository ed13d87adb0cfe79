package nmstate

import (
	"net/netip"
	"reflect"
)

// routeID is a route's identity: nmstate compares routes without their
// metric (and route type), so a desired route that differs from a current
// one only in metric replaces it. The table is normalised (0/unset = 254)
// and an unset gateway equals the unspecified address.
type routeID struct {
	dst    netip.Prefix
	table  uint32
	nh     string
	gw     netip.Addr
	src    netip.Addr
	weight uint16
	cwnd   uint32
}

func routeIdentity(r *Route) routeID {
	id := routeID{table: routeTable(r), gw: normAddr(r.NextHopAddress), src: normAddr(r.Source)}
	if r.Destination != nil {
		id.dst = *r.Destination
	}
	if r.NextHopInterface != nil {
		id.nh = *r.NextHopInterface
	}
	if r.Weight != nil {
		id.weight = *r.Weight
	}
	if r.Cwnd != nil {
		id.cwnd = *r.Cwnd
	}
	return id
}

// routeTable is the route's table with 0/unset meaning main (254).
func routeTable(r *Route) uint32 {
	if r.TableID == nil || *r.TableID == 0 {
		return 254
	}
	return *r.TableID
}

// normAddr maps unset, empty and unspecified addresses to the zero Addr.
func normAddr(a *netip.Addr) netip.Addr {
	if a == nil || !a.IsValid() || a.IsUnspecified() {
		return netip.Addr{}
	}
	return *a
}

// routeIs4 reports the route's family (from destination, else gateway).
func routeIs4(r *Route) bool {
	switch {
	case r.Destination != nil:
		return r.Destination.Addr().Is4()
	case r.NextHopAddress != nil && r.NextHopAddress.IsValid():
		return r.NextHopAddress.Is4()
	}
	return true
}

// RouteMatches reports whether route r matches the absent pattern p: every
// field p gives must match, unset fields are wildcards, table-id 0/unset
// matches any table, and an empty next-hop-address or source ("") means
// "must be unset".
func RouteMatches(p, r *Route) bool {
	if p.Destination != nil && (r.Destination == nil || *p.Destination != *r.Destination) {
		return false
	}
	if p.NextHopInterface != nil && *p.NextHopInterface != "" &&
		(r.NextHopInterface == nil || *r.NextHopInterface != *p.NextHopInterface) {
		return false
	}
	if p.NextHopAddress != nil && normAddr(p.NextHopAddress) != normAddr(r.NextHopAddress) {
		return false
	}
	if p.Source != nil && normAddr(p.Source) != normAddr(r.Source) {
		return false
	}
	if p.Metric != nil && *p.Metric != -1 && (r.Metric == nil || *r.Metric != *p.Metric) {
		return false
	}
	if p.TableID != nil && *p.TableID != 0 && routeTable(r) != *p.TableID {
		return false
	}
	if p.Weight != nil && (r.Weight == nil || *r.Weight != *p.Weight) {
		return false
	}
	if p.Cwnd != nil && (r.Cwnd == nil || *r.Cwnd != *p.Cwnd) {
		return false
	}
	if p.RouteType != nil && (r.RouteType == nil || *r.RouteType != *p.RouteType) {
		return false
	}
	if planSetDiffers(p.MTU, r.MTU) || planSetDiffers(p.AdvMSS, r.AdvMSS) ||
		planSetDiffers(p.InitCwnd, r.InitCwnd) || planSetDiffers(p.InitRwnd, r.InitRwnd) ||
		planBoolDiffers(p.LockMTU, r.LockMTU) || planBoolDiffers(p.QuickACK, r.QuickACK) {
		return false
	}
	return true
}

// mergeRoutes computes the target config routes: current ones minus those
// matched by absent patterns and those whose next-hop interface is deleted
// or loses the route's family, plus the desired ones (a desired route
// replaces the current route of the same identity). Merged.Routes stays nil
// when nothing changes.
func (mg *merger) mergeRoutes() {
	var cur, want []Route
	if mg.cur.Routes != nil {
		cur = mg.cur.Routes.Config
	}
	if mg.d.Routes != nil {
		want = mg.d.Routes.Config
	}
	changed := false
	var absent []*Route
	for j := range want {
		if want[j].IsAbsent() {
			absent = append(absent, &want[j])
		}
	}
	out := make([]Route, 0, len(cur)+len(want))
	for i := range cur {
		r := &cur[i]
		drop := false
		for _, p := range absent {
			if RouteMatches(p, r) {
				drop = true
				break
			}
		}
		if !drop && r.NextHopInterface != nil && *r.NextHopInterface != "" {
			ch, del, off := mg.ifaceState(*r.NextHopInterface, routeIs4(r))
			drop = ch && (del || off)
		}
		if drop {
			changed = true
			continue
		}
		out = append(out, cloneOf(*r))
	}
	index := make(map[routeID]int, len(out))
	for i := range out {
		index[routeIdentity(&out[i])] = i
	}
	for j := range want {
		r := &want[j]
		if r.IsAbsent() {
			continue
		}
		if r.NextHopInterface != nil && *r.NextHopInterface != "" && r.RouteType == nil {
			p := Path("routes").Key("config").Index(j).Key("next-hop-interface")
			nh := *r.NextHopInterface
			fam := "IPv6"
			if routeIs4(r) {
				fam = "IPv4"
			}
			switch _, del, off := mg.ifaceState(nh, routeIs4(r)); {
			case del:
				mg.fail(InvalidArgument, p, "next hop interface %s is removed by this state", nh)
				continue
			case off:
				mg.fail(InvalidArgument, p, "next hop interface %s has %s disabled", nh, fam)
				continue
			}
		}
		id := routeIdentity(r)
		if i, ok := index[id]; ok {
			if !reflect.DeepEqual(&out[i], r) {
				out[i] = cloneOf(*r)
				changed = true
			}
			continue
		}
		index[id] = len(out)
		out = append(out, cloneOf(*r))
		changed = true
	}
	if changed && !reflect.DeepEqual(out, cur) {
		mg.m.Routes = out
	}
}

// ruleID is the identity of a route rule with family derived from the
// prefixes and the table normalised (0/unset = 254 for table lookups).
type ruleID struct {
	family   Family
	from, to netip.Prefix
	priority int64
	table    uint32
	fwmark   Hex32
	fwmask   Hex32
	action   RouteRuleAction
	iif      string
	suppress uint32
	hasSupp  bool
}

func ruleIdentity(r *RouteRule, withPriority bool) ruleID {
	id := ruleID{family: ruleFamilyOf(r), priority: -1}
	if r.IPFrom != nil {
		id.from = *r.IPFrom
	}
	if r.IPTo != nil {
		id.to = *r.IPTo
	}
	if withPriority && r.Priority != nil {
		id.priority = *r.Priority
	}
	if r.Action != nil {
		id.action = *r.Action
	} else {
		id.table = ruleTable(r)
	}
	if r.FWMark != nil {
		id.fwmark = *r.FWMark
	}
	if r.FWMask != nil {
		id.fwmask = *r.FWMask
	}
	if r.IIF != nil {
		id.iif = *r.IIF
	}
	if r.SuppressPrefixLength != nil {
		id.suppress, id.hasSupp = *r.SuppressPrefixLength, true
	}
	return id
}

func ruleTable(r *RouteRule) uint32 {
	if r.RouteTable == nil || *r.RouteTable == 0 {
		return 254
	}
	return *r.RouteTable
}

// ruleFamilyOf is the family given, else the one of ip-from/ip-to, else
// ipv4.
func ruleFamilyOf(r *RouteRule) Family {
	switch {
	case r.Family != nil:
		return *r.Family
	case r.IPFrom != nil && r.IPFrom.IsValid():
		if r.IPFrom.Addr().Is4() {
			return "ipv4"
		}
		return "ipv6"
	case r.IPTo != nil && r.IPTo.IsValid():
		if r.IPTo.Addr().Is4() {
			return "ipv4"
		}
		return "ipv6"
	}
	return "ipv4"
}

// RuleMatches reports whether rule r matches the absent pattern p: fields
// p gives must match, unset ones (and route-table 0, priority -1) are
// wildcards, and an empty ip-from/ip-to ("") means "must be unset".
func RuleMatches(p, r *RouteRule) bool {
	pfx := func(pp, rp *netip.Prefix) bool {
		if pp == nil {
			return true
		}
		if !pp.IsValid() {
			return rp == nil || !rp.IsValid()
		}
		return rp != nil && *rp == *pp
	}
	if !pfx(p.IPFrom, r.IPFrom) || !pfx(p.IPTo, r.IPTo) {
		return false
	}
	if p.Family != nil && ruleFamilyOf(r) != *p.Family {
		return false
	}
	if p.Priority != nil && *p.Priority != -1 && (r.Priority == nil || *r.Priority != *p.Priority) {
		return false
	}
	if p.RouteTable != nil && *p.RouteTable != 0 && (r.Action != nil || ruleTable(r) != *p.RouteTable) {
		return false
	}
	if p.FWMark != nil && (r.FWMark == nil || *r.FWMark != *p.FWMark) {
		return false
	}
	if p.FWMask != nil && (r.FWMask == nil || *r.FWMask != *p.FWMask) {
		return false
	}
	if p.Action != nil && (r.Action == nil || *r.Action != *p.Action) {
		return false
	}
	if p.IIF != nil && (r.IIF == nil || *r.IIF != *p.IIF) {
		return false
	}
	if p.SuppressPrefixLength != nil && (r.SuppressPrefixLength == nil || *r.SuppressPrefixLength != *p.SuppressPrefixLength) {
		return false
	}
	return true
}

// autoRulePriorityBase is where nmstate starts numbering rules given
// without a priority.
const autoRulePriorityBase = 30000

// mergeRules computes the target rules like mergeRoutes. A desired rule
// without priority that equals a kept rule in everything else is already
// there; otherwise it gets max(existing priorities, 29999)+1, upward in
// document order. Desired rules get their family filled in.
func (mg *merger) mergeRules() {
	var cur, want []RouteRule
	if mg.cur.RouteRules != nil {
		cur = mg.cur.RouteRules.Config
	}
	if mg.d.RouteRules != nil {
		want = mg.d.RouteRules.Config
	}
	changed := false
	var absent []*RouteRule
	for j := range want {
		if want[j].IsAbsent() {
			absent = append(absent, &want[j])
		}
	}
	out := make([]RouteRule, 0, len(cur)+len(want))
	for i := range cur {
		drop := false
		for _, p := range absent {
			if RuleMatches(p, &cur[i]) {
				drop = true
				break
			}
		}
		if drop {
			changed = true
			continue
		}
		out = append(out, cloneOf(cur[i]))
	}
	maxPrio := int64(autoRulePriorityBase - 1)
	exact := map[ruleID]bool{}
	loose := map[ruleID]bool{}
	note := func(r *RouteRule) {
		exact[ruleIdentity(r, true)] = true
		loose[ruleIdentity(r, false)] = true
		if r.Priority != nil && *r.Priority > maxPrio {
			maxPrio = *r.Priority
		}
	}
	for i := range out {
		note(&out[i])
	}
	for j := range want {
		if r := &want[j]; !r.IsAbsent() && r.Priority != nil && *r.Priority > maxPrio {
			maxPrio = *r.Priority
		}
	}
	for j := range want {
		r := &want[j]
		if r.IsAbsent() {
			continue
		}
		t := cloneOf(*r)
		if t.Family == nil {
			f := ruleFamilyOf(&t)
			t.Family = &f
		}
		if t.Priority == nil || *t.Priority == -1 {
			if loose[ruleIdentity(&t, false)] {
				continue
			}
			maxPrio++
			p := maxPrio
			t.Priority = &p
		} else if exact[ruleIdentity(&t, true)] {
			continue
		}
		out = append(out, t)
		note(&t)
		changed = true
	}
	if changed && !reflect.DeepEqual(out, cur) {
		mg.m.RouteRules = out
	}
}

// mergeDNS: an omitted dns-resolver (or config) leaves DNS alone;
// `config: {}` purges it; otherwise each given list replaces the current
// one and omitted lists are kept. The target has all three lists set.
func (mg *merger) mergeDNS() {
	if mg.d.DNSResolver == nil || mg.d.DNSResolver.Config == nil {
		return
	}
	dc := mg.d.DNSResolver.Config
	cc := &DNSConfig{}
	if mg.cur.DNSResolver != nil && mg.cur.DNSResolver.Config != nil {
		cc = cloneOf(mg.cur.DNSResolver.Config)
	}
	cc = fullDNS(cc)
	t := &DNSConfig{}
	if dc.Server != nil || dc.Search != nil || dc.Options != nil {
		t = cloneOf(dc)
		fillFrom(t, cc)
	}
	t = fullDNS(t)
	if reflect.DeepEqual(t, cc) {
		return
	}
	mg.m.DNS = t
}

// fullDNS replaces nil lists by empty ones.
func fullDNS(c *DNSConfig) *DNSConfig {
	if c.Server == nil {
		c.Server = []netip.Addr{}
	}
	if c.Search == nil {
		c.Search = []string{}
	}
	if c.Options == nil {
		c.Options = []string{}
	}
	return c
}

// mergeHostname: unset keys keep their current value, except that a new
// static hostname also becomes the running one unless running is given.
func (mg *merger) mergeHostname() {
	h := mg.d.Hostname
	if h == nil || (h.Running == nil && h.Config == nil) {
		return
	}
	t := cloneOf(h)
	if t.Running == nil && t.Config != nil && *t.Config != "" {
		t.Running = strPtr(*t.Config)
	}
	var c Hostname
	if mg.cur.Hostname != nil {
		c = *mg.cur.Hostname
	}
	fillFrom(t, &c)
	if reflect.DeepEqual(t, &c) {
		return
	}
	mg.m.Hostname = t
}
