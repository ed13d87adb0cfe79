package nmstate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Merge merges a desired (partial) state into the current state with
// nmstate's rules and returns the change set (see Merged).
//
// It first resolves `identifier: mac-address` interfaces to the name of the
// NIC carrying that MAC and then runs Validate; a validation failure is
// returned unchanged (an ErrorList). Untyped interfaces then take the type
// of the current interface of that name (an untyped absent one matches
// every current interface of that name). A nil current is taken as an
// empty one (nothing exists yet).
//
// The rules, in nmstate's words where they have one:
//   - unmentioned interfaces are untouched; `state: ignore` excludes one;
//   - unset properties keep their current value (object merge); given
//     lists replace (ports, addresses, VFs, DNS lists);
//   - the IP special merge (mergeIP); bond options are not inherited when
//     the mode changes; linux/OVS bridge ports inherit their per-port
//     settings (vlan, stp) when the desired port omits them;
//   - copy-mac-from becomes mac-address (source's permanent MAC, else its
//     current MAC);
//   - ports attached to or detached from a controller are pulled into the
//     change set (detached ones with controller ""), as are controllers
//     whose port list changes through a port-side `controller:` key;
//     ports of a deleted controller are detached; ports lose IP unless
//     they are VRF ports or OVS internal interfaces;
//   - ports currently `ignore` that a desired controller attaches are
//     managed (state up);
//   - children of a deleted parent (vlan, vxlan, mac-vlan, ...) and the
//     peer of a deleted veth are deleted too; it is an error to desire such
//     a child up;
//   - `down` of a virtual interface deletes it, except a veth: nmstate
//     unifies veth into ethernet, so an `ethernet` desired over a current
//     veth (and a `veth` over a reported ethernet) is that interface,
//     modified in place with its current type, and `down` only
//     deactivates it (DeletedByDown);
//   - the target state is the desired one (default up), never the current
//     one: interfaces pulled into the change set (ports attached to or
//     detached from a controller, controllers whose port list changes) are
//     activated with their controller, so an admin-down port comes up;
//   - desired routes marked `state: ignore` are dropped, and a route's
//     `vrf-name` becomes the `table-id` of that VRF (resolveRouteRefs);
//   - routes, rules, DNS and hostname: see mergeRoutes, mergeRules,
//     mergeDNS, mergeHostname.
//
// Change-set entries whose target equals the current interface exactly
// are left out, so merging a state that already holds gives an empty
// change set.
//
// Merge never modifies its arguments. The change set, routes, rules, DNS
// and hostname are fresh copies; Merged.Desired is a shallow copy of
// desired (its interface list is new, values behind pointers are shared),
// and Merged.Current is current itself.
func Merge(desired, current *State) (*Merged, error) {
	if desired == nil {
		desired = &State{}
	}
	cur := current
	if cur == nil {
		cur = &State{}
	}
	desired = keepHiddenSecrets(desired, cur)
	// A shallow copy: resolution only rewrites top-level interface fields
	// (name, type, profile-name), never values behind pointers.
	dv := *desired
	dv.Interfaces = append([]Interface(nil), desired.Interfaces...)
	d := &dv
	mg := newMerger(d, cur)
	if mg.resolveMACIdentifiers(); len(mg.errs) > 0 {
		return nil, mg.errs
	}
	if mg.resolveRouteRefs(); len(mg.errs) > 0 {
		return nil, mg.errs
	}
	if errs := Validate(d, current); len(errs) > 0 {
		return nil, errs
	}
	steps := []func(){
		mg.resolveUntyped, mg.interfaces, mg.controllers, mg.orphans, mg.vethPeers,
		mg.copyMAC, mg.portIPs, mg.collect, mg.mergeRoutes, mg.mergeRules, mg.mergeDNS, mg.mergeHostname,
		mg.mergeOVSGlobal,
	}
	for _, step := range steps {
		if step(); len(mg.errs) > 0 {
			return nil, mg.errs
		}
	}
	return mg.m, nil
}

// mgEntry is one interface of the change set under construction.
type mgEntry struct {
	t   Interface  // target configuration
	cur *Interface // current interface, nil when it is created
	idx int        // index in the desired interfaces, -1 when pulled in
	// del: the kernel object goes away (absent, or a virtual interface
	// other than veth set down); t then holds only name, type and state.
	del bool
}

