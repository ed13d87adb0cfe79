package noded

import (
	"maps"
	"slices"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// MainTable is the kernel's main routing table, where dynamic routes go
// unless auto-route-table-id says otherwise.
const MainTable = 254

// DefaultRouteMetric is the metric of dynamic routes when
// auto-route-metric is not given: NetworkManager's default for wired
// devices, so a node moving from NetworkManager keeps its route order.
const DefaultRouteMetric = 100

// Auto is how the dynamic configuration of one IP family is used: the
// auto-* flags of nmstate with their defaults resolved.
type Auto struct {
	DNS     bool   `json:"dns"`
	Gateway bool   `json:"gateway"`
	Routes  bool   `json:"routes"`
	Table   uint32 `json:"table"`
	Metric  uint32 `json:"metric"`
	// TableSet and MetricSet remember whether the user gave them, so show
	// reports them as applied.
	TableSet  bool `json:"tableSet,omitempty"`
	MetricSet bool `json:"metricSet,omitempty"`
}

// Family4 is what the runtime runs for IPv4 on one interface.
type Family4 struct {
	DHCP bool `json:"dhcp"`
	Auto Auto `json:"auto"`
	// ClientID is dhcp-client-id as given ("" = default).
	ClientID string `json:"clientID,omitempty"`
	// SendHostname is dhcp-send-hostname (default true); Hostname is
	// dhcp-custom-hostname ("" = the node's hostname).
	SendHostname bool   `json:"sendHostname"`
	Hostname     string `json:"hostname,omitempty"`
}

// Family6 is what the runtime runs for IPv6 on one interface.
type Family6 struct {
	DHCP     bool   `json:"dhcp"`
	Autoconf bool   `json:"autoconf"`
	Auto     Auto   `json:"auto"`
	DUID     string `json:"duid,omitempty"`
	// SendHostname and Hostname as for IPv4 (DHCPv6 FQDN is not sent yet;
	// kept so show reports what was applied).
	SendHostname bool   `json:"sendHostname"`
	Hostname     string `json:"hostname,omitempty"`
}

// Spec is what the applied state asks the runtime to do for one
// interface. A nil family means that family is not dynamic.
type Spec struct {
	Interface string   `json:"interface"`
	V4        *Family4 `json:"ipv4,omitempty"`
	V6        *Family6 `json:"ipv6,omitempty"`
}

// dynamic reports whether the spec asks for anything at all.
func (s Spec) dynamic() bool {
	return (s.V4 != nil && s.V4.DHCP) || (s.V6 != nil && (s.V6.DHCP || s.V6.Autoconf))
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

// autoOf reads the auto-* flags of a section; a flag the section leaves
// out keeps its value in prev (nmstate merges a desired section into the
// current one), or takes its default when the family was not dynamic.
func autoOf(c *nmstate.IPConfig, prev *Auto) Auto {
	a := Auto{DNS: true, Gateway: true, Routes: true, Table: MainTable, Metric: DefaultRouteMetric}
	if prev != nil {
		a = *prev
	}
	a.DNS = boolOr(c.AutoDNS, a.DNS)
	a.Gateway = boolOr(c.AutoGateway, a.Gateway)
	a.Routes = boolOr(c.AutoRoutes, a.Routes)
	if c.AutoRouteTableID != nil {
		a.Table, a.TableSet = MainTable, false
		if *c.AutoRouteTableID != 0 {
			a.Table, a.TableSet = *c.AutoRouteTableID, true
		}
	}
	if c.AutoRouteMetric != nil {
		a.Metric, a.MetricSet = *c.AutoRouteMetric, true
	}
	return a
}

func strOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// family4 reads the ipv4 section of an applied interface; what it leaves
// out keeps its value in prev (the family's current spec, nil when it was
// not dynamic). Keeping the client options matters: a changed one needs a
// new client and lease, so a section that only turns auto-dns off must
// not reset a custom hostname.
func family4(c *nmstate.IPConfig, prev *Family4) *Family4 {
	if c == nil || !boolOr(c.Enabled, true) || !boolOr(c.DHCP, prev != nil && prev.DHCP) {
		return nil
	}
	f := &Family4{DHCP: true, SendHostname: true}
	var pa *Auto
	if prev != nil {
		f.ClientID, f.SendHostname, f.Hostname = prev.ClientID, prev.SendHostname, prev.Hostname
		pa = &prev.Auto
	}
	f.Auto = autoOf(c, pa)
	f.ClientID = strOr(c.DHCPClientID, f.ClientID)
	f.SendHostname = boolOr(c.DHCPSendHostname, f.SendHostname)
	f.Hostname = strOr(c.DHCPCustomHostname, f.Hostname)
	return f
}

// family6 reads the ipv6 section of an applied interface, merged into prev
// as family4 does.
func family6(c *nmstate.IPConfig, prev *Family6) *Family6 {
	if c == nil || !boolOr(c.Enabled, true) {
		return nil
	}
	f := &Family6{SendHostname: true}
	var pa *Auto
	if prev != nil {
		*f = *prev
		pa = &prev.Auto
	}
	f.DHCP = boolOr(c.DHCP, f.DHCP)
	f.Autoconf = boolOr(c.Autoconf, f.Autoconf)
	f.Auto = autoOf(c, pa)
	f.DUID = strOr(c.DHCPDUID, f.DUID)
	f.SendHostname = boolOr(c.DHCPSendHostname, f.SendHostname)
	f.Hostname = strOr(c.DHCPCustomHostname, f.Hostname)
	if !f.DHCP && !f.Autoconf {
		return nil
	}
	return f
}

// UpdateSpecs folds one applied (desired) state into the specs the
// runtime holds and returns the new set; prev is not modified. Only what
// the state names changes: an interface it does not list, a family
// section it leaves out, or a key of a section it leaves out, keeps its
// spec, so an apply that does not touch an interface does not disturb its
// clients. An interface that is absent
// or down loses its spec.
func UpdateSpecs(prev map[string]Spec, applied *nmstate.State) map[string]Spec {
	next := maps.Clone(prev)
	if next == nil {
		next = map[string]Spec{}
	}
	if applied == nil {
		return next
	}
	// Ports of a bridge, bond or team hold no IP: an interface that
	// becomes one stops being dynamic. VRF ports keep their IP.
	for i := range applied.Interfaces {
		ifc := &applied.Interfaces[i]
		if ports, ok := ifc.Ports(); ok && ifc.VRF == nil && ifc.EffectiveState() != nmstate.StateAbsent {
			for _, p := range ports {
				delete(next, p)
			}
		}
	}
	for i := range applied.Interfaces {
		ifc := &applied.Interfaces[i]
		switch ifc.EffectiveState() {
		case nmstate.StateAbsent, nmstate.StateDown:
			delete(next, ifc.Name)
			continue
		case nmstate.StateIgnore:
			continue
		}
		s := next[ifc.Name]
		s.Interface = ifc.Name
		if ifc.IPv4 != nil {
			s.V4 = family4(ifc.IPv4, s.V4)
		}
		if ifc.IPv6 != nil {
			s.V6 = family6(ifc.IPv6, s.V6)
		}
		if s.dynamic() {
			next[ifc.Name] = s
		} else {
			delete(next, ifc.Name)
		}
	}
	return next
}

// Key names one client: an interface and a family (4 or 6).
type Key struct {
	Interface string
	Family    int
}

// ClientConfig is what a running client was started with: changing any of
// it needs a new client (and a new lease).
type ClientConfig struct {
	ClientID     string // DHCPv4 client-id or DHCPv6 DUID
	SendHostname bool
	Hostname     string
}

// Clients lists the DHCP clients the specs ask for.
func Clients(specs map[string]Spec) map[Key]ClientConfig {
	out := map[Key]ClientConfig{}
	for name, s := range specs {
		if s.V4 != nil && s.V4.DHCP {
			out[Key{name, 4}] = ClientConfig{ClientID: s.V4.ClientID, SendHostname: s.V4.SendHostname, Hostname: s.V4.Hostname}
		}
		if s.V6 != nil && s.V6.DHCP {
			out[Key{name, 6}] = ClientConfig{ClientID: s.V6.DUID, SendHostname: s.V6.SendHostname, Hostname: s.V6.Hostname}
		}
	}
	return out
}

// autoFor returns the auto settings of one client's family.
func autoFor(specs map[string]Spec, k Key) (Auto, bool) {
	s, ok := specs[k.Interface]
	switch {
	case !ok:
		return Auto{}, false
	case k.Family == 4 && s.V4 != nil:
		return s.V4.Auto, true
	case k.Family == 6 && s.V6 != nil:
		return s.V6.Auto, true
	}
	return Auto{}, false
}

// Sysctl is one per-interface kernel setting (net.ipv6.conf.<if>.<key>).
type Sysctl struct {
	Interface, Key, Value string
}

// Stop is a client to end. Release gives the lease back to the server;
// without it the lease is left to run out (the runtime shutting down with
// the addresses kept until their lifetime ends).
type Stop struct {
	Key     Key
	Release bool
}

// Actions is what the runtime must do to go from one set of specs to the
// next. Stops come before starts (a restarted client is stopped first).
type Actions struct {
	Stop  []Stop
	Start []Key
	// Refresh are running clients whose auto-* settings changed: their
	// lease is reinstalled (routes, DNS) without a new exchange.
	Refresh []Key
	Sysctls []Sysctl
	// FlushAutoconf are interfaces whose SLAAC addresses must go (autoconf
	// turned off; the sysctl alone keeps existing ones).
	FlushAutoconf []string
	// Solicit are interfaces whose router advertisement settings changed:
	// a router solicitation makes routers answer now rather than at their
	// next periodic advertisement.
	Solicit []string
}

// Decide compares the specs the runtime runs with the next ones. running
// holds the configs of the clients that actually run (a client that failed
// to start is absent and is started again).
func Decide(prev, next map[string]Spec, running map[Key]ClientConfig) Actions {
	var a Actions
	want := Clients(next)
	for _, k := range sortedKeys(running) {
		cfg, ok := want[k]
		switch {
		case !ok:
			// dhcp turned off, or the interface went down or away: give
			// the lease back (on a dead link the exchange fails at once
			// and harmlessly).
			a.Stop = append(a.Stop, Stop{Key: k, Release: true})
		case cfg != running[k]:
			a.Stop = append(a.Stop, Stop{Key: k, Release: true})
			a.Start = append(a.Start, k)
		default:
			pa, _ := autoFor(prev, k)
			na, _ := autoFor(next, k)
			if pa != na {
				a.Refresh = append(a.Refresh, k)
			}
		}
	}
	for _, k := range sortedKeys(want) {
		if _, ok := running[k]; !ok {
			a.Start = append(a.Start, k)
		}
	}
	names := slices.Sorted(maps.Keys(next))
	for _, name := range slices.Sorted(maps.Keys(prev)) {
		if _, ok := next[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		sc := autoconfSysctls(prev[name], next[name])
		a.Sysctls = append(a.Sysctls, sc...)
		if len(sc) == 0 {
			continue
		}
		if !next[name].V6.Autoconf {
			a.FlushAutoconf = append(a.FlushAutoconf, name)
		}
		a.Solicit = append(a.Solicit, name)
	}
	return a
}

func sortedKeys[V any](m map[Key]V) []Key {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, func(a, b Key) int {
		if a.Interface != b.Interface {
			if a.Interface < b.Interface {
				return -1
			}
			return 1
		}
		return a.Family - b.Family
	})
	return out
}

// ra6 is the router-advertisement behaviour a spec asks for.
type ra6 struct {
	on       bool // any IPv6 dynamic configuration
	autoconf bool
	defrtr   bool
	routes   bool
	metric   uint32
}

func raOf(s Spec) ra6 {
	if s.V6 == nil {
		return ra6{}
	}
	return ra6{
		on: true, autoconf: s.V6.Autoconf,
		defrtr: s.V6.Auto.Gateway && s.V6.Auto.Routes,
		routes: s.V6.Auto.Routes,
		metric: s.V6.Auto.Metric,
	}
}

// autoconfSysctls returns the IPv6 sysctls that change between two specs
// of one interface. The kernel does router advertisements and SLAAC
// itself; the runtime only switches them. Interfaces that lose their
// IPv6 spec (ipv6 static, or the interface removed) are not touched: the
// plan of the apply owns their IPv6 settings from then on.
func autoconfSysctls(prev, next Spec) []Sysctl {
	p, n := raOf(prev), raOf(next)
	if !n.on || p == n {
		return nil
	}
	name := next.Interface
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	return []Sysctl{
		{name, "disable_ipv6", "0"},
		// 2: accept RAs even when forwarding is on.
		{name, "accept_ra", "2"},
		{name, "accept_ra_defrtr", b(n.defrtr)},
		{name, "accept_ra_pinfo", "1"},
		{name, "accept_ra_rtr_pref", b(n.routes)},
		// Route information options: up to /64 when auto-routes, none
		// otherwise.
		{name, "accept_ra_rt_info_max_plen", map[bool]string{true: "64", false: "0"}[n.routes]},
		{name, "ra_defrtr_metric", itoa(n.metric)},
		{name, "autoconf", b(n.autoconf)},
	}
}
