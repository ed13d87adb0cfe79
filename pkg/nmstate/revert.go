package nmstate

import (
	"net/netip"
	"reflect"
	"slices"
	"sort"
)

// Revert returns the desired state that undoes applying desired to before
// (nmstate's gen_revert): applied to the state after the apply it gives
// back before, as far as a desired state can express it.
//
//   - created interfaces become absent (listed first);
//   - an interface before reported ignored stays ignored;
//   - every other interface of the change set (modified, deleted, pulled
//     in) gets its full configuration from before, query-only keys
//     removed (min/max-mtu, permanent MAC, driver, LLDP neighbours, tun),
//     dynamic and IPv6 link-local addresses dropped (DHCP and the kernel
//     bring those back); its controller key is given ("" when it had none)
//     when the apply changed it;
//   - routes and rules the apply added become exact absent patterns (all
//     their fields given, unset gateway/source/prefixes as "" = must be
//     unset), routes and rules it removed are given again;
//   - DNS and hostname get before's values when the apply changed them.
//
// A key before did not report cannot be restored (nmstate has no "unset");
// states reported by a backend report every key they support. Applying a
// state that changes nothing reverts with the empty state.
func Revert(before, desired *State) (*State, error) {
	if before == nil {
		before = &State{}
	}
	m, err := Merge(desired, before)
	if err != nil {
		return nil, err
	}
	after := Simulate(before, m)
	out := &State{}
	var created, restored []Interface
	pos := map[string]int{}
	for k := range m.Interfaces {
		t := &m.Interfaces[k]
		b := findSameKind(before, t.Name, t.Type)
		if b == nil {
			if t.State == StateAbsent || (t.State == StateDown && t.Type.DeletedByDown()) {
				continue
			}
			created = append(created, Interface{Name: t.Name, Type: t.Type, State: StateAbsent})
			continue
		}
		if b.State == StateIgnore {
			// What the backend left alone before (NetworkManager's
			// unmanaged devices) is left alone again: the backend's own
			// checkpoint gives it back its unmanaged state, and a revert
			// "up" would make the backend take it over once more.
			restored = append(restored, Interface{Name: b.Name, Type: b.Type, State: StateIgnore})
			pos[t.Name] = indexOf(before, b)
			continue
		}
		r := revertIface(b)
		if a := findSameKind(after, t.Name, t.Type); a != nil && ctrlName(a) != ctrlName(b) {
			r.Controller = strPtr(ctrlName(b))
		}
		if a := findSameKind(after, t.Name, t.Type); a != nil {
			r.AltNames = revertAltNames(b.AltNames, a.AltNames)
		}
		restored = append(restored, r)
		pos[t.Name] = indexOf(before, b)
	}
	// Restore in before's order: it lists controllers and ports as they
	// were reported, which keeps the revert readable.
	sort.SliceStable(restored, func(i, j int) bool { return pos[restored[i].Name] < pos[restored[j].Name] })
	// The peer of a created veth was created with it.
	for k := range created {
		if a := findSameKind(after, created[k].Name, created[k].Type); a != nil && a.Veth != nil {
			if p := a.Veth.Peer; findSameKind(before, p, TypeVeth) == nil && !hasIface(created, p) {
				created = append(created, Interface{Name: p, Type: TypeVeth, State: StateAbsent})
			}
		}
	}
	out.Interfaces = append(created, restored...)
	if m.Routes != nil {
		out.Routes = &Routes{Config: revertRoutes(configRoutes(before), configRoutes(after))}
	}
	if m.RouteRules != nil {
		out.RouteRules = &RouteRules{Config: revertRules(configRules(before), configRules(after))}
	}
	if m.DNS != nil {
		c := &DNSConfig{}
		if before.DNSResolver != nil && before.DNSResolver.Config != nil {
			c = cloneOf(before.DNSResolver.Config)
		}
		out.DNSResolver = &DNSResolver{Config: fullDNS(c)}
	}
	if m.Hostname != nil && before.Hostname != nil {
		out.Hostname = cloneOf(before.Hostname)
	}
	if m.OVSDB != nil {
		out.OVSDB = revertOVSGlobal(OVSGlobalOf(before), *m.OVSDB)
	}
	revertOVSDBIfaces(out, after)
	return out, nil
}

func indexOf(s *State, ifc *Interface) int {
	for i := range s.Interfaces {
		if &s.Interfaces[i] == ifc {
			return i
		}
	}
	return -1
}