type merger struct {
	d, cur *State
	m      *Merged
	errs   ErrorList

	entries []*mgEntry
	// byName indexes entries and current interfaces; user-space interfaces
	// (OVS bridges) may share a name with a kernel one.
	byName    map[string][]*mgEntry
	curByName map[string][]*Interface
	// curPortsOf lists the current interfaces whose controller is the key.
	curPortsOf map[string][]string
	// curCtrlOf maps a current port to the controller listing it.
	curCtrlOf map[string]string
	ignored   map[string]bool
}

func newMerger(d, cur *State) *merger {
	mg := &merger{
		d: d, cur: cur,
		m:          &Merged{Desired: d, Current: cur},
		byName:     map[string][]*mgEntry{},
		curByName:  map[string][]*Interface{},
		curPortsOf: map[string][]string{},
		curCtrlOf:  map[string]string{},
		ignored:    map[string]bool{},
	}
	for i := range cur.Interfaces {
		c := &cur.Interfaces[i]
		mg.curByName[c.Name] = append(mg.curByName[c.Name], c)
		if c.Controller != nil && *c.Controller != "" {
			mg.curPortsOf[*c.Controller] = append(mg.curPortsOf[*c.Controller], c.Name)
		}
		if ports, ok := c.Ports(); ok {
			for _, p := range ports {
				mg.curCtrlOf[p] = c.Name
			}
		}
	}
	return mg
}

func (mg *merger) fail(k Kind, p Path, format string, args ...any) {
	mg.errs = append(mg.errs, &Error{Kind: k, Path: p, Detail: fmt.Sprintf(format, args...)})
}

// sameKind reports whether a desired type may refer to a current interface
// of type have (veth is reported as ethernet by some backends and vice
// versa).
func sameKind(want, have InterfaceType) bool {
	if want == "" || want == have {
		return true
	}
	eth := func(t InterfaceType) bool { return t == TypeEthernet || t == TypeVeth }
	return eth(want) && eth(have)
}

// curIface returns the current interface of this name in the namespace of
// typ (kernel or user space); typ "" prefers a kernel interface.
func (mg *merger) curIface(name string, typ InterfaceType) *Interface {
	var found *Interface
	for _, c := range mg.curByName[name] {
		if typ == "" {
			if found == nil || found.Type.IsUserSpace() {
				found = c
			}
			continue
		}
		if c.Type.IsUserSpace() == typ.IsUserSpace() {
			return c
		}
	}
	return found
}

// entry returns the change-set entry of this name (typ "" prefers a
// kernel interface), or nil.
func (mg *merger) entry(name string, typ InterfaceType) *mgEntry {
	var found *mgEntry
	for _, e := range mg.byName[name] {
		if typ == "" {
			if found == nil || found.t.Type.IsUserSpace() {
				found = e
			}
			continue
		}
		if e.t.Type.IsUserSpace() == typ.IsUserSpace() {
			return e
		}
	}
	return found
}

func (mg *merger) add(e *mgEntry) *mgEntry {
	mg.entries = append(mg.entries, e)
	mg.byName[e.t.Name] = append(mg.byName[e.t.Name], e)
	return e
}

// pull returns the entry of a kernel interface, pulling the current one
// into the change set when it is not there yet; nil when the interface
// does not exist or the user asked to ignore it. A pulled-in interface
// keeps its current configuration but not its current state: the target
// state of anything the apply touches is up unless the desired state says
// otherwise (nmstate activates ports with their controller).
func (mg *merger) pull(name string) *mgEntry {
	if e := mg.entry(name, ""); e != nil {
		return e
	}
	if mg.ignored[name] {
		return nil
	}
	c := mg.curIface(name, "")
	if c == nil {
		return nil
	}
	e := mg.add(&mgEntry{t: *c.Clone(), cur: c, idx: -1})
	e.t.State = StateUp
	return e
}

// markDeleted turns an entry into a deletion.
func (e *mgEntry) markDeleted(state InterfaceState) {
	e.del = true
	e.t = Interface{Name: e.t.Name, Type: e.t.Type, State: state}
}

