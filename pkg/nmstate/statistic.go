package nmstate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Statistics says which nmstate features a desired state uses and what
// interface stacks it builds: what `nmstatectl statistic` prints and what a
// NodeNetworkConfigurationEnactment reports as status.features.
type Statistics struct {
	// Topology lists the interface stacks the desired state touches, each
	// from the top (IP configuration, then controllers) down to the lowest
	// interface, joined by " -> ", e.g.
	// "static_ip4 -> vlan -> linux-bridge -> bond -> ethernet". A stack that
	// is part of a longer one is left out. Sorted by length, then text.
	Topology []string `json:"topology"`
	// Features are nmstate's feature names (kebab-case, e.g. "static-route",
	// "ovs-bond"), sorted and without duplicates.
	Features []string `json:"features"`
}

// nmstate's feature names, spelled as upstream serializes them. Every
// feature upstream reports is covered.
//
// Not mapped: "mptcp". Upstream's feature list has it, but none of its
// statistic rules reports it (an interface's `mptcp` section or address
// flags add nothing there), so it is not reported here either.
const (
	FeatureDHCPv4CustomHostname       = "dhcpv4-custom-hostname"
	FeatureDHCPv6CustomHostname       = "dhcpv6-custom-hostname"
	FeatureIfaceNameReferredBySRIOVVF = "iface-name-refered-by-sriov-vf-id"
	FeatureLLDP                       = "lldp"
	FeatureMACBasedIdentifier         = "mac-based-identifier"
	FeatureOVNMapping                 = "ovn-mapping"
	FeatureOVSBond                    = "ovs-bond"
	FeatureOVSDBGlobal                = "ovs-db-global"
	FeatureOVSDBInterface             = "ovs-db-interface"
	FeatureOVSDPDK                    = "ovs-dpdk"
	FeatureOVSPatch                   = "ovs-patch"
	FeatureSRIOV                      = "sriov"
	FeatureStaticDNSNameServer        = "static-dns-name-server"
	FeatureStaticDNSOption            = "static-dns-option"
	FeatureStaticDNSSearch            = "static-dns-search"
	FeatureStaticHostname             = "static-hostname"
	FeatureStaticRoute                = "static-route"
	FeatureStaticRouteRule            = "static-route-rule"
	FeatureStaticRouteRuleSuppressPfx = "static-route-rule-suppress-prefix-length"
	FeatureIfaceCount10Plus           = "iface-count10-plus"
	FeatureIfaceCount50Plus           = "iface-count50-plus"
	FeatureIfaceCount100Plus          = "iface-count100-plus"
	FeatureIfaceCount200Plus          = "iface-count200-plus"
	FeatureIfaceCount500Plus          = "iface-count500-plus"
)

// sriovVFPrefix starts an interface name that refers to a VF by its PF and
// index ("sriov:eth1:3") instead of by its kernel name.
const sriovVFPrefix = "sriov:"

// Statistic reports the features and topologies of desired as it would be
// applied on current (nil = empty: nothing exists yet, as for Merge).
//
// It merges desired into current first, so a desired state Merge rejects
// is an error here too. Features come from what desired says, not from
// current: an interface, route or section counts when desired mentions it
// (routes and rules even as removal patterns, a DNS list even when empty),
// interfaces pulled into the change set by the merge add nothing. The
// interface-count feature counts the desired interfaces that end up up.
// Topologies are built from the merged view, for every desired or changed
// interface that ends up up.
func Statistic(desired, current *State) (Statistics, error) {
	if desired == nil {
		desired = &State{}
	}
	m, err := Merge(desired, withPseudoVFs(desired, current))
	if err != nil {
		return Statistics{}, fmt.Errorf("statistic: %w", err)
	}
	v := newStatView(m)

	fs := map[string]bool{}
	stateFeatures(desired, fs)
	for i := range desired.Interfaces {
		ifaceFeatures(&desired.Interfaces[i], fs)
	}
	if f := ifaceCountFeature(v.countUpDesired()); f != "" {
		fs[f] = true
	}
	features := make([]string, 0, len(fs))
	for f := range fs {
		features = append(features, f)
	}
	slices.Sort(features)
	return Statistics{Topology: v.topologies(), Features: features}, nil
}

