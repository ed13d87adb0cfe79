package nmstate

import (
	"encoding/json"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// A Plan is the ordered list of operations that takes the node from
// Merged.Current to the merged target. PlanChanges computes it; a backend
// executes it in order, one operation after the other, and stops at the
// first error. The plan of an already-satisfied state is empty: that is the
// fixed point the whole project tests (apply, re-read, plan again → empty).
//
// Idempotency is the backend's job, so a plan may be re-run after a partial
// failure: creating a link that exists with the same settings, adding an
// address or rule that is already there, setting a value that already
// holds, deleting a link, address, route or rule that is already gone all
// succeed. Backends prefer replace over add (RTM_NEWROUTE with
// NLM_F_REPLACE, address replace) where the kernel offers it.
type Plan struct {
	Ops []Op
}

// Empty reports whether the plan has nothing to do.
func (p *Plan) Empty() bool { return p == nil || len(p.Ops) == 0 }

// String renders the plan one operation per line, each line ending in a
// newline; the empty plan renders as "". The text is stable: golden files,
// `nmstatectl apply --dry-run` and enactment failure messages all show it.
func (p *Plan) String() string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for _, op := range p.Ops {
		b.WriteString(op.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Op is one plan operation. The set is sealed (only this package defines
// operations) so a backend can switch over every type exhaustively and
// refuse an unknown one as a bug.
type Op interface {
	// String is the operation as one stable, iproute2-like line.
	String() string
	isOp()
}

// LinkDelete deletes a virtual link. Deleting one end of a veth pair
// deletes both (the plan names one end only). A link already gone is
// success.
type LinkDelete struct {
	Name string
	Type InterfaceType
}

// LinkCreate creates a new virtual link with its link-level configuration:
// the backend reads Iface.Name, Type, MTU, MACAddress, AcceptAllMAC
// (promiscuous), Description (ifalias), and the type section (Bond mode and
// options, LinuxBridge options (vlan_filtering when any port in
// LinuxBridge.Port has a vlan section), VLAN base/id/protocol/flags, VXLAN,
// MacVlan/MacVtap, IPVlan, VRF table, Veth peer (the peer is created
// with it), ...). Nil fields mean "kernel default". The link is created
// down; ports, addresses and the up state follow as separate operations, so
// the backend must ignore Iface.Controller, port lists, IPv4/IPv6 and
// State. The base interface (Parent) exists when this op runs.
type LinkCreate struct {
	Iface Interface
}

// LinkModify changes settable attributes of an existing link. Iface holds
// Name and Type plus only the attributes to change; every nil field (and
// every nil field inside a type section) means "do not change". Possible
// attributes: MTU, MACAddress, AcceptAllMAC, Description, Ethernet
// (speed/duplex/auto-negotiation/sr-iov), Ethtool, and the type section with
// the changed keys only: LinkAggregation.Mode/Options/PortsConfig,
// LinuxBridge.Options, VLAN flags (reorder-headers, loose-binding,
// registration-protocol), MacVlan/MacVtap mode and promiscuous (VXLAN,
// IPVLAN, VRF table, veth peer, VLAN id/base/protocol changes re-create the
// link instead). Controller, port lists, IP and State are never set here.
// Current is the link as it was read before the apply, for backends that
// need context (e.g. the bond's current mode); it is the zero Interface
// for a veth peer created with its pair earlier in the plan. A bond mode
// (or fail_over_mac) change is planned with the ports released and the
// bond down before this op; the 802.3ad/tlb options the kernel only takes
// on a down bond are planned with the bond down.
type LinkModify struct {
	Iface   Interface
	Current Interface
}

// LinkSetController attaches Name to Controller, or releases it from its
// controller when Controller is "". Releasing a link that has no
// controller is success. The controller exists when this op runs; the
// backend takes the port down first when the kernel requires it (bond), and
// the plan brings it up later with LinkSetState.
type LinkSetController struct {
	Name       string
	Controller string
}

// BridgePortSet sets the per-port options of Port.Name in bridge Bridge:
// STP path cost, priority, hairpin mode (nil = do not change). Port.VLAN is
// ignored: BridgeVLANSet handles VLAN membership.
type BridgePortSet struct {
	Bridge string
	Port   LinuxBridgePort
}

// BridgeVLANSet replaces the whole VLAN membership of port Name in bridge
// Bridge with VLAN: access mode = one untagged PVID tag; trunk mode = the
// trunk tags tagged, plus Tag as untagged PVID when EnableNative, or the
// bridge's default PVID untagged when EnableNative is not set (as
// NetworkManager's bridge.vlan-default-pvid gives every port; an explicit
// `enable-native: false` gets no untagged VLAN). VLAN nil means the port
// leaves VLAN filtering config (back to the bridge's default PVID). The
// backend enables vlan_filtering on the bridge first when it is off.
type BridgeVLANSet struct {
	Bridge string
	Name   string
	VLAN   *BridgeVLAN
}

// BridgeVLANFiltering switches the bridge's VLAN filtering (the kernel's
// vlan_filtering) on or off. The plan switches it off once no port of the
// bridge keeps a VLAN configuration (every one `vlan: {}`, upstream's
// reset); BridgeVLANSet switches it on by itself.
type BridgeVLANFiltering struct {
	Bridge string
	On     bool
}

// LinkSetState sets the administrative state of Name.
type LinkSetState struct {
	Name string
	Up   bool
}

// SysctlSet writes one per-namespace sysctl, Key being the full dotted key
// (net.ipv6.conf.eth1.disable_ipv6); Iface names the interface it is about
// ("" for global keys). Interface names may hold dots (eth1.101), so the
// backend must not split Key on dots to find the /proc/sys path: for an
// interface key it is net.<family>.conf.<Iface>.<leaf> →
// /proc/sys/net/<family>/conf/<Iface>/<leaf>.
type SysctlSet struct {
	Iface string
	Key   string
	Value string
}

// AddrAdd adds (replaces) a static address with infinite lifetimes. The
// plan orders addresses so that the first IPv4 address added to an
// interface without IPv4 addresses becomes the primary.
type AddrAdd struct {
	Iface   string
	Address Address
}

// AddrDelete removes an address; an address already gone is success.
type AddrDelete struct {
	Iface   string
	Address Address
}

// RouteReplace installs a route with protocol static. Its identity is
// nmstate's: destination, table (nil or 0 = main, 254), next-hop interface
// and address, route type; not the metric. The backend replaces a current
// static route of the same identity whatever its metric (a metric-only
// change must not leave the old kernel route behind: add the new one, then
// delete the old). Metric nil or -1 means the kernel default of the family.
type RouteReplace struct {
	Route Route
}

// RouteDelete removes a route (protocol static); a route already gone is
// success.
type RouteDelete struct {
	Route Route
}

// RuleAdd adds a policy routing rule; an identical rule already present is
// success.
type RuleAdd struct {
	Rule RouteRule
}

// RuleDelete removes a policy routing rule; a rule already gone is success.
type RuleDelete struct {
	Rule RouteRule
}

// DNSWrite writes the whole static resolver configuration (resolv.conf:
// options, search, nameserver lines); nil lists are written as empty.
type DNSWrite struct {
	Config DNSConfig
}

// HostnameSet sets the running hostname (the kernel's UTS name in the
// backend's namespace).
type HostnameSet struct {
	Name string
}

// HostnameDynamic clears the static hostname (`hostname.config: ""`): the
// running hostname is then the one DHCP hands out. The running hostname
// itself is left as it is until a lease names one.
type HostnameDynamic struct{}

func (LinkDelete) isOp()          {}
func (LinkCreate) isOp()          {}
func (LinkModify) isOp()          {}
func (LinkSetController) isOp()   {}
func (BridgePortSet) isOp()       {}
func (BridgeVLANSet) isOp()       {}
func (BridgeVLANFiltering) isOp() {}
func (LinkSetState) isOp()        {}
func (SysctlSet) isOp()           {}
func (AddrAdd) isOp()             {}
func (AddrDelete) isOp()          {}
func (RouteReplace) isOp()        {}
func (RouteDelete) isOp()         {}
func (RuleAdd) isOp()             {}
func (RuleDelete) isOp()          {}
func (DNSWrite) isOp()            {}
func (HostnameSet) isOp()         {}
func (HostnameDynamic) isOp()     {}

// String: `link delete br0 type linux-bridge`.
func (o LinkDelete) String() string {
	return "link delete " + o.Name + " type " + string(o.Type)
}

// String: `link add eth1.101 link eth1 type vlan id 101 mtu 1500`; the
// type settings follow as `key value` pairs in canonical key order (nested
// keys dotted: `options.miimon 100`).
func (o LinkCreate) String() string {
	var b strings.Builder
	b.WriteString("link add ")
	b.WriteString(o.Iface.Name)
	if p := o.Iface.Parent(); p != "" {
		b.WriteString(" link ")
		b.WriteString(p)
	}
	b.WriteString(" type ")
	b.WriteString(string(o.Iface.Type))
	opWriteLinkAttrs(&b, &o.Iface, "")
	return b.String()
}

// String: `link set bond0 type bond mtu 9000 options.miimon 100`, the
// attributes to change only.
func (o LinkModify) String() string {
	var b strings.Builder
	b.WriteString("link set ")
	b.WriteString(o.Iface.Name)
	b.WriteString(" type ")
	b.WriteString(string(o.Iface.Type))
	opWriteLinkAttrs(&b, &o.Iface, "")
	return b.String()
}

// String: `link set eth1 master bond0` or `link set eth1 nomaster`.
func (o LinkSetController) String() string {
	if o.Controller == "" {
		return "link set " + o.Name + " nomaster"
	}
	return "link set " + o.Name + " master " + o.Controller
}

// String: `bridge port set eth1 master br0 stp-hairpin-mode false stp-path-cost 100`.
func (o BridgePortSet) String() string {
	var b strings.Builder
	b.WriteString("bridge port set ")
	b.WriteString(o.Port.Name)
	b.WriteString(" master ")
	b.WriteString(o.Bridge)
	p := o.Port
	p.VLAN = nil
	t, err := Tree(&p)
	if m, ok := t.(map[string]any); ok {
		delete(m, "name")
	}
	if err != nil {
		b.WriteString(" <" + err.Error() + ">")
	}
	opFlatten(&b, t, nil)
	return b.String()
}

// String: `bridge vlan set eth1 master br0 mode trunk tag 1 enable-native
// true trunk-tags 100,200-299`, or `... none` to clear.
func (o BridgeVLANSet) String() string {
	var b strings.Builder
	b.WriteString("bridge vlan set ")
	b.WriteString(o.Name)
	b.WriteString(" master ")
	b.WriteString(o.Bridge)
	if o.VLAN == nil {
		b.WriteString(" none")
		return b.String()
	}
	v := *o.VLAN
	tags := v.TrunkTags
	v.TrunkTags = nil
	opWriteTree(&b, &v, nil)
	if tags != nil {
		b.WriteString(" trunk-tags ")
		for i, t := range tags {
			if i > 0 {
				b.WriteByte(',')
			}
			switch {
			case t.ID != nil:
				b.WriteString(strconv.Itoa(int(*t.ID)))
			case t.IDRange != nil:
				b.WriteString(strconv.Itoa(int(t.IDRange.Min)) + "-" + strconv.Itoa(int(t.IDRange.Max)))
			}
		}
	}
	return b.String()
}

// String: `bridge vlan-filtering br0 off`.
func (o BridgeVLANFiltering) String() string {
	if o.On {
		return "bridge vlan-filtering " + o.Bridge + " on"
	}
	return "bridge vlan-filtering " + o.Bridge + " off"
}

// String: `link set eth1 up`.
func (o LinkSetState) String() string {
	if o.Up {
		return "link set " + o.Name + " up"
	}
	return "link set " + o.Name + " down"
}

// String: `sysctl set net.ipv6.conf.eth1.disable_ipv6 1`.
func (o SysctlSet) String() string { return "sysctl set " + o.Key + " " + o.Value }

// String: `addr add 192.0.2.1/24 dev eth1`.
func (o AddrAdd) String() string {
	return "addr add " + o.Address.Prefix().String() + " dev " + o.Iface
}

// String: `addr delete 192.0.2.1/24 dev eth1`.
func (o AddrDelete) String() string {
	return "addr delete " + o.Address.Prefix().String() + " dev " + o.Iface
}

// String: `route replace 198.51.100.0/24 via 192.0.2.2 dev eth1 metric 150
// table 254 proto static`.
func (o RouteReplace) String() string { return "route replace " + opRouteText(&o.Route) }

// String: `route delete 198.51.100.0/24 via 192.0.2.2 dev eth1 metric 150
// table 254 proto static`.
func (o RouteDelete) String() string { return "route delete " + opRouteText(&o.Route) }

// String: `rule add from 192.0.2.0/24 priority 1000 table 100`.
func (o RuleAdd) String() string { return "rule add " + opRuleText(&o.Rule) }

// String: `rule delete from 192.0.2.0/24 priority 1000 table 100`.
func (o RuleDelete) String() string { return "rule delete " + opRuleText(&o.Rule) }

// String: `dns write nameserver 192.0.2.53 search example.com options rotate`
// (sections with no entries are left out; all empty: `dns write empty`).
func (o DNSWrite) String() string {
	var b strings.Builder
	b.WriteString("dns write")
	n := 0
	for _, s := range o.Config.Server {
		b.WriteString(" nameserver ")
		b.WriteString(s.String())
		n++
	}
	if len(o.Config.Search) > 0 {
		b.WriteString(" search ")
		b.WriteString(strings.Join(o.Config.Search, " "))
		n++
	}
	if len(o.Config.Options) > 0 {
		b.WriteString(" options ")
		b.WriteString(strings.Join(o.Config.Options, " "))
		n++
	}
	if n == 0 {
		b.WriteString(" empty")
	}
	return b.String()
}

// String: `hostname set node1`.
func (o HostnameSet) String() string { return "hostname set " + o.Name }

// String: `hostname dynamic`.
func (HostnameDynamic) String() string { return "hostname dynamic" }

// opWriteLinkAttrs appends the link-level attributes of ifc that are set
// (mtu, address, promisc, alias, ethernet, ethtool) and then its type
// section flattened to `key value` pairs, leaving out what other
// operations handle (ports, base interface, controller, IP, state). A
// non-empty typ is printed as ` type typ` before the type section, and
// only when that section holds something.
func opWriteLinkAttrs(b *strings.Builder, ifc *Interface, typ string) {
	if ifc.MTU != nil {
		b.WriteString(" mtu ")
		b.WriteString(strconv.FormatUint(*ifc.MTU, 10))
	}
	if ifc.MACAddress != nil {
		b.WriteString(" address ")
		b.WriteString(string(*ifc.MACAddress))
	}
	if ifc.AcceptAllMAC != nil {
		b.WriteString(" promisc ")
		b.WriteString(opOnOff(*ifc.AcceptAllMAC))
	}
	if ifc.Description != nil {
		b.WriteString(" alias ")
		b.WriteString(strconv.Quote(*ifc.Description))
	}
	if ifc.AltNames != nil {
		// The whole target set: names not in it are removed.
		b.WriteString(" altnames [")
		for i, a := range *ifc.AltNames {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(a.Name)
		}
		b.WriteString("]")
	}
	sec := opLinkSection(ifc)
	if sec.Ethernet != nil {
		opWriteTree(b, sec.Ethernet, []string{"ethernet"})
	}
	if sec.Ethtool != nil {
		opWriteTree(b, sec.Ethtool, []string{"ethtool"})
	}
	if sec.IEEE8021X != nil {
		// The plan's text reaches logs and enactments: no secrets in it.
		hidden := HideSecrets(&State{Interfaces: []Interface{{IEEE8021X: sec.IEEE8021X}}})
		opWriteTree(b, hidden.Interfaces[0].IEEE8021X, []string{"802.1x"})
	}
	if sec.LLDP != nil && sec.LLDP.Enabled != nil {
		b.WriteString(" lldp ")
		b.WriteString(opOnOff(*sec.LLDP.Enabled))
	}
	if typ != "" {
		var t strings.Builder
		sec.Ethernet, sec.Ethtool, sec.IEEE8021X, sec.LLDP = nil, nil, nil, nil
		opWriteTypeSection(&t, &sec)
		if t.Len() > 0 {
			b.WriteString(" type ")
			b.WriteString(typ)
			b.WriteString(t.String())
		}
		return
	}
	opWriteTypeSection(b, &sec)
}

// opWriteTypeSection appends the type-specific section of sec.
func opWriteTypeSection(b *strings.Builder, sec *Interface) {
	switch {
	case sec.LinkAggregation != nil:
		opWriteTree(b, sec.LinkAggregation, nil)
	case sec.LinuxBridge != nil:
		opWriteTree(b, sec.LinuxBridge, nil)
	case sec.VLAN != nil:
		opWriteTree(b, sec.VLAN, nil)
	case sec.VXLAN != nil:
		opWriteTree(b, sec.VXLAN, nil)
	case sec.MacVlan != nil:
		opWriteTree(b, sec.MacVlan, nil)
	case sec.MacVtap != nil:
		opWriteTree(b, sec.MacVtap, nil)
	case sec.IPVlan != nil:
		opWriteTree(b, sec.IPVlan, nil)
	case sec.VRF != nil:
		opWriteTree(b, sec.VRF, nil)
	case sec.Veth != nil:
		b.WriteString(" peer ")
		b.WriteString(sec.Veth.Peer)
	case sec.Team != nil:
		opWriteTree(b, sec.Team, nil)
	case sec.OVSBridge != nil:
		opWriteTree(b, sec.OVSBridge, nil)
	case sec.InfiniBand != nil:
		opWriteTree(b, sec.InfiniBand, nil)
	case sec.HSR != nil:
		opWriteTree(b, sec.HSR, nil)
	case sec.MACsec != nil:
		// The plan's text reaches logs and enactments: no CAK in it.
		hidden := HideSecrets(&State{Interfaces: []Interface{{MACsec: sec.MACsec}}})
		opWriteTree(b, hidden.Interfaces[0].MACsec, nil)
	case sec.Patch != nil:
		opWriteTree(b, sec.Patch, []string{"patch"})
	case sec.DPDK != nil:
		opWriteTree(b, sec.DPDK, []string{"dpdk"})
	}
}

// opLinkSection returns a copy of the type-specific sections of ifc with what
// the link operations do not carry removed: port lists (attached by
// LinkSetController) and base interfaces (printed as `link BASE`).
func opLinkSection(ifc *Interface) Interface {
	s := Interface{
		Ethernet: ifc.Ethernet, Ethtool: ifc.Ethtool, Veth: ifc.Veth, IEEE8021X: ifc.IEEE8021X, LLDP: ifc.LLDP,
		Team: ifc.Team, OVSBridge: ifc.OVSBridge, HSR: ifc.HSR,
		Patch: ifc.Patch, DPDK: ifc.DPDK, VRF: ifc.VRF,
	}
	if ifc.LinkAggregation != nil {
		c := *ifc.LinkAggregation
		c.Port = nil
		s.LinkAggregation = &c
	}
	if ifc.LinuxBridge != nil {
		c := *ifc.LinuxBridge
		c.Port = nil
		s.LinuxBridge = &c
	}
	if ifc.VRF != nil {
		c := *ifc.VRF
		c.Port = nil
		s.VRF = &c
	}
	if ifc.Team != nil {
		c := *ifc.Team
		c.Port = nil
		s.Team = &c
	}
	if ifc.OVSBridge != nil {
		c := *ifc.OVSBridge
		c.Port = nil
		s.OVSBridge = &c
	}
	if ifc.VLAN != nil {
		c := *ifc.VLAN
		c.BaseIface = nil
		s.VLAN = &c
	}
	if ifc.VXLAN != nil {
		c := *ifc.VXLAN
		c.BaseIface = nil
		s.VXLAN = &c
	}
	if ifc.MacVlan != nil {
		c := *ifc.MacVlan
		c.BaseIface = nil
		s.MacVlan = &c
	}
	if ifc.MacVtap != nil {
		c := *ifc.MacVtap
		c.BaseIface = nil
		s.MacVtap = &c
	}
	if ifc.IPVlan != nil {
		c := *ifc.IPVlan
		c.BaseIface = nil
		s.IPVlan = &c
	}
	if ifc.InfiniBand != nil {
		c := *ifc.InfiniBand
		c.BaseIface = nil
		s.InfiniBand = &c
	}
	if ifc.MACsec != nil {
		c := *ifc.MACsec
		c.BaseIface = nil
		s.MACsec = &c
	}
	return s
}

// opWriteTree appends v (a pointer to a schema value) flattened to
// ` key value` pairs in canonical key order, nested keys joined with dots
// under prefix; lists print as comma-joined scalars or JSON.
func opWriteTree(b *strings.Builder, v any, prefix []string) {
	t, err := Tree(v)
	if err != nil {
		b.WriteString(" <" + err.Error() + ">")
		return
	}
	opFlatten(b, t, prefix)
}

func opFlatten(b *strings.Builder, t any, path []string) {
	switch t := t.(type) {
	case nil:
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			opFlatten(b, t[k], append(path[:len(path):len(path)], k))
		}
	default:
		b.WriteByte(' ')
		b.WriteString(strings.Join(path, "."))
		b.WriteByte(' ')
		b.WriteString(opScalarText(t))
	}
}

func opScalarText(t any) string {
	switch t := t.(type) {
	case string:
		if t == "" || strings.ContainsAny(t, " \t\n\"") {
			return strconv.Quote(t)
		}
		return t
	case bool:
		return strconv.FormatBool(t)
	case json.Number:
		return t.String()
	case []any:
		parts := make([]string, len(t))
		for i, e := range t {
			if _, ok := e.(map[string]any); ok {
				j, _ := json.Marshal(e)
				parts[i] = string(j)
				continue
			}
			parts[i] = opScalarText(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	j, _ := json.Marshal(t)
	return string(j)
}

func opOnOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}

// opRouteText renders a route as iproute2 would: type, destination, via,
// dev, src, metric, table, weight, cwnd, the other route metrics (mtu,
// advmss, initcwnd, initrwnd, quickack), protocol.
func opRouteText(r *Route) string {
	var b strings.Builder
	if r.RouteType != nil {
		b.WriteString(string(*r.RouteType))
		b.WriteByte(' ')
	}
	if r.Destination != nil {
		b.WriteString(r.Destination.String())
	} else {
		b.WriteString("any")
	}
	if r.NextHopAddress != nil && r.NextHopAddress.IsValid() {
		b.WriteString(" via ")
		b.WriteString(r.NextHopAddress.String())
	}
	if r.NextHopInterface != nil {
		b.WriteString(" dev ")
		b.WriteString(*r.NextHopInterface)
	}
	if r.Source != nil && r.Source.IsValid() {
		b.WriteString(" src ")
		b.WriteString(r.Source.String())
	}
	if r.Metric != nil && *r.Metric >= 0 {
		b.WriteString(" metric ")
		b.WriteString(strconv.FormatInt(*r.Metric, 10))
	}
	b.WriteString(" table ")
	b.WriteString(strconv.FormatUint(uint64(opRouteTable(r)), 10))
	if r.Weight != nil {
		b.WriteString(" weight ")
		b.WriteString(strconv.Itoa(int(*r.Weight)))
	}
	if r.Cwnd != nil {
		b.WriteString(" cwnd ")
		b.WriteString(strconv.FormatUint(uint64(*r.Cwnd), 10))
	}
	if r.MTU != nil {
		b.WriteString(" mtu ")
		if r.LockMTU != nil && *r.LockMTU {
			b.WriteString("lock ")
		}
		b.WriteString(strconv.FormatUint(uint64(*r.MTU), 10))
	}
	if r.AdvMSS != nil {
		b.WriteString(" advmss ")
		b.WriteString(strconv.FormatUint(uint64(*r.AdvMSS), 10))
	}
	if r.InitCwnd != nil {
		b.WriteString(" initcwnd ")
		b.WriteString(strconv.FormatUint(uint64(*r.InitCwnd), 10))
	}
	if r.InitRwnd != nil {
		b.WriteString(" initrwnd ")
		b.WriteString(strconv.FormatUint(uint64(*r.InitRwnd), 10))
	}
	if r.QuickACK != nil {
		b.WriteString(" quickack ")
		if *r.QuickACK {
			b.WriteString("1")
		} else {
			b.WriteString("0")
		}
	}
	b.WriteString(" proto static")
	return b.String()
}

// opRouteTable is the effective table of a route (unset or 0 = main, 254).
func opRouteTable(r *Route) uint32 {
	if r.TableID == nil || *r.TableID == 0 {
		return 254
	}
	return *r.TableID
}

// opRuleText renders a rule as iproute2 would: family, from, to, iif,
// fwmark/mask, priority, then table or action, suppress_prefixlength.
func opRuleText(r *RouteRule) string {
	var parts []string
	fam := opRuleFamily(r)
	if fam == "ipv6" {
		parts = append(parts, "-6")
	}
	pfx := func(key string, p *netip.Prefix) {
		if p != nil && p.IsValid() {
			parts = append(parts, key, p.String())
		}
	}
	pfx("from", r.IPFrom)
	pfx("to", r.IPTo)
	if r.IIF != nil {
		parts = append(parts, "iif", *r.IIF)
	}
	if r.FWMark != nil {
		m := r.FWMark.String()
		if r.FWMask != nil {
			m += "/" + r.FWMask.String()
		}
		parts = append(parts, "fwmark", m)
	}
	if r.Priority != nil && *r.Priority >= 0 {
		parts = append(parts, "priority", strconv.FormatInt(*r.Priority, 10))
	}
	if r.Action != nil {
		parts = append(parts, string(*r.Action))
	} else {
		t := uint32(254)
		if r.RouteTable != nil && *r.RouteTable != 0 {
			t = *r.RouteTable
		}
		parts = append(parts, "table", strconv.FormatUint(uint64(t), 10))
	}
	if r.SuppressPrefixLength != nil {
		parts = append(parts, "suppress_prefixlength", strconv.FormatUint(uint64(*r.SuppressPrefixLength), 10))
	}
	return strings.Join(parts, " ")
}

// opRuleFamily is the family of a rule: given, or from its prefixes
// (default ipv4).
func opRuleFamily(r *RouteRule) Family {
	if r.Family != nil {
		return *r.Family
	}
	for _, p := range []*netip.Prefix{r.IPFrom, r.IPTo} {
		if p != nil && p.IsValid() {
			if p.Addr().Is4() {
				return "ipv4"
			}
			return "ipv6"
		}
	}
	return "ipv4"
}
