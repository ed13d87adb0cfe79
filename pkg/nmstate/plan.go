package nmstate

import (
	"net/netip"
	"reflect"
	"slices"
	"sort"
)

// planMaxNesting is how deep interfaces may stack (a port is one level
// below its controller, a VLAN one below its base): nmstate resolves the
// up-priority in four passes and rejects deeper nesting.
const planMaxNesting = 4

// PlanChanges computes the ordered operations that take m.Current to the
// target of m. Only what m's change set mentions is touched. The phases:
//
//  1. release: ports leaving a controller (also ports of a controller that
//     is deleted or re-created, and all ports of a bond whose mode or
//     fail_over_mac changes, which the kernel only accepts without ports);
//     bonds whose mode or down-only options change are set down.
//  2. delete: virtual interfaces going absent (or down), and those re-created
//     because an immutable attribute changes (type, vlan id/base/protocol,
//     vxlan, veth peer, vrf table, ipvlan, mac-vlan base); children before
//     parents, ports before controllers; one end of a veth pair.
//  3. MTU decreases, children and ports before their base and controller.
//  4. create and modify, controllers and bases before ports and children
//     (nmstate's up-priority: a port is its controller's level + 1, a
//     child its parent's + 1; at most 4 levels), each followed by its
//     attachment to its controller.
//  5. linux-bridge per-port options and VLAN membership.
//  6. administrative state, controllers first.
//  7. IP: sysctls (IPv6 disable, forwarding), then address deletions, then
//     additions (the first IPv4 address becomes primary: when the primary
//     must change, the IPv4 addresses are deleted and re-added in order).
//  8. routes: deletions, then replacements (on-link routes before routes
//     through a gateway); routes via links that were re-created, brought up
//     or lost addresses are replaced again, since the kernel dropped them.
//  9. route rules: deletions, then additions.
//  10. hostname, then DNS.
//
// OVS objects (bridges, internal and patch interfaces, port membership,
// the Open_vSwitch table) are OVSDB's: their operations replace the link
// operations of phases 1-4 and come right after phase 4 (see ovs).
//
// A change-set entry that already holds produces no operation, so the plan
// of a satisfied state is empty. Interfaces outside the change set are
// touched only where the kernel disturbs them: children of a re-created
// link are re-created with their current configuration, ports of a
// deleted, re-created or reset controller are released (and re-attached
// when the controller stays), the peer of a new veth is brought up, and
// routes the kernel dropped with a link or an address are installed again.
// DHCP and SLAAC are not plan operations: the node runtime runs them.
func PlanChanges(m *Merged) (*Plan, error) {
	if m == nil || m.Current == nil {
		return nil, &Error{Kind: Bug, Detail: "plan: merged state without a current state"}
	}
	p := newPlanner(m)
	if err := p.classify(); err != nil {
		return nil, err
	}
	if err := p.computeLevels(); err != nil {
		return nil, err
	}
	p.release()
	p.delete()
	p.mtuDecrease()
	p.createModify()
	cut := len(p.ops)
	p.bridgePorts()
	p.linkStates()
	p.addresses()
	p.routes()
	p.rules()
	p.hostnameDNS()
	if err := p.ovs(cut); err != nil {
		return nil, err
	}
	return &Plan{Ops: p.ops}, nil
}

// planIface is one interface the plan acts on: a change-set entry, or a
// current interface pulled in because the kernel will disturb it (child of
// a re-created link, port of a deleted, re-created or reset controller).
type planIface struct {
	name string
	t    *Interface // target
	c    *Interface // current, nil when it does not exist
	key  string
	idx  int // change-set order, for stable sorting

	skip     bool // state ignore: never touched
	del      bool // LinkDelete (alone, or as part of a re-create)
	create   bool // LinkCreate
	fresh    bool // the link is new after this plan (created, re-created, veth peer)
	peerOf   string
	reset    bool // bond: release ports, down, modify, re-attach
	downOnly bool // bond: down, modify, up
	gone     bool // deleted and not re-created

	level    int
	levelSet bool
	visiting bool

	ctrl     string  // controller after the apply
	released bool    // released in phase 1
	wasUp    bool    // administratively up after phases 1-2
	reassert bool    // controller changed: state up is set again
	mtuDown  bool    // MTU decrease planned in phase 3
	reroute  [2]bool // kernel dropped its IPv4/IPv6 routes during this plan
}

type planner struct {
	m   *Merged
	ops []Op

	cur      map[string]*Interface // by planKey
	curCtrl  map[string]string     // port name -> current controller name
	entries  []*planIface
	byKey    map[string]*planIface
	byName   map[string]*planIface // kernel-side entries by name
	listedBy map[string]string     // port name -> change-set controller listing it
	curLvl   map[string]int

	upOrder, downOrder []*planIface
}

func newPlanner(m *Merged) *planner {
	p := &planner{
		m:        m,
		cur:      make(map[string]*Interface, len(m.Current.Interfaces)),
		curCtrl:  map[string]string{},
		byKey:    map[string]*planIface{},
		byName:   map[string]*planIface{},
		listedBy: map[string]string{},
		curLvl:   map[string]int{},
	}
	for i := range m.Current.Interfaces {
		c := &m.Current.Interfaces[i]
		k := planKey(c.Name, c.Type)
		if _, dup := p.cur[k]; !dup {
			p.cur[k] = c
		}
		if c.Controller != nil && *c.Controller != "" {
			p.curCtrl[c.Name] = *c.Controller
		}
	}
	for i := range m.Current.Interfaces {
		c := &m.Current.Interfaces[i]
		if ports, ok := c.Ports(); ok && c.EffectiveState() != StateAbsent {
			for _, port := range ports {
				if _, set := p.curCtrl[port]; !set {
					p.curCtrl[port] = c.Name
				}
			}
		}
	}
	return p
}

// planKey tells kernel links from user-space objects of the same name.
func planKey(name string, t InterfaceType) string {
	if t.IsUserSpace() {
		return "\x00" + name
	}
	return name
}

func planPath(name string) Path { return Path("interfaces[name=" + name + "]") }

func (p *planner) add(op Op) { p.ops = append(p.ops, op) }

