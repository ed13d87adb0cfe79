package nmstate

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Mismatch is one way the re-read state differs from the desired state.
// Path is shaped like nmstate's verification messages
// (`eth1.interface.ipv4.address[0].ip`, `routes.config[2]`,
// `dns-resolver.config.server`). A value mismatch has Want and Got (JSON
// text, "null" for a missing value); other problems (an interface that
// should exist but does not) carry Detail instead.
type Mismatch struct {
	Path   string
	Want   string
	Got    string
	Detail string
}

func (m Mismatch) String() string {
	if m.Detail != "" {
		return m.Path + ": " + m.Detail
	}
	return fmt.Sprintf("%s desire '%s', current '%s'", m.Path, m.Want, m.Got)
}

// Mismatches is the error Verify returns: every difference found, in
// document order. Its kind is Verification (KindOf, errors.Is with
// &Error{Kind: Verification}).
type Mismatches []Mismatch

// Error prints one "verification failure: ..." line per mismatch.
func (l Mismatches) Error() string {
	s := make([]string, len(l))
	for i, m := range l {
		s[i] = "verification failure: " + m.String()
	}
	return strings.Join(s, "\n")
}

// Unwrap exposes each mismatch as an *Error of kind Verification.
func (l Mismatches) Unwrap() []error {
	out := make([]error, len(l))
	for i, m := range l {
		d := m.Detail
		if d == "" {
			d = fmt.Sprintf("desire '%s', current '%s'", m.Want, m.Got)
		}
		out[i] = &Error{Kind: Verification, Path: Path(m.Path), Detail: d}
	}
	return out
}

// Verify reports whether current (re-read after an apply) shows everything
// desired asks for, with nmstate's tolerances: desired is compared as a
// subset of current (keys the user did not give are not checked), MACs
// case-insensitively, bond options not at all, extra and dynamic addresses
// are allowed, link-local addresses and query-only keys ignored, bridge
// multicast timers may be off by one (kernels round them to HZ), routes
// ignore their metric, and interfaces desired as `ignore` are skipped.
// It returns nil or a Mismatches listing every difference.
func Verify(desired, current *State) error {
	return verify(desired, current, true)
}

// Shows reports whether current already shows desired, by the rule an
// apply is verified with: desired merged into current verifies against
// current. It is the fixed point a caller checks before applying again
// (a policy that is still in place, a first-boot file applied at an
// earlier boot); a desired state that does not merge is not shown.
func Shows(current, desired *State) bool {
	m, err := Merge(desired, current)
	if err != nil {
		return false
	}
	return Verify(m.Desired, current) == nil
}

// verify is Verify; fast enables the typed fast path (verify_fast.go),
// which tests turn off to compare against the generic path alone.
func verify(desired, current *State, fast bool) error {
	if desired == nil {
		return nil
	}
	if current == nil {
		current = &State{}
	}
	desired = keepHiddenSecrets(desired, current)
	// Routes naming their VRF are checked in the VRF's table, which the
	// current state shows (Merge resolves the same way before apply).
	if routes, _ := routesResolved(desired, current); routes != nil {
		d := *desired
		d.Routes = routes
		desired = &d
	}
	v := &verifier{desired: desired, current: current, ignored: map[string]bool{}, fast: fast}
	for i := range current.Interfaces {
		if current.Interfaces[i].State == StateIgnore {
			v.ignored[current.Interfaces[i].Name] = true
		}
	}
	for i := range desired.Interfaces {
		if desired.Interfaces[i].State == StateIgnore {
			v.ignored[desired.Interfaces[i].Name] = true
		}
	}
	v.hostname()
	v.dns()
	v.rules()
	if v.desired.Routes != nil && !(v.fast && v.fastRoutesMatch()) {
		v.routes()
	}
	v.interfaces()
	v.ovsGlobal()
	if len(v.out) == 0 {
		return nil
	}
	return v.out
}

type verifier struct {
	desired, current *State
	// ignored names interfaces excluded from verification, with the routes
	// and rules through them.
	ignored map[string]bool
	out     Mismatches
	// fast enables the typed fast path.
	fast bool
}

