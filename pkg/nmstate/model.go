package nmstate

// DeletedByDown reports whether state down deletes an interface of this
// type: a virtual interface only exists while it is active, so deactivating
// it removes it from the kernel. A veth is the exception: nmstate handles
// it as an ethernet (its ends are often a node's NICs, e.g. the lab's eth1
// and eth2), and down only deactivates an ethernet (link down). Absent
// still deletes a veth pair.
func (t InterfaceType) DeletedByDown() bool {
	return t.IsVirtual() && t != TypeVeth
}

// Simulate returns the state a perfect backend would report after applying
// m to current: the pure model of the kernel used by property tests (revert
// round trips, the plan fixed point).
//
// The model:
//   - deleted interfaces (absent, virtual but not veth down) disappear;
//     the peer of a created veth (or of a veth whose peer changes, the
//     old peer going with the old pair) appears (state up, veth.peer
//     pointing back) when it is not reported yet; a veth set down stays,
//     down; a physical interface set absent stays, down, with both IP
//     families disabled and no controller;
//   - other change-set interfaces are replaced by their target (appended
//     when new), query-shaped: `controller: ""` becomes no controller key
//     and copy-mac-from is gone (Merge resolved it);
//   - port lists drop interfaces that no longer exist and ports of a
//     vanished controller lose their controller key;
//   - routes.config, route-rules.config, dns-resolver.config and hostname
//     are replaced when m changes them. The query-only `running` sections
//     are left as they were (the model has no DHCP, RA or resolver).
//
// Simulate(current, Merge(desired, current)) is what verification of
// desired against a perfect backend would see.
func Simulate(current *State, m *Merged) *State {
	s := current.Clone()
	if s == nil {
		s = &State{}
	}
	if m == nil {
		return s
	}
	type key struct {
		name string
		user bool
	}
	keyOf := func(i *Interface) key { return key{i.Name, i.Type.IsUserSpace()} }
	targets := make(map[key]*Interface, len(m.Interfaces))
	for k := range m.Interfaces {
		if t := &m.Interfaces[k]; targets[keyOf(t)] == nil {
			targets[keyOf(t)] = t
		}
	}
	isDeleted := func(t *Interface) bool {
		return t.State == StateAbsent || (t.State == StateDown && t.Type.DeletedByDown())
	}
	gone := map[string]bool{}
	done := map[key]bool{}
	// fresh lists the veths whose pair is created by the apply: only those
	// bring a peer along (a current veth's peer may live in another
	// namespace and is not this state's business).
	fresh := map[string]bool{}
	oldPeer := map[string]bool{}
	kept := make([]Interface, 0, len(s.Interfaces)+len(m.Interfaces))
	for i := range s.Interfaces {
		c := &s.Interfaces[i]
		t := targets[keyOf(c)]
		if t == nil || done[keyOf(c)] || !sameKind(t.Type, c.Type) {
			kept = append(kept, *c)
			continue
		}
		done[keyOf(c)] = true
		switch {
		case isDeleted(t) && !t.Type.IsVirtual():
			c.State = StateDown
			c.Controller = nil
			c.IPv4 = &IPConfig{Enabled: boolPtr(false)}
			c.IPv6 = &IPConfig{Enabled: boolPtr(false)}
			kept = append(kept, *c)
		case isDeleted(t):
			if !t.Type.IsUserSpace() {
				gone[t.Name] = true
			}
		default:
			if t.Veth != nil && c.Veth != nil && t.Veth.Peer != c.Veth.Peer {
				// A new peer means a new pair: the old peer goes with it.
				fresh[t.Name] = true
				if targets[key{c.Veth.Peer, false}] == nil {
					oldPeer[c.Veth.Peer] = true
				}
			}
			kept = append(kept, simulatedTarget(t))
		}
	}
	for k := range m.Interfaces {
		t := &m.Interfaces[k]
		if done[keyOf(t)] || isDeleted(t) {
			continue
		}
		done[keyOf(t)] = true
		if t.Veth != nil {
			fresh[t.Name] = true
		}
		kept = append(kept, simulatedTarget(t))
	}
	if len(oldPeer) > 0 {
		n := kept[:0]
		for i := range kept {
			if c := &kept[i]; !oldPeer[c.Name] || c.Type.IsUserSpace() {
				n = append(n, *c)
			} else {
				gone[c.Name] = true
			}
		}
		kept = n
	}
	s.Interfaces = kept
	// New veth pairs show both ends.
	exists := make(map[string]bool, len(s.Interfaces))
	for i := range s.Interfaces {
		exists[s.Interfaces[i].Name] = true
	}
	for i := 0; i < len(s.Interfaces); i++ {
		c := &s.Interfaces[i]
		if !fresh[c.Name] || c.Veth == nil || c.Veth.Peer == "" || exists[c.Veth.Peer] {
			continue
		}
		exists[c.Veth.Peer] = true
		s.Interfaces = append(s.Interfaces, Interface{Name: c.Veth.Peer, Type: TypeVeth, State: StateUp, Veth: &Veth{Peer: c.Name}})
	}
	simulateConsistency(s)
	if m.Routes != nil {
		if s.Routes == nil {
			s.Routes = &Routes{}
		}
		s.Routes.Config = cloneOf(m.Routes)
	}
	if m.RouteRules != nil {
		if s.RouteRules == nil {
			s.RouteRules = &RouteRules{}
		}
		s.RouteRules.Config = cloneOf(m.RouteRules)
	}
	if m.DNS != nil {
		if s.DNSResolver == nil {
			s.DNSResolver = &DNSResolver{}
		}
		s.DNSResolver.Config = cloneOf(m.DNS)
	}
	if m.Hostname != nil {
		s.Hostname = cloneOf(m.Hostname)
	}
	if m.OVSDB != nil {
		s.OVSDB, s.OVN = OVSGlobalState(*m.OVSDB)
	}
	return s
}

// simulatedTarget is a change-set target as a backend would report it.
func simulatedTarget(t *Interface) Interface {
	n := *t.Clone()
	if n.Controller != nil && *n.Controller == "" {
		n.Controller = nil
	}
	n.CopyMACFrom = nil
	// OVSDB drops removed keys, and an OVS port without VLAN settings
	// reports none.
	n.OVSDB = normOVSDB(n.OVSDB)
	if n.OVSBridge != nil {
		for i := range n.OVSBridge.Port {
			if n.OVSBridge.Port[i].VLAN.IsEmpty() {
				n.OVSBridge.Port[i].VLAN = nil
			}
		}
	}
	return n
}

// simulateConsistency keeps port lists and controller keys in agreement
// with the interfaces that exist, as the kernel does.
func simulateConsistency(s *State) {
	exists := map[string]bool{}
	for i := range s.Interfaces {
		exists[s.Interfaces[i].Name] = true
	}
	for i := range s.Interfaces {
		c := &s.Interfaces[i]
		if c.Controller != nil && !exists[*c.Controller] {
			c.Controller = nil
		}
		ports, ok := c.Ports()
		if !ok {
			continue
		}
		for _, p := range ports {
			if !exists[p] && c.Type != TypeOVSBridge {
				removePort(c, p)
			}
		}
	}
}