func (p *planner) curOf(name string) *Interface { return p.cur[planKey(name, "")] }

// classify decides, for every change-set entry, what happens to its link.
func (p *planner) classify() error {
	for i := range p.m.Interfaces {
		// Targets are read, never written: classifyOne replaces e.t
		// instead of editing it, so the caller's Merged stays intact.
		t := &p.m.Interfaces[i]
		k := planKey(t.Name, t.Type)
		if _, dup := p.byKey[k]; dup {
			return &Error{Kind: Bug, Path: planPath(t.Name), Detail: "interface appears twice in the change set"}
		}
		e := &planIface{name: t.Name, t: t, key: k, idx: i, c: p.cur[k]}
		p.byKey[k] = e
		if !t.Type.IsUserSpace() {
			p.byName[t.Name] = e
		}
		p.entries = append(p.entries, e)
	}
	// Controllers in the change set with a port list decide membership.
	for _, e := range p.entries {
		if e.t.EffectiveState() == StateIgnore || planRemoving(e.t) {
			continue
		}
		if ports, ok := e.t.Ports(); ok {
			for _, port := range ports {
				p.listedBy[port] = e.name
			}
		}
	}
	for _, e := range p.entries {
		if err := p.classifyOne(e); err != nil {
			return err
		}
	}
	// Veth peers: a veth created with its peer brings the peer along.
	for _, e := range p.entries {
		if !e.create || e.t.Veth == nil {
			continue
		}
		peer := p.byName[e.t.Veth.Peer]
		if peer == nil && p.curOf(e.t.Veth.Peer) == nil {
			// The peer comes up with its pair even when the change set
			// does not mention it (a kernel creates it down).
			t := &Interface{Name: e.t.Veth.Peer, Type: TypeVeth, State: StateUp, Veth: &Veth{Peer: e.name}}
			peer = &planIface{name: t.Name, t: t, key: t.Name, idx: len(p.entries)}
			p.byKey[peer.key], p.byName[peer.name] = peer, peer
			p.entries = append(p.entries, peer)
		}
		if peer == nil || peer.skip || peer.c != nil || peer.gone {
			continue
		}
		if peer.create && peer.idx < e.idx {
			continue // the peer entry came first and creates this one
		}
		peer.create, peer.fresh, peer.peerOf = false, true, e.name
	}
	for _, e := range p.entries {
		if e.skip || e.c != nil || e.create || e.fresh || e.gone {
			continue
		}
		return &Error{Kind: Dependency, Path: planPath(e.name),
			Detail: "interface " + e.name + " of type " + string(e.t.Type) + " does not exist and cannot be created"}
	}
	p.pullDisturbed()
	for _, e := range p.entries {
		if !e.skip && !e.gone {
			e.ctrl = p.targetCtrl(e.name)
		}
	}
	return nil
}

// planRemoving reports whether the target removes the link.
func planRemoving(t *Interface) bool {
	s := t.EffectiveState()
	return s == StateAbsent || (s == StateDown && t.Type.DeletedByDown())
}

func (p *planner) classifyOne(e *planIface) error {
	t, c := e.t, e.c
	if t.EffectiveState() == StateIgnore || (c != nil && c.EffectiveState() == StateIgnore && t.State == "") {
		e.skip = true
		return nil
	}
	if planRemoving(t) {
		switch {
		case c == nil:
			e.skip, e.gone = true, true
		case c.Type.IsVirtual():
			e.del, e.gone = true, true
		case c.Type == TypeLoopback:
			// Loopback cannot go away: absent restores its defaults.
			lo := planLoopbackDefaults()
			e.t = &lo
		default:
			// A NIC cannot be removed: absent releases it, disables both
			// IP families and takes it down.
			no := false
			e.t = &Interface{Name: t.Name, Type: c.Type, State: StateDown, Controller: new(string),
				IPv4: &IPConfig{Enabled: &no}, IPv6: &IPConfig{Enabled: &no}}
		}
		return nil
	}
	if c == nil {
		if t.Type.IsVirtual() && t.Type != TypeVeth || t.Type == TypeVeth && t.Veth != nil {
			e.create, e.fresh = true, true
		}
		return nil
	}
	if c.Type.IsVirtual() && planImmutableChanged(t, c) {
		e.del, e.create, e.fresh = true, true, true
		return nil
	}
	if t.LinkAggregation != nil && c.LinkAggregation != nil {
		tb, cb := t.LinkAggregation, c.LinkAggregation
		if tb.Mode != nil && !planEq(tb.Mode, cb.Mode) {
			e.reset = true
		}
		if tb.Options != nil {
			to, co := tb.Options, cb.Options
			if co == nil {
				co = &BondOptions{}
			}
			if to.FailOverMAC != nil && !planEq(to.FailOverMAC, co.FailOverMAC) {
				e.reset = true
			}
			if to.ADActorSysPrio != nil && !planEq(to.ADActorSysPrio, co.ADActorSysPrio) ||
				to.ADActorSystem != nil && !planEq(to.ADActorSystem, co.ADActorSystem) ||
				to.ADUserPortKey != nil && !planEq(to.ADUserPortKey, co.ADUserPortKey) ||
				to.ADSelect != nil && !planEq(to.ADSelect, co.ADSelect) ||
				to.LACPRate != nil && !planEq(to.LACPRate, co.LACPRate) ||
				to.TLBDynamicLB != nil && !planEq(to.TLBDynamicLB, co.TLBDynamicLB) {
				e.downOnly = true
			}
		}
	}
	return nil
}

// planLoopbackDefaults is what `lo` looks like in a fresh namespace.
func planLoopbackDefaults() Interface {
	mtu := uint64(65536)
	return Interface{
		Name: "lo", Type: TypeLoopback, State: StateUp, MTU: &mtu,
		IPv4: &IPConfig{Address: []Address{{IP: netip.MustParseAddr("127.0.0.1"), PrefixLength: 8}}},
		IPv6: &IPConfig{Address: []Address{{IP: netip.IPv6Loopback(), PrefixLength: 128}}},
	}
}