func (v *verifier) add(path, want, got string) {
	v.out = append(v.out, Mismatch{Path: path, Want: want, Got: got})
}

func (v *verifier) detail(path, detail string) {
	v.out = append(v.out, Mismatch{Path: path, Detail: detail})
}

func (v *verifier) hostname() {
	d := v.desired.Hostname
	if d == nil {
		return
	}
	c := v.current.Hostname
	if c == nil {
		c = &Hostname{}
	}
	if d.Running != nil && (c.Running == nil || *c.Running != *d.Running) {
		v.add("hostname.running", *d.Running, strOrNull(c.Running))
	}
	if d.Config != nil && (c.Config == nil || *c.Config != *d.Config) {
		v.add("hostname.config", *d.Config, strOrNull(c.Config))
	}
}

func strOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func (v *verifier) dns() {
	if v.desired.DNSResolver == nil || v.desired.DNSResolver.Config == nil {
		return
	}
	d := v.desired.DNSResolver.Config
	c := &DNSConfig{}
	if v.current.DNSResolver != nil && v.current.DNSResolver.Config != nil {
		c = v.current.DNSResolver.Config
	}
	server, search, options := d.Server, d.Search, d.Options
	if server == nil && search == nil && options == nil {
		// `config: {}` purges the static configuration.
		server, search, options = []netip.Addr{}, []string{}, []string{}
	}
	if server != nil {
		want, got := addrStrings(server), addrStrings(c.Server)
		if !slices.Equal(want, got) {
			v.add("dns-resolver.config.server", jsonText(want), jsonText(got))
		}
	}
	if search != nil {
		want, got := nonNil(search), nonNil(c.Search)
		if !slices.Equal(want, got) {
			v.add("dns-resolver.config.search", jsonText(want), jsonText(got))
		}
	}
	if options != nil {
		// Options are a set: resolv.conf writers reorder them.
		want, got := slices.Sorted(slices.Values(nonNil(options))), slices.Sorted(slices.Values(nonNil(c.Options)))
		if !slices.Equal(want, got) {
			v.add("dns-resolver.config.options", jsonText(want), jsonText(got))
		}
	}
}

