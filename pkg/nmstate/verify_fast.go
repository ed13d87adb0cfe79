package nmstate

import (
	"cmp"
	"net/netip"
	"reflect"
	"slices"
)

// The typed fast path of Verify.
//
// The generic comparison renders both sides of every interface and route
// as trees (Tree) and compares those; for a state of tens of interfaces
// that is most of an apply's verification time. Most desired interfaces
// and routes only use a few common fields, which can be compared on the
// typed values directly.
//
// The fast path only ever accepts. For one interface (or the whole route
// list) it proves on the typed values that the generic comparison would
// find no mismatch, and that neither side's tree would fail to render
// (which the generic path reports as a mismatch). Whatever it cannot prove
// (a field outside the common set, any difference, a value it does not
// model) goes to the generic path, which alone decides the verdict and
// writes the messages. So verdicts and messages are the generic path's,
// always; the fast path only skips work whose outcome is known to be
// "no mismatch". Every rule below mirrors one step of the generic path
// (sanitizeIface, sanitizeIP, subset, routeTree, treeMatches), with strict
// equality where the generic path has a tolerance the fast path does not
// model.

// fastIfaceMatch reports whether the generic comparison of desired d with
// current c (d is up and c was found for it) certainly finds nothing.
func (v *verifier) fastIfaceMatch(d, c *Interface) bool {
	// Only these desired keys are modelled; any other set field goes to the
	// generic path (Interface has only pointer and string fields, so this
	// comparison sees every field, including ones added later).
	shape := Interface{
		Name: d.Name, Type: d.Type, State: d.State, MTU: d.MTU, MACAddress: d.MACAddress,
		Controller: d.Controller, IPv4: d.IPv4, IPv6: d.IPv6, Veth: d.Veth, LinuxBridge: d.LinuxBridge,
	}
	if *d != shape {
		return false
	}
	// name (findCurrent matched it exactly) and type: the generic path
	// replaces the current type by the desired one when they are the same
	// kind, so any other pair differs.
	if d.Name != c.Name || (d.Type != "" && !sameKind(d.Type, c.Type)) {
		return false
	}
	if d.State != "" && d.State != c.State {
		return false
	}
	if !samePtr(d.MTU, c.MTU) || !samePtr(d.MACAddress, c.MACAddress) {
		return false
	}
	// A desired empty controller holds when current reports none.
	if d.Controller != nil && !samePtr(d.Controller, c.Controller) && (c.Controller != nil || *d.Controller != "") {
		return false
	}
	if !fastIPMatch(d.IPv4, c.IPv4) || !fastIPMatch(d.IPv6, c.IPv6) {
		return false
	}
	if d.Veth != nil && (c.Veth == nil || c.Veth.Peer != d.Veth.Peer) {
		return false
	}
	if !fastBridgeMatch(d.LinuxBridge, c.LinuxBridge) {
		return false
	}
	// Last, as it walks both values: a tree that cannot be rendered is a
	// mismatch of its own on the generic path.
	return v.fits(d) && v.fits(c)
}

// samePtr reports whether a desired optional value holds in current: not
// given, or given and current reports the same value.
func samePtr[T comparable](d, c *T) bool {
	return d == nil || (c != nil && *c == *d)
}

// sameFlag is samePtr for dhcp and autoconf, which current may leave out
// when they are off.
func sameFlag(d, c *bool) bool {
	return samePtr(d, c) || (c == nil && !*d)
}

// fastIPMatch models sanitizeIP and the subset comparison of one family's
// section: enabled, dhcp, autoconf and static addresses, extra current
// addresses allowed.
func fastIPMatch(d, c *IPConfig) bool {
	if d == nil {
		return true
	}
	if c == nil {
		return false
	}
	allowExtra := d.AllowExtraAddress == nil || *d.AllowExtraAddress
	if !allowExtra || !onlyIPFields(d) {
		return false
	}
	if !samePtr(d.Enabled, c.Enabled) {
		return false
	}
	if d.DHCP != nil && !sameFlag(d.DHCP, c.DHCP) {
		return false
	}
	if d.Autoconf != nil && !sameFlag(d.Autoconf, c.Autoconf) {
		return false
	}
	if d.Address == nil {
		return true
	}
	// Link-local addresses are not compared; dynamic current ones and
	// current ones not desired are dropped (extra addresses allowed). What
	// is left must be the desired list as a multiset: the generic path
	// sorts both lists with a total order and compares them pairwise.
	var want, got []addrKeyT
	for _, a := range d.Address {
		if a.ValidLifetime != nil || a.PreferredLifetime != nil || a.MPTCPFlags != nil {
			return false
		}
		if !isLinkLocalIP(a.IP) {
			want = append(want, addrKeyT{a.IP, a.PrefixLength})
		}
	}
	for _, a := range c.Address {
		k := addrKeyT{a.IP, a.PrefixLength}
		if isLinkLocalIP(a.IP) || a.IsDynamic() || !slices.Contains(want, k) {
			continue
		}
		got = append(got, k)
	}
	if len(want) != len(got) {
		return false
	}
	slices.SortFunc(want, addrKeyT.compare)
	slices.SortFunc(got, addrKeyT.compare)
	return slices.Equal(want, got)
}