// withPseudoVFs returns current with an ethernet interface for every
// `sriov:PF:N` name desired mentions that current lacks. Such names stand
// for VFs that may not exist yet (the PF's total-vfs creates them); the
// statistic must not fail on them the way an apply would.
func withPseudoVFs(desired, current *State) *State {
	if current == nil {
		return nil
	}
	var names []string
	add := func(n string) {
		if strings.HasPrefix(n, sriovVFPrefix) && len(current.Find(n)) == 0 && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for i := range desired.Interfaces {
		ifc := &desired.Interfaces[i]
		add(ifc.Name)
		ports, _ := ifc.Ports()
		for _, p := range ports {
			add(p)
		}
	}
	if len(names) == 0 {
		return current
	}
	c := *current
	c.Interfaces = append([]Interface(nil), current.Interfaces...)
	for _, n := range names {
		c.Interfaces = append(c.Interfaces, Interface{Name: n, Type: TypeEthernet, State: StateUp})
	}
	return &c
}

// stateFeatures adds the features of the top-level sections.
func stateFeatures(d *State, fs map[string]bool) {
	set := func(f string, on bool) {
		if on {
			fs[f] = true
		}
	}
	if c := d.DNSResolver; c != nil && c.Config != nil {
		set(FeatureStaticDNSNameServer, c.Config.Server != nil)
		set(FeatureStaticDNSSearch, c.Config.Search != nil)
		set(FeatureStaticDNSOption, c.Config.Options != nil)
	}
	set(FeatureStaticRoute, d.Routes != nil && d.Routes.Config != nil)
	if d.RouteRules != nil && len(d.RouteRules.Config) > 0 {
		fs[FeatureStaticRouteRule] = true
		for i := range d.RouteRules.Config {
			r := &d.RouteRules.Config[i]
			set(FeatureStaticRouteRuleSuppressPfx, !r.IsAbsent() && r.SuppressPrefixLength != nil)
		}
	}
	set(FeatureStaticHostname, d.Hostname != nil && d.Hostname.Config != nil)
	set(FeatureOVSDBGlobal, d.OVSDB != nil)
	set(FeatureOVNMapping, d.OVN != nil)
}

// ifaceFeatures adds the features one desired interface uses. Absent and
// ignored interfaces configure nothing.
func ifaceFeatures(ifc *Interface, fs map[string]bool) {
	if ifc.State == StateAbsent || ifc.State == StateIgnore {
		return
	}
	if strings.HasPrefix(ifc.Name, sriovVFPrefix) && !ifc.Type.IsUserSpace() {
		fs[FeatureIfaceNameReferredBySRIOVVF] = true
	}
	if ifc.Identifier != nil && *ifc.Identifier == "mac-address" {
		fs[FeatureMACBasedIdentifier] = true
	}
	if ifc.LLDP != nil {
		fs[FeatureLLDP] = true
	}
	if ifc.OVSDB != nil && (hasValue(ifc.OVSDB.ExternalIDs) || hasValue(ifc.OVSDB.OtherConfig)) {
		fs[FeatureOVSDBInterface] = true
	}
	if ifc.IPv4 != nil && ifc.IPv4.DHCPCustomHostname != nil {
		fs[FeatureDHCPv4CustomHostname] = true
	}
	if ifc.IPv6 != nil && ifc.IPv6.DHCPCustomHostname != nil {
		fs[FeatureDHCPv6CustomHostname] = true
	}
	if ifc.Ethernet != nil && ifc.Ethernet.SRIOV != nil {
		fs[FeatureSRIOV] = true
	}
	if ifc.OVSBridge != nil {
		for _, p := range ifc.OVSBridge.Port {
			if p.LinkAggregation != nil {
				fs[FeatureOVSBond] = true
			}
		}
	}
	if ifc.DPDK != nil {
		fs[FeatureOVSDPDK] = true
	}
	if ifc.Patch != nil {
		fs[FeatureOVSPatch] = true
	}
}

// hasValue reports whether an ovs-db map sets at least one key (a nil value
// removes a key and configures nothing).
func hasValue(m map[string]*string) bool {
	for _, v := range m {
		if v != nil {
			return true
		}
	}
	return false
}

// ifaceCountFeature buckets the number of up desired interfaces.
func ifaceCountFeature(n int) string {
	switch {
	case n >= 500:
		return FeatureIfaceCount500Plus
	case n >= 200:
		return FeatureIfaceCount200Plus
	case n >= 100:
		return FeatureIfaceCount100Plus
	case n >= 50:
		return FeatureIfaceCount50Plus
	case n >= 10:
		return FeatureIfaceCount10Plus
	}
	return ""
}

// statView is the merged view the topologies are read from: each interface
// as the apply leaves it (its change-set target, else the current
// interface, else the desired one), keyed by name and kernel/user space
// (an OVS bridge may share its name with a kernel interface).
type statView struct {
	m      *Merged
	ifaces map[statKey]*Interface
	// ctrlOf maps a kernel interface to the controller listing it as a port.
	ctrlOf map[string]*Interface
	// changed are the change-set entries not named in desired.
	changed []statKey
}

type statKey struct {
	name      string
	userSpace bool
}

func keyOf(ifc *Interface) statKey {
	return statKey{name: ifc.Name, userSpace: ifc.Type.IsUserSpace()}
}

func newStatView(m *Merged) *statView {
	v := &statView{m: m, ifaces: map[statKey]*Interface{}, ctrlOf: map[string]*Interface{}}
	put := func(list []Interface, skipAbsent bool) {
		for i := range list {
			ifc := &list[i]
			if ifc.State == StateIgnore || (skipAbsent && ifc.State == StateAbsent) || ifc.Type == "" {
				continue
			}
			v.ifaces[keyOf(ifc)] = ifc
		}
	}
	put(m.Desired.Interfaces, true)
	put(m.Current.Interfaces, false)
	put(m.Interfaces, false)

	desired := map[statKey]bool{}
	for i := range m.Desired.Interfaces {
		desired[keyOf(&m.Desired.Interfaces[i])] = true
	}
	for i := range m.Interfaces {
		if k := keyOf(&m.Interfaces[i]); !desired[k] {
			v.changed = append(v.changed, k)
		}
	}

	// Controllers in a stable order, so a port two controllers list (an
	// invalid state Merge would reject) still gives one answer.
	keys := make([]statKey, 0, len(v.ifaces))
	for k := range v.ifaces {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b statKey) int {
		return cmp.Or(strings.Compare(a.name, b.name), boolCmp(a.userSpace, b.userSpace))
	})
	for _, k := range keys {
		ifc := v.ifaces[k]
		if !ifc.Type.IsController() || !isUp(ifc) {
			continue
		}
		ports, _ := ifc.Ports()
		for _, p := range ports {
			if _, taken := v.ctrlOf[p]; !taken {
				v.ctrlOf[p] = ifc
			}
		}
	}
	return v
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func isUp(ifc *Interface) bool { return ifc.EffectiveState() == StateUp }

// kernel returns the kernel interface of this name in the view, or nil.
func (v *statView) kernel(name string) *Interface {
	return v.ifaces[statKey{name: name}]
}

// controller returns the controller of a kernel interface: the controller
// listing it as a port, else the one its controller key names.
func (v *statView) controller(ifc *Interface) *Interface {
	if ifc.Type.IsUserSpace() {
		return nil
	}
	if c := v.ctrlOf[ifc.Name]; c != nil {
		return c
	}
	if ifc.Controller == nil || *ifc.Controller == "" {
		return nil
	}
	for _, userSpace := range []bool{true, false} {
		if c := v.ifaces[statKey{name: *ifc.Controller, userSpace: userSpace}]; c != nil && c.Type.IsController() {
			return c
		}
	}
	return nil
}

// countUpDesired counts the distinct desired interfaces that end up up.
func (v *statView) countUpDesired() int {
	seen := map[statKey]bool{}
	n := 0
	for i := range v.m.Desired.Interfaces {
		d := &v.m.Desired.Interfaces[i]
		k := keyOf(d)
		if seen[k] || d.State == StateIgnore || d.State == StateAbsent {
			continue
		}
		seen[k] = true
		ifc := v.ifaces[k]
		if ifc == nil {
			ifc = d
		}
		if isUp(ifc) {
			n++
		}
	}
	return n
}

// maxStackDepth bounds the walk up controllers and down parents/ports, so
// a cyclic (invalid) state cannot recurse forever. Upstream supports four
// levels of nesting; this is well above.
const maxStackDepth = 16

// topologies builds the stack of every desired or changed interface that
// ends up up, drops duplicates and stacks contained in longer ones.
func (v *statView) topologies() []string {
	var roots []statKey
	for i := range v.m.Desired.Interfaces {
		roots = append(roots, keyOf(&v.m.Desired.Interfaces[i]))
	}
	roots = append(roots, v.changed...)

	set := map[string]bool{}
	for _, k := range roots {
		ifc := v.ifaces[k]
		if ifc == nil || !isUp(ifc) {
			continue
		}
		stack := v.superior(ifc, 0)
		stack = append(stack, string(ifc.Type))
		stack = append(stack, v.subordinate(ifc, 0)...)
		set[strings.Join(stack, " -> ")] = true
	}
	all := make([]string, 0, len(set))
	for t := range set {
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	})
	out := []string{}
	for i, t := range all {
		contained := slices.ContainsFunc(all[i+1:], func(longer string) bool {
			return strings.Contains(longer, t)
		})
		if !contained {
			out = append(out, t)
		}
	}
	return out
}