func hasIface(l []Interface, name string) bool {
	for i := range l {
		if l[i].Name == name {
			return true
		}
	}
	return false
}

func findSameKind(s *State, name string, typ InterfaceType) *Interface {
	for i := range s.Interfaces {
		c := &s.Interfaces[i]
		if c.Name == name && c.Type.IsUserSpace() == typ.IsUserSpace() && sameKind(typ, c.Type) {
			return c
		}
	}
	return nil
}

func ctrlName(i *Interface) string {
	if i.Controller == nil {
		return ""
	}
	return *i.Controller
}

// revertIface is a reported interface turned into a desired one.
func revertIface(b *Interface) Interface {
	r := *b.Clone()
	if r.State == "" || r.State == StateUnknown || r.State == StateIgnore {
		r.State = StateUp
	}
	r.MinMTU, r.MaxMTU, r.PermanentMACAddress, r.Driver = nil, nil, nil, nil
	r.Tun = nil
	if r.LLDP != nil {
		r.LLDP.Neighbors = nil
	}
	if r.Ethtool != nil && r.Ethtool.Ring != nil {
		g := r.Ethtool.Ring
		g.RXMax, g.RXJumboMax, g.RXMiniMax, g.TXMax = nil, nil, nil, nil
	}
	if r.Ethernet != nil && r.Ethernet.SRIOV != nil {
		for j := range r.Ethernet.SRIOV.VFs {
			r.Ethernet.SRIOV.VFs[j].IfaceName = nil
		}
	}
	for _, ip := range []*IPConfig{r.IPv4, r.IPv6} {
		if ip != nil && ip.Address != nil {
			ip.Address = staticAddrs(ip.Address, false)
		}
	}
	return r
}

// revertAltNames restores before's alternative names over after's: alt
// names change incrementally, so the names the apply added are given as
// absent and those it removed are given again. nil when nothing changed.
func revertAltNames(before, after *[]AltName) *[]AltName {
	has := func(l *[]AltName, name string) bool {
		return l != nil && slices.ContainsFunc(*l, func(a AltName) bool { return a.Name == name })
	}
	var out []AltName
	if before != nil {
		for _, a := range *before {
			out = append(out, AltName{Name: a.Name})
		}
	}
	changed := false
	if after != nil {
		for _, a := range *after {
			if !has(before, a.Name) {
				out = append(out, AltName{Name: a.Name, State: ptrTo(AltNameState("absent"))})
				changed = true
			}
		}
	}
	if before != nil {
		for _, a := range *before {
			if !has(after, a.Name) {
				changed = true
			}
		}
	}
	if !changed {
		return before
	}
	return &out
}

func configRoutes(s *State) []Route {
	if s.Routes == nil {
		return nil
	}
	return s.Routes.Config
}

func configRules(s *State) []RouteRule {
	if s.RouteRules == nil {
		return nil
	}
	return s.RouteRules.Config
}

// revertRoutes removes the routes after has and before had not (exact
// patterns) and gives back the ones before had and after has not.
func revertRoutes(before, after []Route) []Route {
	return revertList(before, after, func(p Route) Route {
		p.State = ptrTo(RouteState("absent"))
		if p.NextHopAddress == nil {
			p.NextHopAddress = ptrTo(netip.Addr{})
		}
		if p.Source == nil {
			p.Source = ptrTo(netip.Addr{})
		}
		return p
	})
}

// revertRules is revertRoutes for rules.
func revertRules(before, after []RouteRule) []RouteRule {
	return revertList(before, after, func(p RouteRule) RouteRule {
		p.State = ptrTo(RouteState("absent"))
		if p.IPFrom == nil {
			p.IPFrom = ptrTo(netip.Prefix{})
		}
		if p.IPTo == nil {
			p.IPTo = ptrTo(netip.Prefix{})
		}
		return p
	})
}

// revertList gives, for entries of after that before lacks, their removal
// pattern (absent, applied to a clone), then clones of the entries of
// before that after lacks.
func revertList[T any](before, after []T, absent func(T) T) []T {
	out := []T{}
	in := func(l []T, v *T) bool {
		for i := range l {
			if reflect.DeepEqual(&l[i], v) {
				return true
			}
		}
		return false
	}
	for i := range after {
		if v := &after[i]; !in(before, v) {
			out = append(out, absent(cloneOf(*v)))
		}
	}
	for i := range before {
		if v := &before[i]; !in(after, v) {
			out = append(out, cloneOf(*v))
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