func (mg *merger) resolveMACIdentifiers() {
	for i := range mg.d.Interfaces {
		ifc := &mg.d.Interfaces[i]
		if ifc.Identifier == nil || *ifc.Identifier != "mac-address" {
			continue
		}
		p := ifacePath(i)
		if ifc.MACAddress == nil {
			mg.fail(InvalidArgument, p.Key("mac-address"), "is required with identifier mac-address")
			continue
		}
		want := MAC(strings.ToUpper(string(*ifc.MACAddress)))
		var perm, now []string
		for _, c := range mg.cur.Interfaces {
			if c.Type.IsUserSpace() {
				continue
			}
			if c.PermanentMACAddress != nil && MAC(strings.ToUpper(string(*c.PermanentMACAddress))) == want {
				perm = append(perm, c.Name)
			} else if c.MACAddress != nil && MAC(strings.ToUpper(string(*c.MACAddress))) == want {
				now = append(now, c.Name)
			}
		}
		names := perm
		if len(names) == 0 {
			names = now
		}
		switch len(names) {
		case 0:
			mg.fail(InvalidArgument, p.Key("mac-address"), "no interface has MAC address %s", want)
		case 1:
			if ifc.ProfileName == nil {
				ifc.ProfileName = strPtr(ifc.Name)
			}
			ifc.Name = names[0]
		default:
			mg.fail(InvalidArgument, p.Key("mac-address"), "MAC address %s matches several interfaces (%s)", want, strings.Join(names, ", "))
		}
	}
}

func strPtr(s string) *string { return &s }

// resolveUntyped gives untyped interfaces the type of the current one. An
// untyped absent interface matches every current interface of that name:
// the extra matches are appended to the desired interfaces.
func (mg *merger) resolveUntyped() {
	n := len(mg.d.Interfaces)
	for i := 0; i < n; i++ {
		ifc := &mg.d.Interfaces[i]
		if ifc.Type != "" {
			continue
		}
		matches := mg.curByName[ifc.Name]
		switch {
		case len(matches) == 0 && ifc.State == StateAbsent:
			// Nothing to remove; the entry stays untyped and is skipped.
		case len(matches) == 0:
			mg.fail(InvalidArgument, ifacePath(i), "interface %s has no type and is not in the current state", ifc.Name)
		case ifc.State == StateAbsent:
			ifc.Type = matches[0].Type
			for _, c := range matches[1:] {
				mg.d.Interfaces = append(mg.d.Interfaces, Interface{Name: c.Name, Type: c.Type, State: StateAbsent})
				ifc = &mg.d.Interfaces[i]
			}
		case len(matches) > 1:
			mg.fail(InvalidArgument, ifacePath(i), "interface %s has no type and matches %d current interfaces", ifc.Name, len(matches))
		default:
			ifc.Type = matches[0].Type
		}
	}
}

func (mg *merger) interfaces() {
	for i := range mg.d.Interfaces {
		ifc := &mg.d.Interfaces[i]
		if ifc.State == StateIgnore {
			mg.ignored[ifc.Name] = true
		}
	}
	for i := range mg.d.Interfaces {
		ifc := &mg.d.Interfaces[i]
		if ifc.State == StateIgnore || ifc.Type == "" {
			continue
		}
		c := mg.curIface(ifc.Name, ifc.Type)
		if c != nil && !sameKind(ifc.Type, c.Type) {
			if ifc.State == StateAbsent || ifc.State == StateDown {
				continue // nothing of that type to remove
			}
			mg.fail(NotSupported, ifacePath(i).Key("type"), "%s exists as a %s; changing the type of an interface needs it removed first", ifc.Name, c.Type)
			continue
		}
		typ := ifc.Type
		if c != nil {
			// veth and ethernet are one kind; the interface keeps the type
			// it has (changing it would re-create it).
			typ = c.Type
		}
		st := ifc.EffectiveState()
		switch {
		case st == StateAbsent || (st == StateDown && typ.DeletedByDown()):
			if c == nil {
				continue // already gone
			}
			e := &mgEntry{t: Interface{Name: ifc.Name, Type: typ}, cur: c, idx: i}
			e.markDeleted(st)
			mg.add(e)
		case st == StateDown && c == nil && typ == TypeVeth:
			continue // nothing to deactivate; down does not create a pair
		default:
			t := mergeIface(ifc, c)
			t.Type = typ
			mg.add(&mgEntry{t: t, cur: c, idx: i})
		}
	}
}