// planImmutableChanged reports whether the target changes something the
// kernel cannot change on a live link, so the link must be re-created.
func planImmutableChanged(t, c *Interface) bool {
	if t.Type != c.Type {
		return true
	}
	switch {
	case t.VLAN != nil:
		cv := c.VLAN
		if cv == nil {
			cv = &VLAN{}
		}
		return planSetDiffers(t.VLAN.BaseIface, cv.BaseIface) || planSetDiffers(t.VLAN.ID, cv.ID) ||
			planSetDiffers(t.VLAN.Protocol, cv.Protocol)
	case t.VXLAN != nil:
		return planSectionDiffers(t.VXLAN, c.VXLAN)
	case t.Veth != nil:
		return c.Veth != nil && t.Veth.Peer != c.Veth.Peer
	case t.VRF != nil:
		cv := c.VRF
		if cv == nil {
			cv = &VRF{}
		}
		return planSetDiffers(t.VRF.RouteTableID, cv.RouteTableID)
	case t.IPVlan != nil:
		return planSectionDiffers(t.IPVlan, c.IPVlan)
	case t.MacVlan != nil:
		return c.MacVlan != nil && planSetDiffers(t.MacVlan.BaseIface, c.MacVlan.BaseIface)
	case t.MacVtap != nil:
		return c.MacVtap != nil && planSetDiffers(t.MacVtap.BaseIface, c.MacVtap.BaseIface)
	case t.InfiniBand != nil:
		return planSectionDiffers(t.InfiniBand, c.InfiniBand)
	case t.MACsec != nil:
		return planSectionDiffers(t.MACsec, c.MACsec)
	case t.HSR != nil:
		return planSectionDiffers(t.HSR, c.HSR)
	}
	return false
}

// planVFs takes the VF lists out of the link sections t and c (copies of
// the interfaces' sections) and returns the target VFs that differ from
// the current VF of the same id, or nil.
func planVFs(t, c *Interface) []VFConf {
	take := func(i *Interface) []VFConf {
		if i.Ethernet == nil || i.Ethernet.SRIOV == nil {
			return nil
		}
		e, sr := *i.Ethernet, *i.Ethernet.SRIOV
		vfs := sr.VFs
		sr.VFs = nil
		e.SRIOV = &sr
		i.Ethernet = &e
		return vfs
	}
	tv, cv := take(t), take(c)
	var out []VFConf
	for _, vf := range tv {
		cur := VFConf{ID: vf.ID}
		for _, x := range cv {
			if x.ID == vf.ID {
				cur = x
			}
		}
		want := vf
		want.IfaceName, cur.IfaceName = nil, nil
		if _, ch := planDiff(reflect.ValueOf(want), reflect.ValueOf(cur)); ch {
			out = append(out, want)
		}
	}
	return out
}

// planSetDiffers: the target gives a value and it is not the current one.
func planSetDiffers[T comparable](t, c *T) bool { return t != nil && (c == nil || *t != *c) }

// planBoolDiffers: t is given and differs from c, where an unset c is false.
func planBoolDiffers(t, c *bool) bool { return t != nil && *t != (c != nil && *c) }

