package nm

import (
	"crypto/rand"
	"fmt"
	"net/netip"
	"slices"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// profile is a saved connection.
type profile struct {
	path     dbus.ObjectPath
	settings map[string]map[string]dbus.Variant
	filename string
	unsaved  bool
}

func (p *profile) str(sec, key string) string {
	if v, ok := p.settings[sec][key]; ok {
		s, _ := v.Value().(string)
		return s
	}
	return ""
}

// ProfilePlan is the NetworkManager side of an apply: the profiles to
// save (in activation order) and the interfaces to take down or remove.
// Plan computes it from a merged state and what NetworkManager holds;
// `nmstatectl gc` renders its profiles as keyfiles.
type ProfilePlan struct {
	Profiles []PlannedProfile
	// Down are interfaces whose profile is deactivated; Absent also lose
	// their profiles (and virtual devices).
	Down, Absent []string
	// ovs is the OVS bridges' part (profile_ovs.go).
	ovs *ovsPlan
	// KernelRoutes and KernelRules found no profile to live in (no
	// interface with IP in the apply): the kernel touch-up installs them,
	// and NetworkManager does not know them.
	KernelRoutes []nmstate.Route
	KernelRules  []nmstate.RouteRule
	// GlobalDNS is NetworkManager's global DNS configuration to hold
	// (empty: none); nil when the apply leaves DNS alone (globaldns.go).
	GlobalDNS *GlobalDNS
	// DeactivateFirst are planned profiles whose active connection goes
	// down before they are saved (deactivate.go).
	DeactivateFirst []string
}

// PlannedProfile is one profile to save.
type PlannedProfile struct {
	Name     string
	Settings Settings
	// Path is the existing profile to update; "" adds a new one.
	Path dbus.ObjectPath
	// Up asks for activation.
	Up bool
}

// existingProfiles indexes NetworkManager's profiles by interface name,
// preferring the active one.
type existingProfiles map[string]*profile

// PlanProfiles builds the profiles for the merged state m. existing maps
// interface names to their current profiles (nil for gc); unmanaged names
// the devices NetworkManager does not manage (nil for gc): they get no
// profile, and what the apply asks of them (links, addresses, routes) is
// left to the kernel touch-up, as the kernel backend would do it; newUUID
// makes UUIDs for new profiles.
func PlanProfiles(m *nmstate.Merged, existing existingProfiles, unmanaged map[string]bool, newUUID func(*nmstate.Interface) string) (*ProfilePlan, error) {
	pp := &ProfilePlan{}
	targets := map[string]*nmstate.Interface{}
	var order []string
	add := func(ifc *nmstate.Interface) {
		if _, ok := targets[ifc.Name]; ok {
			return
		}
		targets[ifc.Name] = ifc
		order = append(order, ifc.Name)
	}
	current := func(name string) *nmstate.Interface {
		if m.Current == nil {
			return nil
		}
		for _, c := range m.Current.Find(name) {
			if !c.Type.IsUserSpace() {
				return c
			}
		}
		return nil
	}
	for i := range m.Interfaces {
		ifc := &m.Interfaces[i]
		switch {
		case ifc.Type == nmstate.TypeOVSBridge: // planOVS
		case unmanaged[ifc.Name]:
		case ifc.State == nmstate.StateAbsent:
			pp.Absent = append(pp.Absent, ifc.Name)
		case ifc.State == nmstate.StateDown:
			if ifc.Type.DeletedByDown() {
				pp.Absent = append(pp.Absent, ifc.Name)
			} else {
				pp.Down = append(pp.Down, ifc.Name)
			}
		case ifc.State == nmstate.StateIgnore:
		default:
			add(ifc)
		}
	}
	gone := func(name string) bool { return slices.Contains(pp.Absent, name) || slices.Contains(pp.Down, name) }
	holder := func(name string) bool {
		if gone(name) || unmanaged[name] {
			return false
		}
		if _, ok := targets[name]; ok {
			return true
		}
		if c := current(name); c != nil {
			add(c)
			return true
		}
		return false
	}
	ovsp, err := planOVS(m, existing, newUUID)
	if err != nil {
		return nil, err
	}
	pp.ovs = ovsp
	for _, name := range ovsp.members {
		holder(name)
	}
	// A bond's ports-config lives in its ports' profiles (bond-port): a
	// port whose queue-id or priority changes gets its profile rewritten
	// although the state does not list it.
	for _, name := range slices.Clone(order) {
		ifc := targets[name]
		if ifc.Type != nmstate.TypeBond || ifc.LinkAggregation == nil {
			continue
		}
		for _, pc := range ifc.LinkAggregation.PortsConfig {
			if portConfigChanged(pc, current(name)) {
				holder(pc.Name)
			}
		}
	}

	// Routes: the whole target list (or the current config routes when
	// the apply changes none), grouped by next-hop interface.
	routes := m.Routes
	if routes == nil && m.Current != nil && m.Current.Routes != nil {
		routes = m.Current.Routes.Config
	}
	routesOf := map[string][]nmstate.Route{}
	var loose []nmstate.Route
	for _, r := range routes {
		switch {
		case r.NextHopInterface != nil && unmanaged[*r.NextHopInterface]:
			pp.KernelRoutes = append(pp.KernelRoutes, r)
		case r.NextHopInterface != nil && *r.NextHopInterface != "":
			routesOf[*r.NextHopInterface] = append(routesOf[*r.NextHopInterface], r)
		default:
			loose = append(loose, r)
		}
	}
	if m.Routes != nil {
		// Every interface whose routes may change gets its profile
		// rewritten: the ones holding routes before or after.
		for name := range routesOf {
			holder(name)
		}
		if m.Current != nil && m.Current.Routes != nil {
			for _, r := range m.Current.Routes.Config {
				if r.NextHopInterface != nil {
					holder(*r.NextHopInterface)
				}
			}
		}
		for name, p := range existing {
			if hasKey(p, "ipv4", "route-data") || hasKey(p, "ipv6", "route-data") {
				holder(name)
			}
		}
	}
	ipHolder := func(v6 bool) string {
		for _, name := range order {
			ifc := targets[name]
			c := ifc.IPv4
			if v6 {
				c = ifc.IPv6
			}
			if c != nil && (c.Enabled == nil || *c.Enabled) && (len(c.Address) > 0 || c.IsAuto()) && (targetController(m, name) == "" || ifc.Type == nmstate.TypeOVSInterface) {
				return name
			}
		}
		return ""
	}
	if len(loose) > 0 {
		// A route without next-hop interface (blackhole, unreachable)
		// goes to the first IP interface of the apply; without one it is
		// left to the kernel touch-up (pp.Kernel).
		if h := ipHolder(false); h != "" {
			routesOf[h] = append(routesOf[h], loose...)
		} else {
			pp.KernelRoutes = append(pp.KernelRoutes, loose...)
		}
	}

	// Route rules: on the iif interface, else an interface with routes in
	// the rule's table, else the first IP interface.
	rules := m.RouteRules
	if rules == nil && m.Current != nil && m.Current.RouteRules != nil {
		rules = m.Current.RouteRules.Config
	}
	rulesOf := map[string][]nmstate.RouteRule{}
	if m.RouteRules != nil {
		for name, p := range existing {
			if hasKey(p, "ipv4", "routing-rules") || hasKey(p, "ipv6", "routing-rules") {
				holder(name)
			}
		}
	}
	for _, r := range rules {
		if r.IsAbsent() {
			continue
		}
		place := ""
		if r.IIF != nil && *r.IIF != "" && holder(*r.IIF) {
			place = *r.IIF
		}
		if place == "" {
			table := uint32(254)
			if r.RouteTable != nil && *r.RouteTable != 0 {
				table = *r.RouteTable
			}
			for _, name := range sortedKeys(routesOf) {
				for _, rt := range routesOf[name] {
					if rtTable(rt) == table && holder(name) {
						place = name
					}
				}
				if place != "" {
					break
				}
			}
		}
		if place == "" {
			place = ipHolder(ruleIs6(r))
		}
		if place == "" {
			// No interface to hold it: the kernel touch-up installs it.
			pp.KernelRules = append(pp.KernelRules, r)
			continue
		}
		rulesOf[place] = append(rulesOf[place], r)
	}

	// DNS: servers on one interface per family; the family of the first
	// server is preferred and also carries search and options.
	dnsOf := map[string]*[2]*ProfileDNS{}
	if m.DNS == nil && existing != nil && m.Current != nil && m.Current.DNSResolver != nil && m.Current.DNSResolver.Config != nil && dnsHolderGone(m, existing) {
		mm := *m
		mm.DNS = m.Current.DNSResolver.Config
		m = &mm
	}
	// gc (no existing profiles) has no global configuration to write: its
	// DNS always goes to profiles, as nmstate's gen_conf places it.
	gc := existing == nil
	if m.DNS != nil && !gc {
		pp.GlobalDNS = &GlobalDNS{}
	}
	if m.DNS != nil && !gc && dnsWantsGlobal(m) {
		pp.GlobalDNS = globalDNSOf(m.DNS)
	} else if m.DNS != nil {
		for name, p := range existing {
			if hasKey(p, "ipv4", "dns") || hasKey(p, "ipv6", "dns") || hasKey(p, "ipv4", "dns-search") || hasKey(p, "ipv6", "dns-search") {
				holder(name)
			}
		}
		var v4, v6 []netip.Addr
		for _, a := range m.DNS.Server {
			if a.Is4() {
				v4 = append(v4, a)
			} else {
				v6 = append(v6, a)
			}
		}
		pref6 := len(m.DNS.Server) > 0 && m.DNS.Server[0].Is6()
		place := func(v6fam bool, servers []netip.Addr, pref bool) error {
			if len(servers) == 0 && !pref {
				return nil
			}
			if len(servers) == 0 && len(m.DNS.Search) == 0 && len(m.DNS.Options) == 0 {
				return nil
			}
			h := ipHolder(v6fam)
			if h == "" && pref {
				h = ipHolder(!v6fam)
				v6fam = !v6fam
			}
			if h == "" {
				detail := "DNS search or options without servers need an interface with IP in the same apply to hold them (NetworkManager's global DNS would hide the servers DHCP learns)"
				if gc {
					detail = "DNS needs an interface with IP in the state to hold it (keyfiles have no global DNS)"
				}
				return &nmstate.Error{Kind: nmstate.NotSupported, Path: "dns-resolver.config", Detail: detail}
			}
			d := &ProfileDNS{Servers: servers, Priority: 50}
			if pref {
				d.Search, d.Options, d.Priority = m.DNS.Search, m.DNS.Options, 40
			}
			e := dnsOf[h]
			if e == nil {
				e = &[2]*ProfileDNS{}
				dnsOf[h] = e
			}
			i := 0
			if v6fam {
				i = 1
			}
			e[i] = d
			return nil
		}
		err := error(nil)
		if dnsInterleaved(m.DNS.Server) {
			err = &nmstate.Error{Kind: nmstate.NotSupported, Path: "dns-resolver.config.server", Detail: "IPv4 and IPv6 servers interleaved cannot be held by profiles (one per family)"}
		}
		if err == nil {
			err = place(pref6, map[bool][]netip.Addr{true: v6, false: v4}[pref6], true)
		}
		if err == nil {
			err = place(!pref6, map[bool][]netip.Addr{true: v6, false: v4}[!pref6], false)
		}
		switch {
		case err != nil && len(m.DNS.Server) > 0 && !gc:
			// nmstate's fallback: what no profile can hold goes global.
			pp.GlobalDNS, dnsOf = globalDNSOf(m.DNS), map[string]*[2]*ProfileDNS{}
		case err != nil:
			return nil, err
		}
	}

	// Order: controllers, then the rest, then ports (NetworkManager
	// activates a port only with its controller).
	rank := func(name string) int {
		switch {
		case targetController(m, name) != "":
			return 2
		case targets[name].Type.IsController():
			return 0
		}
		return 1
	}
	slices.SortStableFunc(order, func(a, b string) int { return rank(a) - rank(b) })
	order = orderParents(order, targets)
	for _, name := range order {
		ifc := targets[name]
		in := ProfileInput{Iface: ifc, Routes: routesOf[name], Rules: rulesOf[name], Existing: current(name) != nil, Current: current(name)}
		in.Desired, in.Previous = desiredIface(m, ifc), previousSettings(existing[name])
		if d := dnsOf[name]; d != nil {
			in.DNS4, in.DNS6 = d[0], d[1]
		}
		if ctl := targetController(m, name); ctl != "" {
			in.Controller = ctl
			if c := targetOrCurrent(m, ctl); c != nil {
				in.ControllerType = c.Type
				in.ControllerIface = c
				if c.LinuxBridge != nil {
					for i := range c.LinuxBridge.Port {
						if c.LinuxBridge.Port[i].Name == name {
							in.BridgePort = &c.LinuxBridge.Port[i]
						}
					}
				}
			}
		}
		ovsAttach(m, ovsp, &in, existing[name])
		var path dbus.ObjectPath
		if p := existing[name]; p != nil {
			in.UUID = p.str("connection", "uuid")
			path = p.path
		} else {
			in.UUID = newUUID(ifc)
		}
		s, err := Profile(in)
		if err != nil {
			return nil, err
		}
		if m.DNS == nil {
			keepProfileDNS(s, existing[name])
		}
		pp.Profiles = append(pp.Profiles, PlannedProfile{Name: name, Settings: s, Path: path, Up: true})
	}
	// OVS bridges and their ports before the interfaces attached to them.
	pp.Profiles = append(ovsp.profiles, pp.Profiles...)
	pp.DeactivateFirst = deactivateFirst(pp, existing)
	return pp, nil
}

func hasKey(p *profile, sec, key string) bool {
	v, ok := p.settings[sec][key]
	if !ok {
		return false
	}
	switch vv := v.Value().(type) {
	case []uint32:
		return len(vv) > 0
	case [][]byte:
		return len(vv) > 0
	case []string:
		return len(vv) > 0
	case []map[string]dbus.Variant:
		return len(vv) > 0
	}
	return true
}

func rtTable(r nmstate.Route) uint32 {
	if r.TableID == nil || *r.TableID == 0 {
		return 254
	}
	return *r.TableID
}

// targetOrCurrent finds an interface in the change set, else in the
// current state.
func targetOrCurrent(m *nmstate.Merged, name string) *nmstate.Interface {
	if ifc := m.Interface(name, ""); ifc != nil {
		return ifc
	}
	if m.Current != nil {
		for _, c := range m.Current.Find(name) {
			return c
		}
	}
	return nil
}

// targetController names the controller of name in the target: a
// controller in the change set listing it as a port, else its own
// Controller field, else the current one.
func targetController(m *nmstate.Merged, name string) string {
	for i := range m.Interfaces {
		c := &m.Interfaces[i]
		if c.State == nmstate.StateAbsent {
			continue
		}
		if c.LinuxBridge != nil {
			for _, p := range c.LinuxBridge.Port {
				if p.Name == name {
					return c.Name
				}
			}
		}
		if c.LinkAggregation != nil && slices.Contains(c.LinkAggregation.Port, name) {
			return c.Name
		}
		if c.VRF != nil && slices.Contains(c.VRF.Port, name) {
			return c.Name
		}
	}
	if ifc := m.Interface(name, ""); ifc != nil && ifc.Controller != nil {
		if *ifc.Controller != "" && m.Interface(*ifc.Controller, "") != nil && m.Interface(*ifc.Controller, "").State == nmstate.StateAbsent {
			return ""
		}
		return *ifc.Controller
	}
	if m.Current != nil {
		for _, c := range m.Current.Find(name) {
			if c.Controller != nil {
				if ctl := m.Interface(*c.Controller, ""); ctl != nil && (ctl.State == nmstate.StateAbsent || ctl.State == nmstate.StateDown) {
					return ""
				}
				return *c.Controller
			}
		}
	}
	return ""
}

func randomUUID(*nmstate.Interface) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// portConfigChanged says whether a bond port's desired queue-id or
// priority differs from what the current bond reports for it.
func portConfigChanged(pc nmstate.BondPortConfig, bond *nmstate.Interface) bool {
	var cur nmstate.BondPortConfig
	if bond != nil && bond.LinkAggregation != nil {
		for _, c := range bond.LinkAggregation.PortsConfig {
			if c.Name == pc.Name {
				cur = c
			}
		}
	}
	return asksOtherThan(pc.QueueID, cur.QueueID) || asksOtherThan(pc.Priority, cur.Priority)
}

// asksOtherThan says whether want is set and have is not the same value.
func asksOtherThan[T comparable](want, have *T) bool {
	return want != nil && (have == nil || *want != *have)
}