// mergeIface computes the target of a desired interface from the current
// one (nil when it is created).
func mergeIface(d, c *Interface) Interface {
	var t Interface
	if c == nil {
		t = *d.Clone()
	} else {
		t = mergeValues(reflect.ValueOf(d).Elem(), reflect.ValueOf(c).Elem()).Interface().(Interface)
	}
	t.State = d.EffectiveState()
	// profile-name and identifier name a NetworkManager profile; the
	// kernel has nothing to hold them (the identifier is resolved).
	t.ProfileName, t.Identifier = nil, nil
	var curIP4, curIP6 *IPConfig
	if c != nil {
		curIP4, curIP6 = c.IPv4, c.IPv6
	}
	ip4, ip6 := mergeIP(d.IPv4, curIP4, false), mergeIP(d.IPv6, curIP6, true)
	if c == nil {
		t.IPv4, t.IPv6 = ip4, ip6
		t.AltNames = mergeAltNames(d.AltNames, nil)
		return t
	}
	t.AltNames = mergeAltNames(d.AltNames, c.AltNames)
	modeChanged := d.LinkAggregation != nil && d.LinkAggregation.Mode != nil &&
		(c.LinkAggregation == nil || c.LinkAggregation.Mode == nil || *c.LinkAggregation.Mode != *d.LinkAggregation.Mode)
	t.IPv4, t.IPv6 = ip4, ip6
	if modeChanged {
		// Options of one mode rarely make sense in another; nmstate does
		// not carry them over.
		t.LinkAggregation.Options = cloneOf(d.LinkAggregation.Options)
	}
	if d.LinuxBridge != nil && d.LinuxBridge.Port != nil && c.LinuxBridge != nil {
		for j := range t.LinuxBridge.Port {
			p := &t.LinuxBridge.Port[j]
			for k := range c.LinuxBridge.Port {
				if c.LinuxBridge.Port[k].Name == p.Name {
					// `vlan: {}` resets the port's VLAN configuration
					// (upstream): nothing of the current one is kept.
					reset := p.VLAN != nil && p.VLAN.IsEmpty()
					fillFrom(p, &c.LinuxBridge.Port[k])
					if reset {
						p.VLAN = &BridgeVLAN{}
					}
				}
			}
		}
	}
	if d.OVSBridge != nil && d.OVSBridge.Port != nil && c.OVSBridge != nil {
		for j := range t.OVSBridge.Port {
			p := &t.OVSBridge.Port[j]
			for k := range c.OVSBridge.Port {
				if cp := &c.OVSBridge.Port[k]; cp.Name == p.Name && p.VLAN == nil && cp.VLAN != nil {
					p.VLAN = cloneOf(cp.VLAN)
				}
			}
		}
	}
	return t
}