// superior lists what sits above an interface: its controllers' chain
// (outermost first) or, at the top, its IP configuration. An OVS internal
// interface is the top of its stack: its bridge is listed below it.
func (v *statView) superior(ifc *Interface, depth int) []string {
	if depth > maxStackDepth {
		return nil
	}
	if ifc.Type != TypeOVSInterface {
		if c := v.controller(ifc); c != nil {
			return append(v.superior(c, depth+1), string(c.Type))
		}
	}
	if ip := ipTopology(ifc); ip != "" {
		return []string{ip}
	}
	return nil
}

// subordinate lists what sits below an interface: its parent chain (a
// VLAN's base interface, an OVS internal interface's bridge) or, for a
// controller, the longest chain among its kernel ports (first port wins a
// tie). OVS internal interfaces among the ports are not followed.
func (v *statView) subordinate(ifc *Interface, depth int) []string {
	if depth > maxStackDepth {
		return nil
	}
	if ifc.Type == TypeOVSInterface {
		c := v.controller(ifc)
		if c == nil || c.Type != TypeOVSBridge {
			return nil
		}
		return append([]string{string(c.Type)}, v.subordinate(c, depth+1)...)
	}
	if p := ifc.Parent(); p != "" {
		parent := v.kernel(p)
		if parent == nil {
			return nil
		}
		return append([]string{string(parent.Type)}, v.subordinate(parent, depth+1)...)
	}
	ports, _ := ifc.Ports()
	var best []string
	for _, name := range ports {
		port := v.kernel(name)
		if port == nil || port.Type == TypeOVSInterface {
			continue
		}
		chain := append([]string{string(port.Type)}, v.subordinate(port, depth+1)...)
		if len(chain) > len(best) {
			best = chain
		}
	}
	return best
}