func addrStrings(a []netip.Addr) []string {
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = x.String()
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// jsonText renders a value compactly for a mismatch message; scalars print
// bare, as nmstate prints them.
func jsonText(x any) string {
	switch t := x.(type) {
	case nil:
		return "null"
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	}
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return string(b)
}

// mainTable is the kernel's main routing table, which an unset or zero
// table id means.
const mainTable = "254"

func (v *verifier) routes() {
	if v.desired.Routes == nil {
		return
	}
	var cur []map[string]any
	if v.current.Routes != nil {
		for i := range v.current.Routes.Config {
			cur = append(cur, routeTree(v.treeMap("routes.config", &v.current.Routes.Config[i]), true))
		}
	}
	// Each desired route's tree is built once: wanted keeps the present
	// ones, trees every one by index (fill exactly when not absent).
	var wanted []map[string]any
	trees := make([]map[string]any, len(v.desired.Routes.Config))
	for i := range v.desired.Routes.Config {
		r := &v.desired.Routes.Config[i]
		trees[i] = routeTree(v.treeMap("routes.config", r), !r.IsAbsent())
		if !r.IsAbsent() {
			wanted = append(wanted, trees[i])
		}
	}
	for i := range v.desired.Routes.Config {
		r := &v.desired.Routes.Config[i]
		if r.NextHopInterface != nil && v.ignored[*r.NextHopInterface] {
			continue
		}
		absent := r.IsAbsent()
		want := trees[i]
		found := matchesAny(want, cur, wanted, absent)
		p := "routes.config[" + strconv.Itoa(i) + "]"
		switch {
		case absent && found:
			v.detail(p, "desired absent route "+jsonText(want)+" still found after apply")
		case !absent && !found:
			v.detail(p, "desired route "+jsonText(want)+" not found after apply")
		}
	}
}

// routeTree is a route's canonical tree without the keys verification does
// not compare: the metric (nmstate's route identity ignores it) and the
// state. With fill, an unset or zero table means the main table.
func routeTree(m map[string]any, fill bool) map[string]any {
	delete(m, "metric")
	delete(m, "state")
	if a, ok := m["next-hop-address"]; ok && a == "" && fill {
		delete(m, "next-hop-address")
	}
	if t, ok := m["table-id"]; ok && jsonText(t) == "0" {
		m["table-id"] = json.Number(mainTable)
	} else if !ok && fill {
		m["table-id"] = json.Number(mainTable)
	}
	return m
}

func (v *verifier) rules() {
	if v.desired.RouteRules == nil {
		return
	}
	var cur []map[string]any
	if v.current.RouteRules != nil {
		for i := range v.current.RouteRules.Config {
			cur = append(cur, ruleTree(v.treeMap("route-rules.config", &v.current.RouteRules.Config[i]), true))
		}
	}
	var wanted []map[string]any
	trees := make([]map[string]any, len(v.desired.RouteRules.Config))
	for i := range v.desired.RouteRules.Config {
		r := &v.desired.RouteRules.Config[i]
		trees[i] = ruleTree(v.treeMap("route-rules.config", r), !r.IsAbsent())
		if !r.IsAbsent() {
			wanted = append(wanted, trees[i])
		}
	}
	for i := range v.desired.RouteRules.Config {
		r := &v.desired.RouteRules.Config[i]
		if r.IIF != nil && v.ignored[*r.IIF] {
			continue
		}
		absent := r.IsAbsent()
		want := trees[i]
		found := matchesAny(want, cur, wanted, absent)
		p := "route-rules.config[" + strconv.Itoa(i) + "]"
		switch {
		case absent && found:
			v.detail(p, "desired absent route rule "+jsonText(want)+" still found after apply")
		case !absent && !found:
			v.detail(p, "desired route rule "+jsonText(want)+" not found after apply")
		}
	}
}

// ruleTree is a rule's canonical tree without its state; with fill, a rule
// that looks up a table and names none looks up the main table.
func ruleTree(m map[string]any, fill bool) map[string]any {
	delete(m, "state")
	if t, ok := m["route-table"]; ok && jsonText(t) == "0" {
		m["route-table"] = json.Number(mainTable)
	} else if !ok && fill && m["action"] == nil {
		m["route-table"] = json.Number(mainTable)
	}
	return m
}

// matchesAny reports whether want matches one of the current entries. For
// an absent pattern, entries that a desired entry asks for do not count:
// the pattern removes what existed, the desired list adds back (nmstate
// applies absent patterns first).
func matchesAny(want map[string]any, cur, wanted []map[string]any, absent bool) bool {
	for _, c := range cur {
		if !treeMatches(want, c) {
			continue
		}
		if absent && slices.ContainsFunc(wanted, func(w map[string]any) bool { return treeMatches(w, c) }) {
			continue
		}
		return true
	}
	return false
}

// treeMatches reports whether every key of want is in got with an equal
// value (the match rule of routes, rules and absent patterns); a key given
// as "" matches a key that is not set.
func treeMatches(want, got map[string]any) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok && w == "" {
			// An empty value in a pattern means "unset".
			continue
		}
		if !ok || !leafEqual("", w, g) {
			return false
		}
	}
	return true
}