// currentPorts lists the ports a controller holds now: its reported port
// list plus the interfaces reporting it as their controller.
func (mg *merger) currentPorts(name string, c *Interface) []string {
	var out []string
	seen := map[string]bool{}
	if c != nil {
		ports, _ := c.Ports()
		for _, p := range ports {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	for _, p := range mg.curPortsOf[name] {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// currentController returns the controller a current interface is a port
// of, or "".
func (mg *merger) currentController(name string) string {
	c := mg.curIface(name, "")
	if c != nil && c.Controller != nil {
		return *c.Controller
	}
	return mg.curCtrlOf[name]
}

func (mg *merger) controllers() {
	claims := map[string]string{} // port -> controller ("" = detached)
	var order []string
	claim := func(port, ctrl string) {
		if _, ok := claims[port]; !ok {
			order = append(order, port)
		}
		claims[port] = ctrl
	}
	listed := map[string]*mgEntry{}
	for _, e := range mg.entries {
		if e.idx < 0 || e.del {
			continue
		}
		ports, ok := mg.d.Interfaces[e.idx].Ports()
		if !ok {
			continue
		}
		listed[e.t.Name] = e
		for _, p := range ports {
			claim(p, e.t.Name)
		}
	}
	// Port-side `controller:` keys towards controllers whose port list is
	// not given: the controller's list changes, so it joins the change set.
	for _, e := range append([]*mgEntry(nil), mg.entries...) {
		if e.idx < 0 || e.del || mg.d.Interfaces[e.idx].Controller == nil {
			continue
		}
		if _, ok := claims[e.t.Name]; ok {
			continue
		}
		x := *mg.d.Interfaces[e.idx].Controller
		claim(e.t.Name, x)
		old := mg.currentController(e.t.Name)
		if x != "" && listed[x] == nil && old != x {
			if ce := mg.pull(x); ce != nil && !ce.del {
				addPort(&ce.t, e.t.Name)
			}
		}
		if old != "" && old != x && listed[old] == nil {
			if oe := mg.pull(old); oe != nil && !oe.del {
				removePort(&oe.t, e.t.Name)
			}
		}
	}
	// Attached and detached ports of controllers with a desired port list.
	for _, e := range mg.entries {
		if listed[e.t.Name] != e {
			continue
		}
		want, _ := mg.d.Interfaces[e.idx].Ports()
		have := mg.currentPorts(e.t.Name, e.cur)
		for _, p := range want {
			if contains(have, p) {
				continue
			}
			pe := mg.pull(p)
			if pe == nil {
				if e.t.Type == TypeOVSBridge && mg.curIface(p, "") == nil {
					// An unknown OVS port is an internal interface to create.
					mg.add(&mgEntry{t: Interface{Name: p, Type: TypeOVSInterface, State: StateUp}, idx: -1})
					continue
				}
				if !mg.ignored[p] {
					mg.fail(Dependency, ifacePath(e.idx), "controller %s holds unknown port %s", e.t.Name, p)
				}
				continue
			}
			if pe.cur != nil && pe.cur.State == StateIgnore && pe.idx < 0 {
				pe.t.State = StateUp
			}
			// A port taken from a controller whose port list is not
			// given leaves that list.
			if old := mg.currentController(p); old != "" && old != e.t.Name && listed[old] == nil {
				if oe := mg.pull(old); oe != nil && !oe.del {
					removePort(&oe.t, p)
				}
			}
		}
		for _, p := range have {
			if contains(want, p) {
				continue
			}
			if _, ok := claims[p]; !ok {
				claim(p, "")
			}
		}
	}
	// Ports of deleted controllers are released.
	for _, e := range append([]*mgEntry(nil), mg.entries...) {
		if !e.del || !e.t.Type.IsVirtual() {
			continue
		}
		for _, p := range mg.currentPorts(e.t.Name, e.cur) {
			if _, ok := claims[p]; !ok {
				claim(p, "")
			}
		}
	}
	for _, p := range order {
		ctrl := claims[p]
		pe := mg.pull(p)
		if pe == nil || pe.del {
			continue
		}
		if ctrl == "" && pe.t.Type == TypeOVSInterface {
			// An OVS internal interface cannot live without its bridge.
			pe.markDeleted(StateAbsent)
			continue
		}
		if ctrl == "" && mg.currentController(p) == "" {
			// Not a port now: detaching changes nothing.
			pe.t.Controller = nil
			continue
		}
		pe.t.Controller = strPtr(ctrl)
	}
}

// addPort appends a port name to a controller's port list.
func addPort(ifc *Interface, port string) {
	switch ifc.Type {
	case TypeBond:
		if ifc.LinkAggregation == nil {
			ifc.LinkAggregation = &Bond{}
		}
		if !contains(ifc.LinkAggregation.Port, port) {
			ifc.LinkAggregation.Port = append(ifc.LinkAggregation.Port, port)
		}
	case TypeLinuxBridge:
		if ifc.LinuxBridge == nil {
			ifc.LinuxBridge = &LinuxBridge{}
		}
		for _, p := range ifc.LinuxBridge.Port {
			if p.Name == port {
				return
			}
		}
		ifc.LinuxBridge.Port = append(ifc.LinuxBridge.Port, LinuxBridgePort{Name: port})
	case TypeOVSBridge:
		if ifc.OVSBridge == nil {
			ifc.OVSBridge = &OVSBridge{}
		}
		for _, p := range ifc.OVSBridge.Port {
			if p.Name == port {
				return
			}
		}
		ifc.OVSBridge.Port = append(ifc.OVSBridge.Port, OVSBridgePort{Name: port})
	case TypeVRF:
		if ifc.VRF == nil {
			ifc.VRF = &VRF{}
		}
		if !contains(ifc.VRF.Port, port) {
			ifc.VRF.Port = append(ifc.VRF.Port, port)
		}
	}
}

// removePort drops a port name from a controller's port list.
func removePort(ifc *Interface, port string) {
	drop := func(l []string) []string {
		out := make([]string, 0, len(l))
		for _, p := range l {
			if p != port {
				out = append(out, p)
			}
		}
		return out
	}
	switch {
	case ifc.LinkAggregation != nil && ifc.LinkAggregation.Port != nil:
		ifc.LinkAggregation.Port = drop(ifc.LinkAggregation.Port)
	case ifc.LinuxBridge != nil && ifc.LinuxBridge.Port != nil:
		out := []LinuxBridgePort{}
		for _, p := range ifc.LinuxBridge.Port {
			if p.Name != port {
				out = append(out, p)
			}
		}
		ifc.LinuxBridge.Port = out
	case ifc.OVSBridge != nil && ifc.OVSBridge.Port != nil:
		out := []OVSBridgePort{}
		for _, p := range ifc.OVSBridge.Port {
			if p.Name != port {
				out = append(out, p)
			}
		}
		ifc.OVSBridge.Port = out
	case ifc.VRF != nil && ifc.VRF.Port != nil:
		ifc.VRF.Port = drop(ifc.VRF.Port)
	}
}

// orphans deletes the children of deleted virtual parents, level by level.
func (mg *merger) orphans() {
	for changed := true; changed; {
		changed = false
		for i := range mg.cur.Interfaces {
			c := &mg.cur.Interfaces[i]
			parent := c.Parent()
			if parent == "" {
				continue
			}
			pe := mg.entry(parent, "")
			if pe == nil || !pe.del || !pe.t.Type.IsVirtual() {
				continue
			}
			ce := mg.entry(c.Name, c.Type)
			switch {
			case ce == nil:
				e := &mgEntry{t: Interface{Name: c.Name, Type: c.Type}, cur: c, idx: -1}
				e.markDeleted(StateAbsent)
				mg.add(e)
				changed = true
			case ce.del:
			case ce.idx >= 0:
				mg.fail(InvalidArgument, ifacePath(ce.idx), "%s cannot be up: its parent %s is removed", c.Name, parent)
				return
			default:
				ce.markDeleted(StateAbsent)
				changed = true
			}
		}
	}
}

// vethPeers deletes the other end of a deleted veth pair (the kernel
// removes both ends together).
func (mg *merger) vethPeers() {
	for _, e := range append([]*mgEntry(nil), mg.entries...) {
		if !e.del || e.cur == nil || e.cur.Veth == nil {
			continue
		}
		peer := e.cur.Veth.Peer
		pe := mg.entry(peer, "")
		switch {
		case pe == nil:
			if c := mg.curIface(peer, ""); c != nil {
				ne := &mgEntry{t: Interface{Name: c.Name, Type: c.Type}, cur: c, idx: -1}
				ne.markDeleted(StateAbsent)
				mg.add(ne)
			}
		case pe.del:
		case pe.idx >= 0:
			mg.fail(InvalidArgument, ifacePath(pe.idx), "%s cannot be up: it is the veth peer of %s, which is removed", peer, e.t.Name)
		default:
			pe.markDeleted(StateAbsent)
		}
	}
}

func (mg *merger) copyMAC() {
	for _, e := range mg.entries {
		if e.del || e.t.CopyMACFrom == nil {
			continue
		}
		src := *e.t.CopyMACFrom
		var mac *MAC
		if c := mg.curIface(src, ""); c != nil {
			switch {
			case c.PermanentMACAddress != nil && *c.PermanentMACAddress != "":
				mac = c.PermanentMACAddress
			case c.MACAddress != nil && *c.MACAddress != "":
				mac = c.MACAddress
			}
		}
		if se := mg.entry(src, ""); mac == nil && se != nil && !se.del && se.t.MACAddress != nil {
			mac = se.t.MACAddress
		}
		p := Path("")
		if e.idx >= 0 {
			p = ifacePath(e.idx).Key("copy-mac-from")
		}
		if mac == nil {
			mg.fail(InvalidArgument, p, "the MAC address of %s is not known", src)
			continue
		}
		m := MAC(strings.ToUpper(string(*mac)))
		e.t.MACAddress = &m
		e.t.CopyMACFrom = nil
	}
}

// controllerType is the type the named controller has after the apply.
func (mg *merger) controllerType(name string) InterfaceType {
	if e := mg.entry(name, ""); e != nil {
		return e.t.Type
	}
	if c := mg.curIface(name, ""); c != nil {
		return c.Type
	}
	return ""
}

// portIPs removes IP from ports that cannot hold it (nmstate's
// can_have_ip: all ports but VRF ports and OVS internal interfaces).
func (mg *merger) portIPs() {
	for _, e := range mg.entries {
		if e.del || e.t.Controller == nil || *e.t.Controller == "" {
			continue
		}
		if portMayHaveIP(mg.controllerType(*e.t.Controller), e.t.Type) {
			continue
		}
		e.t.IPv4 = &IPConfig{Enabled: boolPtr(false)}
		e.t.IPv6 = &IPConfig{Enabled: boolPtr(false)}
	}
}

// collect fills Merged.Interfaces: desired order first, pulled-in entries
// after, without entries that change nothing.
func (mg *merger) collect() {
	out := make([]Interface, 0, len(mg.entries))
	add := func(e *mgEntry) {
		if !e.del && e.cur != nil && sameAsCurrent(&e.t, e.cur) {
			return
		}
		if e.idx < 0 && !e.del && e.cur != nil {
			// A pulled-in interface whose only change would be its state
			// is not changed by the apply: leave it alone.
			t := e.t
			t.State = e.cur.State
			if sameAsCurrent(&t, e.cur) {
				return
			}
		}
		if e.del && e.cur != nil && !e.t.Type.IsVirtual() && releasedNIC(e.cur) {
			return // a NIC cannot be deleted; this one is already released
		}
		out = append(out, e.t)
	}
	for _, e := range mg.entries {
		if e.idx >= 0 {
			add(e)
		}
	}
	for _, e := range mg.entries {
		if e.idx < 0 {
			add(e)
		}
	}
	mg.m.Interfaces = out
}

// releasedNIC reports whether a physical interface already looks like an
// absent one: down, no IP, no controller.
func releasedNIC(c *Interface) bool {
	off := func(ip *IPConfig) bool { return ip == nil || isFalse(ip.Enabled) }
	return c.State == StateDown && off(c.IPv4) && off(c.IPv6) && (c.Controller == nil || *c.Controller == "")
}

// sameAsCurrent reports whether a target changes nothing on the current
// interface. Addresses the kernel or a DHCP client added (IPv6 link-local,
// dynamic) are not part of any target, so they do not count as a change.
func sameAsCurrent(t, c *Interface) bool {
	if reflect.DeepEqual(t, c) {
		return true
	}
	n := *c
	for _, ip := range []**IPConfig{&n.IPv4, &n.IPv6} {
		if *ip != nil && (*ip).Address != nil {
			x := **ip
			x.Address = staticAddrs(x.Address, false)
			*ip = &x
		}
	}
	return reflect.DeepEqual(t, &n)
}

// ifaceState tells what the apply does to a kernel interface: deleted, and
// whether the IP family is disabled on it afterwards. changed is false for
// interfaces outside the change set.
func (mg *merger) ifaceState(name string, v4 bool) (changed, deleted, disabled bool) {
	e := mg.entry(name, "")
	ip := func(i *Interface) *IPConfig {
		if v4 {
			return i.IPv4
		}
		return i.IPv6
	}
	if e != nil {
		if e.del {
			return true, true, true
		}
		c := ip(&e.t)
		return true, false, c != nil && isFalse(c.Enabled)
	}
	if c := mg.curIface(name, ""); c != nil {
		ipc := ip(c)
		return false, false, ipc != nil && isFalse(ipc.Enabled)
	}
	return false, false, false
}

// mergeAltNames is the target alternative names of an interface, sorted:
// the current ones, plus the desired ones, minus those desired absent
// (nmstate changes alternative names incrementally, since udev adds its
// own). nil when neither side has any to say.
func mergeAltNames(d, c *[]AltName) *[]AltName {
	if d == nil {
		if c == nil {
			return nil
		}
		return cloneOf(c)
	}
	keep := map[string]bool{}
	if c != nil {
		for _, a := range *c {
			keep[a.Name] = true
		}
	}
	for _, a := range *d {
		keep[a.Name] = !a.IsAbsent()
	}
	out := []AltName{}
	for name, ok := range keep {
		if ok {
			out = append(out, AltName{Name: name})
		}
	}
	slices.SortFunc(out, func(a, b AltName) int { return strings.Compare(a.Name, b.Name) })
	return &out
}