// onlyIPFields reports whether d sets nothing but the modelled keys
// (allow-extra-address is an instruction verification drops).
func onlyIPFields(d *IPConfig) bool {
	x := *d
	x.Enabled, x.DHCP, x.Autoconf, x.AllowExtraAddress, x.Address = nil, nil, nil, nil, nil
	return reflect.ValueOf(x).IsZero()
}

// addrKeyT is what the generic path compares of an address once lifetimes
// are dropped: netip.Addr equality is equality of the rendered text.
type addrKeyT struct {
	ip   netip.Addr
	plen uint8
}

func (a addrKeyT) compare(b addrKeyT) int {
	if c := a.ip.Compare(b.ip); c != 0 {
		return c
	}
	return cmp.Compare(a.plen, b.plen)
}

func isLinkLocalIP(ip netip.Addr) bool { return ip.Is6() && ip.IsLinkLocalUnicast() }

// fastBridgeMatch models the linux-bridge section: STP on or off and the
// port names (a set: the generic path sorts both lists by name).
func fastBridgeMatch(d, c *LinuxBridge) bool {
	if d == nil {
		return true
	}
	if c == nil {
		return false
	}
	if o := d.Options; o != nil {
		if c.Options == nil || *o != (LinuxBridgeOptions{STP: o.STP}) {
			return false
		}
		if s := o.STP; s != nil {
			if c.Options.STP == nil || *s != (LinuxBridgeSTP{Enabled: s.Enabled}) || !samePtr(s.Enabled, c.Options.STP.Enabled) {
				return false
			}
		}
	}
	if d.Port == nil {
		return true
	}
	if len(d.Port) != len(c.Port) {
		return false
	}
	want := make([]string, len(d.Port))
	got := make([]string, len(c.Port))
	for i, p := range d.Port {
		if p != (LinuxBridgePort{Name: p.Name}) {
			return false
		}
		want[i] = p.Name
	}
	for i, p := range c.Port {
		got[i] = p.Name
	}
	slices.Sort(want)
	slices.Sort(got)
	return slices.Equal(want, got)
}

// fastRoutesMatch reports whether the generic route comparison certainly
// finds nothing: every desired route is a plain one (not an absent
// pattern, only destination, next hop, metric and table) that a current
// route matches, and every route on both sides renders.
func (v *verifier) fastRoutesMatch() bool {
	var cur []Route
	if v.current.Routes != nil {
		cur = v.current.Routes.Config
	}
	for i := range cur {
		if !v.fits(&cur[i]) {
			return false
		}
	}
	for i := range v.desired.Routes.Config {
		r := &v.desired.Routes.Config[i]
		if !v.fits(r) {
			return false
		}
		if r.NextHopInterface != nil && v.ignored[*r.NextHopInterface] {
			continue
		}
		shape := Route{Destination: r.Destination, NextHopInterface: r.NextHopInterface,
			NextHopAddress: r.NextHopAddress, Metric: r.Metric, TableID: r.TableID}
		if *r != shape {
			return false
		}
		if !slices.ContainsFunc(cur, func(c Route) bool { return fastRouteMatch(r, &c) }) {
			return false
		}
	}
	return true
}

// fastRouteMatch models treeMatches on two routeTrees (both filled): the
// metric is ignored, an empty next-hop address is no constraint, an unset
// or zero table is the main table.
func fastRouteMatch(d, c *Route) bool {
	if d.Destination != nil && (!d.Destination.IsValid() || !samePtr(d.Destination, c.Destination)) {
		return false
	}
	if d.NextHopInterface != nil && !samePtr(d.NextHopInterface, c.NextHopInterface) && (c.NextHopInterface != nil || *d.NextHopInterface != "") {
		return false
	}
	if d.NextHopAddress != nil && d.NextHopAddress.IsValid() && !samePtr(d.NextHopAddress, c.NextHopAddress) {
		return false
	}
	return treeTable(d.TableID) == treeTable(c.TableID)
}

func treeTable(t *uint32) uint32 {
	if t == nil || *t == 0 {
		return 254
	}
	return *t
}

// fits reports whether Tree renders x (a non-nil pointer to an Interface
// or a Route) without error. It walks x as the encoder and decodeOpaque
// would, counting values against the same budget; opaque (`any`) values
// are not modelled and count as not fitting, so they take the generic
// path.
func (v *verifier) fits(x any) bool {
	n := 0
	present, ok := fitsValue(reflect.ValueOf(x).Elem(), &n)
	return ok && (!present || n <= maxValues)
}