// treeMap is the canonical tree of a schema value. A value that cannot be
// rendered is itself a mismatch, never a vacuous pass.
func (v *verifier) treeMap(path string, x any) map[string]any {
	t, err := Tree(x)
	if err != nil {
		v.detail(path, "cannot compare: "+err.Error())
		return map[string]any{}
	}
	m, _ := t.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

func (v *verifier) interfaces() {
	for i := range v.desired.Interfaces {
		d := &v.desired.Interfaces[i]
		if v.ignored[d.Name] {
			continue
		}
		c := v.findCurrent(d)
		p := d.Name + ".interface"
		st := d.EffectiveState()
		switch {
		case st == StateAbsent || (st == StateDown && d.Type.DeletedByDown()):
			// Physical NICs cannot be removed; only a virtual interface
			// that is still there is a failure.
			if c != nil && (c.Type.IsVirtual() || (d.Type != "" && d.Type.IsVirtual())) {
				v.detail(p, fmt.Sprintf("%s interface %s still found", st, d.Name))
			}
			continue
		case st == StateDown:
			// nmstate does not verify a physical interface brought down.
			continue
		case st != StateUp:
			continue
		}
		if c == nil {
			v.detail(p, "failed to find desired interface "+d.Name)
			continue
		}
		if v.fast && v.fastIfaceMatch(d, c) {
			continue
		}
		if d.AltNames != nil && c.AltNames != nil {
			for _, a := range *d.AltNames {
				if a.IsAbsent() && slices.ContainsFunc(*c.AltNames, func(x AltName) bool { return x.Name == a.Name }) {
					v.detail(p+".alt-names", "alternative name "+a.Name+" still found")
				}
			}
		}
		want, got := v.treeMap(p, d), v.treeMap(p, c)
		sanitizeIface(want, got, d, c)
		v.subset(p, "", want, got)
	}
}

// findCurrent finds the current interface a desired one refers to: same
// name and type; an untyped desired interface matches by name, and a veth
// counts as an ethernet and an ethernet as a veth (nmstate unifies them).
func (v *verifier) findCurrent(d *Interface) *Interface {
	if c := v.current.FindTyped(d.Name, d.Type); c != nil {
		return c
	}
	switch d.Type {
	case TypeEthernet:
		return v.current.FindTyped(d.Name, TypeVeth)
	case TypeVeth:
		return v.current.FindTyped(d.Name, TypeEthernet)
	}
	return nil
}

// queryOnly lists keys (as dotted paths inside an interface tree) that a
// desired state may carry, e.g. when it was produced from a query, but
// that are reported rather than configured; verification skips them.
var queryOnly = [][]string{
	{"min-mtu"}, {"max-mtu"}, {"permanent-mac-address"}, {"driver"}, {"tun"},
	{"lldp", "neighbors"},
	{"ethtool", "ring", "rx-max"}, {"ethtool", "ring", "rx-jumbo-max"},
	{"ethtool", "ring", "rx-mini-max"}, {"ethtool", "ring", "tx-max"},
	{"bridge", "options", "gc-timer"}, {"bridge", "options", "hello-timer"},
	// Bond options are not verified: the kernel rewrites many of them
	// (nmstate only warns, "per oVirt request").
	{"link-aggregation", "options"},
	// Instructions, not state: to verification (allow-extra-address), or
	// to merge (copy-mac-from, identifier and profile-name select or
	// derive what the kernel then shows under other keys).
	{"ipv4", "allow-extra-address"}, {"ipv6", "allow-extra-address"},
	{"copy-mac-from"}, {"identifier"}, {"profile-name"},
}

// sanitizeIface brings both trees of one interface into comparable form.
func sanitizeIface(want, got map[string]any, d, c *Interface) {
	for _, p := range queryOnly {
		deletePath(want, p)
	}
	sanitizeOVSDB(want, got)
	if vfs, ok := lookup(want, "ethernet", "sr-iov", "vfs").([]any); ok {
		for _, vf := range vfs {
			if m, ok := vf.(map[string]any); ok {
				delete(m, "iface-name")
			}
		}
		sanitizeVFs(vfs, got)
	}
	if sameKind(d.Type, c.Type) && d.Type != "" {
		got["type"] = string(d.Type)
	}
	sanitizeIP(want, got, "ipv4", d.IPv4)
	sanitizeIP(want, got, "ipv6", d.IPv6)
	// Port lists are sets; the kernel reports them in its own order.
	for _, p := range [][]string{{"link-aggregation", "port"}, {"vrf", "port"}} {
		sortStrings(lookup(want, p...))
		sortStrings(lookup(got, p...))
	}
	for _, p := range [][]string{{"bridge", "port"}, {"team", "port"}} {
		sortByName(lookup(want, p...))
		sortByName(lookup(got, p...))
	}
	// Alternative names change incrementally: the names desired present
	// must be there (removals are checked by interfaces), others may be.
	if wa, ok := want["alt-names"].([]any); ok {
		wanted := map[string]bool{}
		keep := []any{}
		for _, a := range wa {
			if m, ok := a.(map[string]any); ok && m["state"] == nil {
				wanted[jsonText(m["name"])] = true
				keep = append(keep, m)
			}
		}
		have := []any{}
		if ga, ok := got["alt-names"].([]any); ok {
			for _, a := range ga {
				if m, ok := a.(map[string]any); ok && wanted[jsonText(m["name"])] {
					have = append(have, m)
				}
			}
		}
		sortByName(keep)
		sortByName(have)
		want["alt-names"], got["alt-names"] = keep, have
	}
}

// sanitizeVFs matches VFs by id, as nmstate does: each desired VF is
// compared with the current VF of the same id, and VFs desired does not
// list may be anything. Both lists end up in desired's order.
func sanitizeVFs(want []any, got map[string]any) {
	sr, _ := lookup(got, "ethernet", "sr-iov").(map[string]any)
	if sr == nil {
		return
	}
	have, _ := sr["vfs"].([]any)
	byID := map[string]any{}
	for _, vf := range have {
		if m, ok := vf.(map[string]any); ok {
			byID[jsonText(m["id"])] = m
		}
	}
	out := make([]any, len(want))
	for i, vf := range want {
		m, _ := vf.(map[string]any)
		out[i] = byID[jsonText(m["id"])]
	}
	sr["vfs"] = out
}

// sanitizeIP drops what verification ignores from the address lists of one
// family: lifetimes, dynamic (DHCP/SLAAC) and IPv6 link-local addresses (on
// both sides: merge drops desired dynamic addresses, as nmstate does), and
// extra current addresses unless allow-extra-address is false. Both lists
// are then sorted (the kernel lists IPv6 addresses newest first).
func sanitizeIP(want, got map[string]any, fam string, d *IPConfig) {
	wip, _ := want[fam].(map[string]any)
	gip, _ := got[fam].(map[string]any)
	if wip == nil || gip == nil {
		return
	}
	wa, wok := wip["address"].([]any)
	ga, _ := gip["address"].([]any)
	if !wok {
		return
	}
	wa = keepAddrs(wa, func(m map[string]any) bool { return !isLinkLocal(m) && !isDynamicAddr(m) })
	ga = keepAddrs(ga, func(m map[string]any) bool { return !isLinkLocal(m) && !isDynamicAddr(m) })
	if d.AllowExtraAddress == nil || *d.AllowExtraAddress {
		wanted := map[string]bool{}
		for _, a := range wa {
			wanted[addrKey(a)] = true
		}
		ga = keepAddrs(ga, func(m map[string]any) bool { return wanted[addrKey(m)] })
	}
	for _, l := range [][]any{wa, ga} {
		for _, a := range l {
			if m, ok := a.(map[string]any); ok {
				delete(m, "valid-life-time")
				delete(m, "preferred-life-time")
			}
		}
		sort.SliceStable(l, func(i, j int) bool { return addrLess(l[i], l[j]) })
	}
	wip["address"] = wa
	gip["address"] = ga
}

func keepAddrs(l []any, keep func(map[string]any) bool) []any {
	out := []any{}
	for _, a := range l {
		if m, ok := a.(map[string]any); ok && keep(m) {
			out = append(out, m)
		}
	}
	return out
}

func addrKey(a any) string {
	m, _ := a.(map[string]any)
	return jsonText(m["ip"]) + "/" + jsonText(m["prefix-length"])
}

func addrOf(a any) netip.Addr {
	m, _ := a.(map[string]any)
	s, _ := m["ip"].(string)
	ip, _ := netip.ParseAddr(s)
	return ip
}

func addrLess(a, b any) bool {
	if c := addrOf(a).Compare(addrOf(b)); c != 0 {
		return c < 0
	}
	return addrKey(a) < addrKey(b)
}

func isLinkLocal(m map[string]any) bool {
	ip := addrOf(m)
	return ip.Is6() && ip.IsLinkLocalUnicast()
}

func isDynamicAddr(m map[string]any) bool {
	lft, ok := m["valid-life-time"].(string)
	return ok && lft != "forever"
}

func sortStrings(x any) {
	if l, ok := x.([]any); ok {
		sort.SliceStable(l, func(i, j int) bool { return jsonText(l[i]) < jsonText(l[j]) })
	}
}

func sortByName(x any) {
	if l, ok := x.([]any); ok {
		name := func(e any) string {
			m, _ := e.(map[string]any)
			return jsonText(m["name"])
		}
		sort.SliceStable(l, func(i, j int) bool { return name(l[i]) < name(l[j]) })
	}
}

func lookup(t map[string]any, path ...string) any {
	var cur any = t
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func deletePath(t map[string]any, path []string) {
	parent, _ := lookup(t, path[:len(path)-1]...).(map[string]any)
	if parent != nil {
		delete(parent, path[len(path)-1])
	}
}

// subset records a mismatch for every desired value that current does not
// show. rel is the dotted path inside the interface (for the tolerance
// rules), p the printed prefix.
func (v *verifier) subset(p, rel string, want, got any) {
	if want == nil {
		// A null desired value asks for nothing.
		return
	}
	full := p
	if rel != "" {
		full = p + "." + rel
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if got == nil && len(w) == 0 {
			// An empty section asks for nothing (a bridge port's `vlan: {}`
			// is "no VLAN filtering", which the kernel reports as no vlan).
			return
		}
		if !ok {
			v.add(full, jsonText(want), jsonText(got))
			return
		}
		for _, k := range sortedKeys(w) {
			gv, present := g[k]
			if !present && missingTolerated(k, w[k]) {
				continue
			}
			v.subset(p, joinRel(rel, k), w[k], gv)
		}
	case []any:
		g, ok := got.([]any)
		if got == nil && len(w) == 0 {
			// An empty list and an unreported one mean the same.
			return
		}
		if !ok || len(g) != len(w) {
			v.add(full, jsonText(want), jsonText(got))
			return
		}
		for i := range w {
			v.subset(p, rel+"["+strconv.Itoa(i)+"]", w[i], g[i])
		}
	default:
		if !leafEqual(rel, want, got) {
			v.add(full, jsonText(want), jsonText(got))
		}
	}
}

func joinRel(rel, k string) string {
	if rel == "" {
		return k
	}
	return rel + "." + k
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// missingTolerated reports whether a desired key that current does not
// report at all still holds: the values query leaves out because they are
// the default (no controller, DHCP and autoconf off).
func missingTolerated(key string, want any) bool {
	switch key {
	case "controller":
		return want == ""
	case "dhcp", "autoconf":
		return want == false
	}
	return false
}

// roundedTimers are the linux-bridge multicast intervals the kernel keeps in
// jiffies: on a 250 HZ kernel a value can read back one off.
var roundedTimers = map[string]bool{
	"bridge.options.multicast-last-member-interval":    true,
	"bridge.options.multicast-membership-interval":     true,
	"bridge.options.multicast-querier-interval":        true,
	"bridge.options.multicast-query-interval":          true,
	"bridge.options.multicast-query-response-interval": true,
	"bridge.options.multicast-startup-query-interval":  true,
}

func leafEqual(rel string, want, got any) bool {
	switch want.(type) {
	case map[string]any, []any:
		return reflect.DeepEqual(want, got)
	}
	if want == got {
		return true
	}
	ws, wok := want.(string)
	gs, gok := got.(string)
	if wok && gok && isMAC(ws) && isMAC(gs) {
		return strings.EqualFold(ws, gs)
	}
	wn, wok := want.(json.Number)
	gn, gok := got.(json.Number)
	if wok && gok {
		if wn == gn {
			return true
		}
		if roundedTimers[rel] {
			a, err1 := strconv.ParseInt(string(wn), 10, 64)
			b, err2 := strconv.ParseInt(string(gn), 10, 64)
			return err1 == nil && err2 == nil && (a-b == 1 || b-a == 1)
		}
	}
	return false
}

// isMAC reports whether s looks like a hardware address (hex pairs joined
// by colons, 6 or 20 bytes).
func isMAC(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) < 6 {
		return false
	}
	for _, p := range parts {
		if len(p) != 2 {
			return false
		}
		if _, err := strconv.ParseUint(p, 16, 8); err != nil {
			return false
		}
	}
	return true
}