func planEq[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// planSectionDiffers: some field set in t differs from c.
func planSectionDiffers[T any](t, c *T) bool {
	if t == nil {
		return false
	}
	var cv reflect.Value
	if c == nil {
		cv = reflect.Zero(reflect.TypeFor[T]())
	} else {
		cv = reflect.ValueOf(c).Elem()
	}
	_, changed := planDiff(reflect.ValueOf(t).Elem(), cv)
	return changed
}

// pullDisturbed adds the current interfaces the kernel will disturb
// although the change set does not mention them: children of a re-created
// link (re-created from their current configuration), and ports of a
// controller that is deleted, re-created or reset (released first, then
// re-attached when their controller survives).
func (p *planner) pullDisturbed() {
	for changed := true; changed; {
		changed = false
		for i := range p.m.Current.Interfaces {
			c := &p.m.Current.Interfaces[i]
			if c.Type.IsUserSpace() || c.EffectiveState() == StateIgnore {
				continue
			}
			e := p.byName[c.Name]
			parent := p.byName[c.Parent()]
			ctrl := p.byName[p.curCtrl[c.Name]]
			recreateChild := parent != nil && parent.del && !parent.gone
			disturbedPort := ctrl != nil && (ctrl.del || ctrl.reset)
			if e != nil {
				if recreateChild && !e.del && !e.skip {
					e.del, e.create, e.fresh = true, true, true
					changed = true
				}
				continue
			}
			_, listed := p.listedBy[c.Name]
			if !recreateChild && !disturbedPort && !listed {
				continue
			}
			e = &planIface{name: c.Name, t: c, c: c, key: c.Name, idx: len(p.entries)}
			if recreateChild {
				e.del, e.create, e.fresh = true, true, true
			}
			p.byKey[e.key], p.byName[e.name] = e, e
			p.entries = append(p.entries, e)
			changed = true
		}
	}
}

// targetCtrl is the controller of name after the apply: the changed
// controller listing it, else its own `controller` (target or current),
// unless that controller goes away or lists its ports without it.
func (p *planner) targetCtrl(name string) string {
	if c, ok := p.listedBy[name]; ok {
		return c
	}
	tc := p.curCtrl[name]
	if e := p.byName[name]; e != nil && e.t.Controller != nil {
		tc = *e.t.Controller
	}
	if tc == "" {
		return ""
	}
	if ce := p.byName[tc]; ce != nil {
		if ce.gone {
			return ""
		}
		if _, given := ce.t.Ports(); given && !ce.skip {
			return "" // it would be in listedBy
		}
	}
	return tc
}

// deps are the links name stands on after the apply: its controller and
// its base (or HSR ports, or a veth peer's creator).
func (p *planner) deps(name string) []string {
	var t *Interface
	if e := p.byName[name]; e != nil {
		t = e.t
	} else if c := p.curOf(name); c != nil {
		t = c
	}
	if t == nil {
		return nil
	}
	var out []string
	// An OVS bridge is no kernel link: its ports and internal interfaces
	// are ordered by the OVS phase, and OpenShift's br-ex is an
	// ovs-interface named like its own bridge.
	if c := p.targetCtrl(name); c != "" && !p.isOVSBridge(c) {
		out = append(out, c)
	}
	if par := t.Parent(); par != "" {
		out = append(out, par)
	}
	if t.HSR != nil {
		for _, s := range []*string{t.HSR.Port1, t.HSR.Port2} {
			if s != nil && *s != "" {
				out = append(out, *s)
			}
		}
	}
	return out
}

func (p *planner) computeLevels() error {
	for _, e := range p.entries {
		if e.skip || e.gone {
			continue
		}
		if _, err := p.levelOf(e.name, 0); err != nil {
			return err
		}
	}
	// A veth peer is configured after its creator, at the same level.
	for _, e := range p.entries {
		if e.peerOf != "" {
			if c := p.byName[e.peerOf]; c != nil && c.level > e.level {
				e.level = c.level
			}
		}
	}
	for i := range p.m.Current.Interfaces {
		p.curLevel(p.m.Current.Interfaces[i].Name, 0)
	}
	p.order()
	return nil
}

// levelOf is nmstate's up-priority of name in the target graph.
func (p *planner) levelOf(name string, depth int) (int, error) {
	e := p.byName[name]
	if e != nil && e.levelSet {
		return e.level, nil
	}
	if depth > 64 || e != nil && e.visiting {
		return 0, &Error{Kind: InvalidArgument, Path: planPath(name),
			Detail: "interface " + name + " is its own controller or base (loop through controllers/bases)"}
	}
	if e != nil {
		e.visiting = true
		defer func() { e.visiting = false }()
	}
	lvl := 0
	for _, d := range p.deps(name) {
		if p.byName[d] == nil && p.curOf(d) == nil {
			continue
		}
		dl, err := p.levelOf(d, depth+1)
		if err != nil {
			return 0, err
		}
		lvl = max(lvl, dl+1)
	}
	if lvl > planMaxNesting {
		return 0, &Error{Kind: InvalidArgument, Path: planPath(name),
			Detail: "interfaces nest deeper than 4 levels (controllers and bases of " + name + ")"}
	}
	if e != nil {
		e.level, e.levelSet = lvl, true
	}
	return lvl, nil
}

// curLevel is the up-priority of name in the current graph; deletions and
// releases run deepest first.
func (p *planner) curLevel(name string, depth int) int {
	if l, ok := p.curLvl[name]; ok {
		return l
	}
	c := p.curOf(name)
	if c == nil || depth > 64 {
		return 0
	}
	p.curLvl[name] = 0 // loop guard
	lvl := 0
	for _, d := range []string{p.curCtrl[name], c.Parent()} {
		if d != "" && p.curOf(d) != nil {
			lvl = max(lvl, p.curLevel(d, depth+1)+1)
		}
	}
	p.curLvl[name] = lvl
	return lvl
}

// sorted returns the entries matching keep in up order (level, then
// veth peers after their creators, then name), or in down order (current
// level descending, then name) when down is set.
func (p *planner) sorted(keep func(*planIface) bool, down bool) []*planIface {
	order := p.upOrder
	if down {
		order = p.downOrder
	}
	out := make([]*planIface, 0, len(order))
	for _, e := range order {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// order computes both orders once, after the levels are known.
func (p *planner) order() {
	for _, e := range p.entries {
		if !e.skip {
			p.upOrder = append(p.upOrder, e)
		}
	}
	p.downOrder = slices.Clone(p.upOrder)
	sort.SliceStable(p.upOrder, func(i, j int) bool {
		a, b := p.upOrder[i], p.upOrder[j]
		if a.level != b.level {
			return a.level < b.level
		}
		if (a.peerOf != "") != (b.peerOf != "") {
			return b.peerOf != ""
		}
		return a.name < b.name
	})
	sort.SliceStable(p.downOrder, func(i, j int) bool {
		a, b := p.downOrder[i], p.downOrder[j]
		la, lb := p.curLvl[a.name], p.curLvl[b.name]
		if la != lb {
			return la > lb
		}
		return a.name < b.name
	})
}

// release detaches departing ports and takes down bonds that must be down
// for their change.
func (p *planner) release() {
	for _, e := range p.sorted(func(e *planIface) bool { return e.c != nil }, true) {
		cc := p.curCtrl[e.name]
		e.wasUp = e.c.EffectiveState() == StateUp
		if cc == "" || e.del {
			continue
		}
		ce := p.byName[cc]
		if e.ctrl != cc || ce != nil && (ce.del || ce.reset) {
			p.add(LinkSetController{Name: e.name})
			e.released, e.reassert = true, true
		}
	}
	for _, e := range p.sorted(func(e *planIface) bool { return (e.reset || e.downOnly) && !e.del }, true) {
		if e.wasUp {
			p.add(LinkSetState{Name: e.name, Up: false})
			e.wasUp = false
		}
	}
}

// delete removes links, deepest first; of a veth pair deleted together only
// one end is named.
func (p *planner) delete() {
	for _, e := range p.sorted(func(e *planIface) bool { return e.del }, true) {
		if e.c.Veth != nil {
			if peer := p.byName[e.c.Veth.Peer]; peer != nil && peer.del && peer.c != nil && peer.name < e.name {
				continue
			}
		}
		p.add(LinkDelete{Name: e.name, Type: e.c.Type})
		e.wasUp = false
	}
	// Links deleted with a deleted veth end.
	for _, e := range p.entries {
		if e.del && e.c.Veth != nil {
			if peer := p.byName[e.c.Veth.Peer]; peer != nil && peer.c != nil && !peer.del {
				peer.fresh, peer.wasUp = true, false
			}
		}
	}
}

func (p *planner) mtuDecrease() {
	for _, e := range p.sorted(func(e *planIface) bool {
		return !e.gone && !e.fresh && e.c != nil && e.t.MTU != nil && e.c.MTU != nil && *e.t.MTU < *e.c.MTU
	}, true) {
		e.mtuDown = true
		p.add(LinkModify{Iface: Interface{Name: e.name, Type: e.t.Type, MTU: e.t.MTU}, Current: *e.c})
	}
}

func (p *planner) createModify() {
	for _, e := range p.sorted(func(e *planIface) bool { return !e.gone }, false) {
		switch {
		case e.create:
			p.add(LinkCreate{Iface: *e.t})
		default:
			var c Interface
			if e.c != nil && !e.fresh {
				c = *e.c
			}
			d, changed := planLinkDiff(e.t, &c)
			if e.mtuDown {
				d.MTU = nil
				_, changed = planLinkDiff(&d, &Interface{Name: d.Name, Type: d.Type})
			}
			if changed {
				cur := Interface{}
				if e.c != nil {
					cur = *e.c
				}
				p.add(LinkModify{Iface: d, Current: cur})
			}
		}
		eff := p.curCtrl[e.name]
		if e.fresh || e.released {
			eff = ""
		} else if ce := p.byName[eff]; ce != nil && ce.del {
			eff = ""
		}
		if e.ctrl != eff && e.ctrl != "" {
			p.add(LinkSetController{Name: e.name, Controller: e.ctrl})
			e.reassert = true
		}
	}
}

// planLinkDiff returns the link-level attributes of t that differ from c
// (name and type always set), and whether there is any.
func planLinkDiff(t, c *Interface) (Interface, bool) {
	d := Interface{Name: t.Name, Type: t.Type}
	changed := false
	if planSetDiffers(t.MTU, c.MTU) {
		d.MTU, changed = t.MTU, true
	}
	if planSetDiffers(t.MACAddress, c.MACAddress) {
		d.MACAddress, changed = t.MACAddress, true
	}
	if planSetDiffers(t.AcceptAllMAC, c.AcceptAllMAC) {
		d.AcceptAllMAC, changed = t.AcceptAllMAC, true
	}
	if planSetDiffers(t.Description, c.Description) {
		d.Description, changed = t.Description, true
	}
	if t.AltNames != nil && !sameAltNames(t.AltNames, c.AltNames) {
		d.AltNames, changed = t.AltNames, true
	}
	ts, cs := opLinkSection(t), opLinkSection(c)
	// Query-only timers and attributes whose change re-creates the link
	// are not link modifications.
	for _, s := range []*Interface{&ts, &cs} {
		if s.LinuxBridge != nil && s.LinuxBridge.Options != nil {
			o := *s.LinuxBridge.Options
			o.GCTimer, o.HelloTimer = nil, nil
			s.LinuxBridge.Options = &o
		}
		if s.VLAN != nil {
			s.VLAN.ID, s.VLAN.Protocol = nil, nil
		}
		if s.LinkAggregation != nil {
			s.LinkAggregation.PortsConfig = nil
		}
		s.VXLAN, s.IPVlan, s.VRF, s.Veth = nil, nil, nil, nil
		if s.LLDP != nil {
			// Neighbours are reported, not configured.
			s.LLDP = &LLDP{Enabled: s.LLDP.Enabled}
		}
		s.InfiniBand, s.MACsec, s.HSR = nil, nil, nil
	}
	// VFs are matched by id: only target VFs that differ from the
	// current VF of the same id are set.
	vfs := planVFs(&ts, &cs)
	dv, ch := planDiff(reflect.ValueOf(ts), reflect.ValueOf(cs))
	if vfs != nil {
		if !ch {
			dv, ch = reflect.ValueOf(Interface{}), true
		}
		sec := dv.Interface().(Interface)
		if sec.Ethernet == nil {
			sec.Ethernet = &Ethernet{}
		}
		if sec.Ethernet.SRIOV == nil {
			sec.Ethernet.SRIOV = &SRIOV{}
		}
		sec.Ethernet.SRIOV.VFs = vfs
		dv = reflect.ValueOf(sec)
	}
	if ch {
		sec := dv.Interface().(Interface)
		d.Ethernet, d.Ethtool, d.IEEE8021X, d.LLDP = sec.Ethernet, sec.Ethtool, sec.IEEE8021X, sec.LLDP
		d.LinkAggregation, d.LinuxBridge, d.VLAN, d.MacVlan, d.MacVtap = sec.LinkAggregation, sec.LinuxBridge, sec.VLAN, sec.MacVlan, sec.MacVtap
		d.Team, d.OVSBridge, d.Patch, d.DPDK = sec.Team, sec.OVSBridge, sec.Patch, sec.DPDK
		changed = true
	}
	if t.LinkAggregation != nil && t.LinkAggregation.PortsConfig != nil {
		var cur []BondPortConfig
		if c.LinkAggregation != nil {
			cur = c.LinkAggregation.PortsConfig
		}
		var pc []BondPortConfig
		for _, tp := range t.LinkAggregation.PortsConfig {
			cp := BondPortConfig{Name: tp.Name}
			for _, x := range cur {
				if x.Name == tp.Name {
					cp = x
				}
			}
			if planSetDiffers(tp.Priority, cp.Priority) || planSetDiffers(tp.QueueID, cp.QueueID) {
				pc = append(pc, tp)
			}
		}
		if pc != nil {
			if d.LinkAggregation == nil {
				d.LinkAggregation = &Bond{}
			}
			d.LinkAggregation.PortsConfig = pc
			changed = true
		}
	}
	return d, changed
}

// planDiff returns a value of t's type holding the fields set in t that
// differ from c (struct fields recursively, map entries by key, slices as a
// whole), and whether there is any.
func planDiff(t, c reflect.Value) (reflect.Value, bool) {
	switch t.Kind() {
	case reflect.Struct:
		out := reflect.New(t.Type()).Elem()
		changed := false
		for i := 0; i < t.NumField(); i++ {
			f, ch := planDiff(t.Field(i), c.Field(i))
			if ch {
				out.Field(i).Set(f)
				changed = true
			}
		}
		return out, changed
	case reflect.Pointer:
		if t.IsNil() {
			return t, false
		}
		if t.Elem().Kind() == reflect.Struct && t.Type().Elem() != reflect.TypeFor[netip.Addr]() &&
			t.Type().Elem() != reflect.TypeFor[netip.Prefix]() {
			ce := reflect.Zero(t.Type().Elem())
			if !c.IsNil() {
				ce = c.Elem()
			}
			d, ch := planDiff(t.Elem(), ce)
			if !ch {
				return t, false
			}
			ptr := reflect.New(t.Type().Elem())
			ptr.Elem().Set(d)
			return ptr, true
		}
		if !c.IsNil() && reflect.DeepEqual(t.Elem().Interface(), c.Elem().Interface()) {
			return t, false
		}
		return t, true
	case reflect.Slice:
		if t.IsNil() || reflect.DeepEqual(t.Interface(), c.Interface()) {
			return t, false
		}
		return t, true
	case reflect.Map:
		if t.IsNil() {
			return t, false
		}
		out := reflect.MakeMap(t.Type())
		for it := t.MapRange(); it.Next(); {
			cv := c.MapIndex(it.Key())
			if !cv.IsValid() || !reflect.DeepEqual(it.Value().Interface(), cv.Interface()) {
				out.SetMapIndex(it.Key(), it.Value())
			}
		}
		return out, out.Len() > 0
	default:
		if t.IsZero() || t.Equal(c) {
			return t, false
		}
		return t, true
	}
}

// bridgePorts sets linux-bridge per-port options and VLAN membership of
// every port listed by a changed bridge.
func (p *planner) bridgePorts() {
	for _, e := range p.sorted(func(e *planIface) bool { return !e.gone && e.t.LinuxBridge != nil }, false) {
		for _, tp := range e.t.LinuxBridge.Port {
			var cp LinuxBridgePort
			if pe := p.byName[tp.Name]; !e.fresh && e.c != nil && e.c.LinuxBridge != nil &&
				(pe == nil || !pe.fresh && !pe.released) && p.curCtrl[tp.Name] == e.name {
				for _, x := range e.c.LinuxBridge.Port {
					if x.Name == tp.Name {
						cp = x
					}
				}
			}
			set := LinuxBridgePort{Name: tp.Name}
			changed := false
			if planSetDiffers(tp.STPHairpinMode, cp.STPHairpinMode) {
				set.STPHairpinMode, changed = tp.STPHairpinMode, true
			}
			if planSetDiffers(tp.STPPathCost, cp.STPPathCost) {
				set.STPPathCost, changed = tp.STPPathCost, true
			}
			if planSetDiffers(tp.STPPriority, cp.STPPriority) {
				set.STPPriority, changed = tp.STPPriority, true
			}
			if changed {
				p.add(BridgePortSet{Bridge: e.name, Port: set})
			}
			if !(tp.VLAN.IsEmpty() && cp.VLAN.IsEmpty()) && !reflect.DeepEqual(tp.VLAN, cp.VLAN) {
				vlan := tp.VLAN
				if vlan.IsEmpty() {
					vlan = nil // `vlan: {}`: the port leaves VLAN filtering
				}
				p.add(BridgeVLANSet{Bridge: e.name, Name: tp.Name, VLAN: vlan})
			}
		}
		if filteringEnds(e) {
			p.add(BridgeVLANFiltering{Bridge: e.name})
		}
	}
}

// filteringEnds reports whether a bridge that filters VLANs now (a port
// reports a VLAN configuration: the kernel backend reports one only while
// the bridge filters) keeps no port with one: then filtering goes off, as
// upstream does when every port's vlan is reset with `vlan: {}`.
func filteringEnds(e *planIface) bool {
	if e.fresh || e.c == nil || e.c.LinuxBridge == nil || len(e.t.LinuxBridge.Port) == 0 {
		return false
	}
	for _, tp := range e.t.LinuxBridge.Port {
		if !tp.VLAN.IsEmpty() {
			return false
		}
	}
	for _, cp := range e.c.LinuxBridge.Port {
		if !cp.VLAN.IsEmpty() {
			return true
		}
	}
	return false
}

// v6Toggle reports whether e's IPv6 on/off changes, and to what.
func (e *planIface) v6Toggle() (change, enable bool) {
	var c6 *IPConfig
	if e.c != nil && !e.fresh {
		c6 = e.c.IPv6
	}
	v6on := c6 == nil || c6.Enabled == nil || *c6.Enabled
	if t6 := e.t.IPv6; t6 != nil && t6.Enabled != nil && *t6.Enabled != v6on {
		return true, *t6.Enabled
	}
	return false, false
}

func (p *planner) linkStates() {
	// Disabling IPv6 comes before links go up, so the kernel never starts
	// IPv6 address generation (link-local, DAD) on them only to undo it.
	for _, e := range p.sorted(func(e *planIface) bool { return !e.gone && !e.t.Type.IsUserSpace() }, false) {
		if change, enable := e.v6Toggle(); change && !enable {
			p.add(SysctlSet{Iface: e.name, Key: "net.ipv6.conf." + e.name + ".disable_ipv6", Value: "1"})
		}
	}
	// OVS bridges have no kernel link of their own, patch ports neither;
	// vswitchd owns both.
	for _, e := range p.sorted(func(e *planIface) bool { return !e.gone && e.t.Type != TypeOVSBridge && e.t.Patch == nil }, false) {
		up := e.t.EffectiveState() == StateUp
		if up != e.wasUp || up && e.reassert {
			p.add(LinkSetState{Name: e.name, Up: up})
			if up {
				e.reroute = [2]bool{true, true}
			}
		}
	}
}

// addresses plans sysctls, then address deletions, then additions.
func (p *planner) addresses() {
	list := p.sorted(func(e *planIface) bool { return !e.gone && !e.t.Type.IsUserSpace() }, false)
	var dels, adds []Op
	for _, e := range list {
		var c4, c6 *IPConfig
		if e.c != nil && !e.fresh {
			c4, c6 = e.c.IPv4, e.c.IPv6
		}
		// IPv6 on/off is a sysctl; disabling drops the addresses too (and
		// was planned before the links went up, see linkStates).
		if change, enable := e.v6Toggle(); change {
			if enable {
				p.add(SysctlSet{Iface: e.name, Key: "net.ipv6.conf." + e.name + ".disable_ipv6", Value: "0"})
			} else {
				c6 = nil
			}
		}
		for _, f := range []struct {
			t, c *IPConfig
			fam  string
		}{{e.t.IPv4, c4, "ipv4"}, {e.t.IPv6, c6, "ipv6"}} {
			if f.t == nil || f.t.Forwarding == nil {
				continue
			}
			cur := f.c != nil && f.c.Forwarding != nil && *f.c.Forwarding
			if *f.t.Forwarding != cur {
				val := "0"
				if *f.t.Forwarding {
					val = "1"
				}
				p.add(SysctlSet{Iface: e.name, Key: "net." + f.fam + ".conf." + e.name + ".forwarding", Value: val})
			}
		}
		d4, a4 := planAddrs(e.t.IPv4, c4, true)
		d6, a6 := planAddrs(e.t.IPv6, c6, false)
		for _, a := range append(d4, d6...) {
			dels = append(dels, AddrDelete{Iface: e.name, Address: a})
			e.reroute[planFamily(a.IP)] = true
		}
		for _, a := range append(a4, a6...) {
			adds = append(adds, AddrAdd{Iface: e.name, Address: a})
		}
		if e.fresh {
			e.reroute = [2]bool{true, true}
		}
	}
	p.ops = append(p.ops, dels...)
	p.ops = append(p.ops, adds...)
}

// planAddrs returns the addresses to delete and to add so that the
// interface ends with the static addresses of t. Dynamic addresses and
// IPv6 link-local ones belong to the kernel and DHCP/SLAAC, never to the
// plan (except that disabling IPv4 removes them all). For IPv4 the first
// address is the primary one: when the current primary is not the
// target's first address, or a deletion would take a kept secondary with
// it (the kernel drops the secondaries of a deleted primary), every IPv4
// address is deleted and re-added in order.
func planAddrs(t, c *IPConfig, v4 bool) (del, add []Address) {
	if t == nil {
		return nil, nil
	}
	var cur []Address
	if c != nil {
		cur = c.Address
	}
	if t.Enabled != nil && !*t.Enabled {
		if v4 {
			return planBareAddrs(cur), nil
		}
		return nil, nil // the disable_ipv6 sysctl drops them
	}
	if t.Address == nil {
		return nil, nil
	}
	in := func(l []Address, a Address) bool {
		return slices.ContainsFunc(l, func(x Address) bool { return x.IP == a.IP && x.PrefixLength == a.PrefixLength })
	}
	want := make([]Address, 0, len(t.Address))
	for _, a := range t.Address {
		if !a.IsDynamic() {
			want = append(want, a)
		}
	}
	var static []Address
	for _, a := range cur {
		if a.IsDynamic() || a.IP.Is6() && a.IP.IsLinkLocalUnicast() && !in(want, a) {
			continue
		}
		static = append(static, a)
	}
	var kept []Address
	for _, a := range static {
		if in(want, a) {
			kept = append(kept, a)
		} else {
			del = append(del, a)
		}
	}
	if v4 && len(kept) > 0 {
		redo := kept[0].IP != want[0].IP || kept[0].PrefixLength != want[0].PrefixLength
		for _, d := range del {
			for _, k := range kept {
				if d.Prefix().Masked() == k.Prefix().Masked() {
					redo = true
				}
			}
		}
		if redo {
			del = append(del, kept...)
			kept = nil
		}
	}
	for _, a := range want {
		if !in(kept, a) {
			add = append(add, a)
		}
	}
	return planBareAddrs(del), planBareAddrs(add)
}

// planBareAddrs keeps address and prefix length only: the plan installs
// static addresses with infinite lifetimes.
func planBareAddrs(l []Address) []Address {
	if l == nil {
		return nil
	}
	out := make([]Address, len(l))
	for i, a := range l {
		out[i] = Address{IP: a.IP, PrefixLength: a.PrefixLength}
	}
	return out
}

// planFamily is 0 for IPv4, 1 for IPv6.
func planFamily(a netip.Addr) int {
	if a.Is4() || a.Is4In6() {
		return 0
	}
	return 1
}

func planRouteFamily(r *Route) int {
	switch {
	case r.Destination != nil:
		return planFamily(r.Destination.Addr())
	case r.NextHopAddress != nil && r.NextHopAddress.IsValid():
		return planFamily(*r.NextHopAddress)
	}
	return 0
}

// planRouteID is nmstate's route identity: everything but the metric and
// the attributes carried along.
type planRouteID struct {
	dst   netip.Prefix
	table uint32
	dev   string
	via   netip.Addr
	typ   RouteType
}

func planRouteKey(r *Route) planRouteID {
	var id planRouteID
	if r.Destination != nil {
		id.dst = r.Destination.Masked()
	}
	id.table = opRouteTable(r)
	if r.NextHopInterface != nil {
		id.dev = *r.NextHopInterface
	}
	if r.NextHopAddress != nil {
		id.via = *r.NextHopAddress
	}
	if r.RouteType != nil {
		id.typ = *r.RouteType
	}
	return id
}

// planRouteHolds: the current route c satisfies the target t (same
// identity; metric, weight, the route metrics and source equal where t
// gives them; an unset boolean metric reads as false).
func planRouteHolds(t, c *Route) bool {
	if t.Metric != nil && *t.Metric >= 0 && !planEq(t.Metric, c.Metric) {
		return false
	}
	if planSetDiffers(t.Weight, c.Weight) || planSetDiffers(t.Cwnd, c.Cwnd) ||
		planSetDiffers(t.MTU, c.MTU) || planSetDiffers(t.AdvMSS, c.AdvMSS) ||
		planSetDiffers(t.InitCwnd, c.InitCwnd) || planSetDiffers(t.InitRwnd, c.InitRwnd) {
		return false
	}
	if planBoolDiffers(t.LockMTU, c.LockMTU) || planBoolDiffers(t.QuickACK, c.QuickACK) {
		return false
	}
	if t.Source != nil && t.Source.IsValid() && (c.Source == nil || *c.Source != *t.Source) {
		return false
	}
	return true
}

func (p *planner) routes() {
	var cur []Route
	if p.m.Current.Routes != nil {
		cur = p.m.Current.Routes.Config
	}
	curBy := make(map[planRouteID]*Route, len(cur))
	for i := range cur {
		k := planRouteKey(&cur[i])
		if _, dup := curBy[k]; !dup {
			curBy[k] = &cur[i]
		}
	}
	dev := func(r *Route) *planIface {
		if r.NextHopInterface == nil {
			return nil
		}
		return p.byName[*r.NextHopInterface]
	}
	target := p.m.Routes
	if target == nil {
		// Routes are not in the change set, but the kernel dropped the
		// ones via re-created or re-addressed links: put them back.
		target = cur
	}
	want := make(map[planRouteID]bool, len(target))
	var replace []Route
	for i := range target {
		t := &target[i]
		if t.IsAbsent() {
			continue
		}
		k := planRouteKey(t)
		want[k] = true
		d := dev(t)
		if d != nil && d.gone {
			continue
		}
		c := curBy[k]
		if c == nil && p.m.Routes == nil {
			continue
		}
		if c == nil || !planRouteHolds(t, c) || d != nil && d.reroute[planRouteFamily(t)] {
			replace = append(replace, *t)
		}
	}
	if p.m.Routes != nil {
		for i := range cur {
			c := &cur[i]
			if want[planRouteKey(c)] {
				continue
			}
			if d := dev(c); d != nil && (d.gone || d.fresh) {
				continue // the kernel dropped it with the link
			}
			p.add(RouteDelete{Route: *c})
		}
	}
	// On-link routes first: a gateway must be reachable when its route is
	// installed.
	sort.SliceStable(replace, func(i, j int) bool {
		gi := replace[i].NextHopAddress != nil && replace[i].NextHopAddress.IsValid()
		gj := replace[j].NextHopAddress != nil && replace[j].NextHopAddress.IsValid()
		return !gi && gj
	})
	for _, r := range replace {
		p.add(RouteReplace{Route: r})
	}
}

// planRuleHolds: the current rule c satisfies the target t (every key t
// gives is equal; family and table compared with their defaults).
func planRuleHolds(t, c *RouteRule) bool {
	if opRuleFamily(t) != opRuleFamily(c) {
		return false
	}
	tbl := func(r *RouteRule) uint32 {
		if r.RouteTable == nil || *r.RouteTable == 0 {
			return 254
		}
		return *r.RouteTable
	}
	if t.Action == nil && c.Action == nil && tbl(t) != tbl(c) {
		return false
	}
	pfx := func(a, b *netip.Prefix) bool {
		av := a != nil && a.IsValid()
		bv := b != nil && b.IsValid()
		return av == bv && (!av || a.Masked() == b.Masked())
	}
	if !pfx(t.IPFrom, c.IPFrom) || !pfx(t.IPTo, c.IPTo) {
		return false
	}
	if t.Priority != nil && *t.Priority >= 0 && !planEq(t.Priority, c.Priority) {
		return false
	}
	return !planSetDiffers(t.FWMark, c.FWMark) && !planSetDiffers(t.FWMask, c.FWMask) &&
		planEq(t.Action, c.Action) && planEq(t.IIF, c.IIF) &&
		!planSetDiffers(t.SuppressPrefixLength, c.SuppressPrefixLength)
}

func (p *planner) rules() {
	if p.m.RouteRules == nil {
		return
	}
	var cur []RouteRule
	if p.m.Current.RouteRules != nil {
		cur = p.m.Current.RouteRules.Config
	}
	var target []*RouteRule
	for i := range p.m.RouteRules {
		if !p.m.RouteRules[i].IsAbsent() {
			target = append(target, &p.m.RouteRules[i])
		}
	}
	for i := range cur {
		c := &cur[i]
		if !slices.ContainsFunc(target, func(t *RouteRule) bool { return planRuleHolds(t, c) }) {
			p.add(RuleDelete{Rule: *c})
		}
	}
	for _, t := range target {
		if !slices.ContainsFunc(cur, func(c RouteRule) bool { return planRuleHolds(t, &c) }) {
			p.add(RuleAdd{Rule: *t})
		}
	}
}

func (p *planner) hostnameDNS() {
	if h := p.m.Hostname; h != nil {
		want := ""
		switch {
		case h.Running != nil:
			want = *h.Running
		case h.Config != nil:
			want = *h.Config
		}
		cur, curConfig := "", ""
		if ch := p.m.Current.Hostname; ch != nil {
			if ch.Running != nil {
				cur = *ch.Running
			}
			if ch.Config != nil {
				curConfig = *ch.Config
			}
		}
		// A named config also when only the static hostname differs
		// (running already is that name, e.g. from DHCP).
		if want != "" && (want != cur || h.Config != nil && *h.Config != "" && *h.Config != curConfig) {
			p.add(HostnameSet{Name: want})
		}
		// config "": no static hostname. Only the empty config needs an
		// operation of its own; a named one is HostnameSet's.
		if h.Config != nil && *h.Config == "" {
			if ch := p.m.Current.Hostname; ch == nil || ch.Config == nil || *ch.Config != "" {
				p.add(HostnameDynamic{})
			}
		}
	}
	if d := p.m.DNS; d != nil {
		var cur DNSConfig
		if r := p.m.Current.DNSResolver; r != nil && r.Config != nil {
			cur = *r.Config
		}
		if !planDNSEqual(d, &cur) {
			p.add(DNSWrite{Config: *d})
		}
	}
}

// planDNSEqual compares resolver settings as verification does: servers
// and search domains in order, options as a set.
func planDNSEqual(a, b *DNSConfig) bool {
	if len(a.Server) != len(b.Server) || !slices.Equal(a.Search, b.Search) {
		return false
	}
	for i := range a.Server {
		if a.Server[i] != b.Server[i] {
			return false
		}
	}
	oa, ob := slices.Clone(a.Options), slices.Clone(b.Options)
	slices.Sort(oa)
	slices.Sort(ob)
	return slices.Equal(oa, ob)
}

// sameAltNames reports whether two alternative name lists hold the same
// names (in any order).
func sameAltNames(a, b *[]AltName) bool {
	names := func(l *[]AltName) []string {
		var out []string
		if l != nil {
			for _, x := range *l {
				if !x.IsAbsent() {
					out = append(out, x.Name)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(names(a), names(b))
}