// fitsValue mirrors encoder.value: present is false for what the encoder
// omits (nil pointers, slices and maps).
func fitsValue(x reflect.Value, n *int) (present, ok bool) {
	b, known := treeShapes.bounds[x.Type()]
	if !known {
		return false, false
	}
	return fitsBound(x, b, n)
}

// fitsBound is fitsValue for a value whose type's bound is b.
func fitsBound(x reflect.Value, b typeBound, n *int) (present, ok bool) {
	t := x.Type()
	if b.fixed {
		// No lists, maps or opaque values inside: the value renders, to
		// at most b.max values (a bound suffices for the budget check).
		if t.Kind() == reflect.Pointer && x.IsNil() {
			return false, true
		}
		*n += b.max
		return true, true
	}
	switch {
	case t.Kind() == reflect.Pointer:
		if x.IsNil() {
			return false, true
		}
		return fitsValue(x.Elem(), n)
	case t.Kind() == reflect.Struct:
		*n++
		info := treeShapes.structs[t]
		var seen map[string]bool
		for i, f := range info.fields {
			fx := x.Field(f.index)
			if fx.Kind() == reflect.String && fx.String() == "" && !f.required {
				continue
			}
			present, ok := fitsBound(fx, info.bounds[i], n)
			if !ok {
				return false, false
			}
			if !present || !info.dup[f.key] {
				continue
			}
			// Two fields sharing a key (bridge) would be a duplicate key.
			if seen == nil {
				seen = map[string]bool{}
			}
			if seen[f.key] {
				return false, false
			}
			seen[f.key] = true
		}
		return true, true
	case t.Kind() == reflect.Slice:
		if x.IsNil() {
			return false, true
		}
		*n++
		for i := 0; i < x.Len(); i++ {
			present, ok := fitsValue(x.Index(i), n)
			if !ok {
				return false, false
			}
			if !present {
				*n++ // rendered as null
			}
		}
		return true, true
	case t.Kind() == reflect.Map:
		if x.IsNil() {
			return false, true
		}
		if t.Key().Kind() != reflect.String {
			return false, false
		}
		*n++
		for it := x.MapRange(); it.Next(); {
			present, ok := fitsValue(it.Value(), n)
			if !ok {
				return false, false
			}
			if !present {
				*n++
			}
		}
		return true, true
	}
	// Opaque values, and kinds the encoder refuses.
	return false, false
}

// treeShapes is the encoder's view of every type an Interface or a Route
// holds, worked out once: it is only read after package initialisation.
var treeShapes = newShapes(reflect.TypeFor[Interface](), reflect.TypeFor[Route]())

type shapes struct {
	structs map[reflect.Type]*fitsStruct
	bounds  map[reflect.Type]typeBound
}

// fitsStruct is the encoder's view of one struct type: its fields and the
// keys more than one field renders to.
type fitsStruct struct {
	fields []fieldInfo
	// bounds holds each field's type bound, in fields' order.
	bounds []typeBound
	dup    map[string]bool
}

// typeBound says whether every value of a type renders (pointers aside)
// to a tree of at most max values: a type without lists, maps, opaque
// values or keys shared by two fields, whose scalars the encoder takes.
type typeBound struct {
	fixed bool
	max   int
}

func newShapes(roots ...reflect.Type) *shapes {
	s := &shapes{structs: map[reflect.Type]*fitsStruct{}, bounds: map[reflect.Type]typeBound{}}
	for _, t := range roots {
		s.bound(t)
	}
	return s
}

// bound works out t's bound and, first, those of every type t holds.
func (s *shapes) bound(t reflect.Type) typeBound {
	if b, ok := s.bounds[t]; ok {
		return b
	}
	s.bounds[t] = typeBound{} // a recursive type is walked
	var b typeBound
	switch {
	case t.Kind() == reflect.Pointer:
		b = s.bound(t.Elem())
	case t == addrType || t == prefixType:
		b = typeBound{fixed: true, max: 1}
	case t.Kind() == reflect.Struct:
		info := &fitsStruct{fields: fieldsOf(t)}
		count := map[string]int{}
		for _, f := range info.fields {
			count[f.key]++
		}
		for k, c := range count {
			if c > 1 {
				if info.dup == nil {
					info.dup = map[string]bool{}
				}
				info.dup[k] = true
			}
		}
		s.structs[t] = info
		b = typeBound{fixed: info.dup == nil, max: 1}
		for _, f := range info.fields {
			fb := s.bound(t.Field(f.index).Type)
			info.bounds = append(info.bounds, fb)
			b.fixed = b.fixed && fb.fixed
			b.max += fb.max
		}
	case t.Kind() == reflect.Slice:
		s.bound(t.Elem())
	case t.Kind() == reflect.Map:
		s.bound(t.Elem())
	case t.Kind() == reflect.String, t.Kind() == reflect.Bool, t.Implements(hexerType),
		t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64,
		t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		b = typeBound{fixed: true, max: 1}
	}
	if !b.fixed {
		b = typeBound{}
	}
	s.bounds[t] = b
	return b
}