// ipTopology names the IP configuration of an interface:
// "static_ip4", "auto_ip4", "static_ip6", "auto_ip6", comma-joined; "" when
// it has none.
func ipTopology(ifc *Interface) string {
	var out []string
	for _, f := range []struct {
		c      *IPConfig
		suffix string
		v6     bool
	}{{ifc.IPv4, "ip4", false}, {ifc.IPv6, "ip6", true}} {
		static, auto := ipKind(f.c, f.v6)
		if static {
			out = append(out, "static_"+f.suffix)
		}
		if auto {
			out = append(out, "auto_"+f.suffix)
		}
	}
	return strings.Join(out, ",")
}

// ipKind tells whether one family is configured statically (enabled, not
// automatic, with static addresses) or automatically (DHCP, or IPv6
// autoconf). Enabled defaults to true when addresses or DHCP are given,
// as nmstate reads a family section without `enabled`. Dynamic and IPv6
// link-local addresses (reported by show, never configured) do not count.
func ipKind(c *IPConfig, v6 bool) (static, auto bool) {
	if c == nil {
		return false, false
	}
	dhcp := c.DHCP != nil && *c.DHCP
	autoconf := v6 && c.Autoconf != nil && *c.Autoconf
	var addrs int
	for _, a := range c.Address {
		if !a.IsDynamic() && !a.IP.IsLinkLocalUnicast() {
			addrs++
		}
	}
	enabled := c.Enabled != nil && *c.Enabled || c.Enabled == nil && (addrs > 0 || dhcp || autoconf)
	if !enabled {
		return false, false
	}
	auto = dhcp || autoconf
	return !auto && addrs > 0, auto
}
