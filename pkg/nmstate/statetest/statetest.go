// Package statetest builds nmstate values for tests, so tests state what
// matters to them instead of repeating long literals:
//
//	statetest.State(
//		statetest.Interfaces(
//			statetest.Bond("bond0", statetest.Mode("802.3ad"), statetest.Ports("eth1", "eth2")),
//			statetest.Ethernet("eth1"),
//		),
//		statetest.Routes(statetest.Route("0.0.0.0/0", "bond0", "192.0.2.1")),
//	)
//
// Builders panic on malformed literals (addresses, prefixes): they are for
// test code only. The package must not be imported by non-test code.
package statetest

import (
	"net/netip"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }

// IfaceOption modifies an interface under construction.
type IfaceOption func(*nmstate.Interface)

// Iface builds an interface of any type (typ may be "" for untyped).
func Iface(name string, typ nmstate.InterfaceType, opts ...IfaceOption) nmstate.Interface {
	i := nmstate.Interface{Name: name, Type: typ, State: nmstate.StateUp}
	for _, o := range opts {
		o(&i)
	}
	return i
}

// Ethernet builds an ethernet interface.
func Ethernet(name string, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeEthernet, opts...)
}

// Dummy builds a dummy interface.
func Dummy(name string, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeDummy, opts...)
}

// Loopback builds the loopback interface.
func Loopback(opts ...IfaceOption) nmstate.Interface {
	return Iface("lo", nmstate.TypeLoopback, opts...)
}

// Bond builds a bond; use Mode, Ports and BondOptions.
func Bond(name string, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeBond, append([]IfaceOption{func(i *nmstate.Interface) {
		i.LinkAggregation = &nmstate.Bond{}
	}}, opts...)...)
}

// LinuxBridge builds a linux bridge; use Ports and BridgePortVLAN.
func LinuxBridge(name string, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeLinuxBridge, append([]IfaceOption{func(i *nmstate.Interface) {
		i.LinuxBridge = &nmstate.LinuxBridge{}
	}}, opts...)...)
}

// OVSBridge builds an OVS bridge; use Ports.
func OVSBridge(name string, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeOVSBridge, append([]IfaceOption{func(i *nmstate.Interface) {
		i.OVSBridge = &nmstate.OVSBridge{}
	}}, opts...)...)
}

// OVSInterface builds an OVS internal interface.
func OVSInterface(name string, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeOVSInterface, opts...)
}

// VLAN builds a vlan on base with the given id.
func VLAN(name, base string, id uint16, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeVLAN, append([]IfaceOption{func(i *nmstate.Interface) {
		i.VLAN = &nmstate.VLAN{BaseIface: &base, ID: &id}
	}}, opts...)...)
}

// VXLAN builds a vxlan on base with the given VNI.
func VXLAN(name, base string, id uint32, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeVXLAN, append([]IfaceOption{func(i *nmstate.Interface) {
		i.VXLAN = &nmstate.VXLAN{BaseIface: &base, ID: &id}
	}}, opts...)...)
}

// MacVlan builds a mac-vlan on base.
func MacVlan(name, base string, mode nmstate.MacVlanMode, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeMacVlan, append([]IfaceOption{func(i *nmstate.Interface) {
		i.MacVlan = &nmstate.MacVlan{BaseIface: &base, Mode: &mode}
	}}, opts...)...)
}

// Veth builds one end of a veth pair.
func Veth(name, peer string, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeVeth, append([]IfaceOption{func(i *nmstate.Interface) {
		i.Veth = &nmstate.Veth{Peer: peer}
	}}, opts...)...)
}

// VRF builds a VRF bound to table.
func VRF(name string, table uint32, opts ...IfaceOption) nmstate.Interface {
	return Iface(name, nmstate.TypeVRF, append([]IfaceOption{func(i *nmstate.Interface) {
		i.VRF = &nmstate.VRF{RouteTableID: &table}
	}}, opts...)...)
}

// Absent marks the interface absent.
func Absent() IfaceOption { return StateOf(nmstate.StateAbsent) }

// Down marks the interface down.
func Down() IfaceOption { return StateOf(nmstate.StateDown) }

// StateOf sets the state ("" leaves it unset).
func StateOf(s nmstate.InterfaceState) IfaceOption {
	return func(i *nmstate.Interface) { i.State = s }
}

// MTU sets the MTU.
func MTU(n uint64) IfaceOption { return func(i *nmstate.Interface) { i.MTU = &n } }

// MAC sets the MAC address (upper-cased, as the decoder does).
func MAC(m string) IfaceOption {
	return func(i *nmstate.Interface) { i.MACAddress = Ptr(nmstate.MAC(upper(m))) }
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// Controller sets the port-side controller ("" detaches).
func Controller(name string) IfaceOption {
	return func(i *nmstate.Interface) { i.Controller = &name }
}

// Mode sets the bond mode.
func Mode(m nmstate.BondMode) IfaceOption {
	return func(i *nmstate.Interface) {
		if i.LinkAggregation == nil {
			i.LinkAggregation = &nmstate.Bond{}
		}
		i.LinkAggregation.Mode = &m
	}
}

// BondOptions edits the bond options.
func BondOptions(f func(*nmstate.BondOptions)) IfaceOption {
	return func(i *nmstate.Interface) {
		if i.LinkAggregation == nil {
			i.LinkAggregation = &nmstate.Bond{}
		}
		if i.LinkAggregation.Options == nil {
			i.LinkAggregation.Options = &nmstate.BondOptions{}
		}
		f(i.LinkAggregation.Options)
	}
}

// Ports sets the port list of a bond, linux bridge, OVS bridge or VRF
// (the section must exist, which the type's builder ensures). Ports() with
// no names sets an empty list (remove all ports).
func Ports(names ...string) IfaceOption {
	if names == nil {
		names = []string{}
	}
	return func(i *nmstate.Interface) {
		switch {
		case i.LinkAggregation != nil:
			i.LinkAggregation.Port = names
		case i.LinuxBridge != nil:
			i.LinuxBridge.Port = []nmstate.LinuxBridgePort{}
			for _, n := range names {
				i.LinuxBridge.Port = append(i.LinuxBridge.Port, nmstate.LinuxBridgePort{Name: n})
			}
		case i.OVSBridge != nil:
			i.OVSBridge.Port = []nmstate.OVSBridgePort{}
			for _, n := range names {
				i.OVSBridge.Port = append(i.OVSBridge.Port, nmstate.OVSBridgePort{Name: n})
			}
		case i.VRF != nil:
			i.VRF.Port = names
		default:
			panic("statetest.Ports: interface " + i.Name + " has no port list")
		}
	}
}

// BridgePortVLAN sets the VLAN config of a linux bridge port added by Ports.
func BridgePortVLAN(port string, vlan nmstate.BridgeVLAN) IfaceOption {
	return func(i *nmstate.Interface) {
		for j := range i.LinuxBridge.Port {
			if i.LinuxBridge.Port[j].Name == port {
				i.LinuxBridge.Port[j].VLAN = &vlan
				return
			}
		}
		panic("statetest.BridgePortVLAN: no port " + port)
	}
}

// IPv4 enables static IPv4 with the given "addr/len" addresses (none =
// enabled with an empty list, which removes all addresses).
func IPv4(addrs ...string) IfaceOption {
	return func(i *nmstate.Interface) { i.IPv4 = static(addrs) }
}

// IPv6 enables static IPv6 with the given addresses.
func IPv6(addrs ...string) IfaceOption {
	return func(i *nmstate.Interface) {
		i.IPv6 = static(addrs)
		i.IPv6.Autoconf = Ptr(false)
	}
}

func static(addrs []string) *nmstate.IPConfig {
	c := &nmstate.IPConfig{Enabled: Ptr(true), DHCP: Ptr(false), Address: []nmstate.Address{}}
	for _, a := range addrs {
		p := netip.MustParsePrefix(a)
		c.Address = append(c.Address, nmstate.Address{IP: p.Addr(), PrefixLength: uint8(p.Bits())})
	}
	return c
}

// DHCPv4 enables IPv4 with DHCP.
func DHCPv4() IfaceOption {
	return func(i *nmstate.Interface) { i.IPv4 = &nmstate.IPConfig{Enabled: Ptr(true), DHCP: Ptr(true)} }
}

// IPv4Disabled disables IPv4.
func IPv4Disabled() IfaceOption {
	return func(i *nmstate.Interface) { i.IPv4 = &nmstate.IPConfig{Enabled: Ptr(false)} }
}

// IPv6Disabled disables IPv6.
func IPv6Disabled() IfaceOption {
	return func(i *nmstate.Interface) { i.IPv6 = &nmstate.IPConfig{Enabled: Ptr(false)} }
}

// With applies an arbitrary edit.
func With(f func(*nmstate.Interface)) IfaceOption { return IfaceOption(f) }

// StateOption modifies a state under construction.
type StateOption func(*nmstate.State)

// State builds a state document.
func State(opts ...StateOption) *nmstate.State {
	s := &nmstate.State{}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Interfaces appends interfaces.
func Interfaces(ifaces ...nmstate.Interface) StateOption {
	return func(s *nmstate.State) { s.Interfaces = append(s.Interfaces, ifaces...) }
}

// Routes appends config routes.
func Routes(routes ...nmstate.Route) StateOption {
	return func(s *nmstate.State) {
		if s.Routes == nil {
			s.Routes = &nmstate.Routes{}
		}
		s.Routes.Config = append(s.Routes.Config, routes...)
	}
}

// Rules appends config route rules.
func Rules(rules ...nmstate.RouteRule) StateOption {
	return func(s *nmstate.State) {
		if s.RouteRules == nil {
			s.RouteRules = &nmstate.RouteRules{}
		}
		s.RouteRules.Config = append(s.RouteRules.Config, rules...)
	}
}

// DNS sets the static DNS config; nil lists stay unset.
func DNS(servers, search, options []string) StateOption {
	return func(s *nmstate.State) {
		c := &nmstate.DNSConfig{Search: search, Options: options}
		if servers != nil {
			c.Server = []netip.Addr{}
			for _, a := range servers {
				c.Server = append(c.Server, netip.MustParseAddr(a))
			}
		}
		s.DNSResolver = &nmstate.DNSResolver{Config: c}
	}
}

// RouteOption modifies a route.
type RouteOption func(*nmstate.Route)

// Route builds a config route; nhAddr may be "".
func Route(dst, nhIface, nhAddr string, opts ...RouteOption) nmstate.Route {
	p := netip.MustParsePrefix(dst).Masked()
	r := nmstate.Route{Destination: &p}
	if nhIface != "" {
		r.NextHopInterface = &nhIface
	}
	if nhAddr != "" {
		r.NextHopAddress = Ptr(netip.MustParseAddr(nhAddr))
	}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// AbsentRoute builds a removal pattern; set fields with options.
func AbsentRoute(opts ...RouteOption) nmstate.Route {
	r := nmstate.Route{State: Ptr(nmstate.RouteState("absent"))}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// Metric sets the route metric.
func Metric(m int64) RouteOption { return func(r *nmstate.Route) { r.Metric = &m } }

// Table sets the route table.
func Table(t uint32) RouteOption { return func(r *nmstate.Route) { r.TableID = &t } }

// NextHopIface sets the next hop interface (for absent patterns).
func NextHopIface(n string) RouteOption {
	return func(r *nmstate.Route) { r.NextHopInterface = &n }
}

// Rule builds a route rule from/to prefixes ("" = unset) to table.
func Rule(from, to string, table uint32) nmstate.RouteRule {
	r := nmstate.RouteRule{RouteTable: &table}
	if from != "" {
		r.IPFrom = Ptr(netip.MustParsePrefix(from).Masked())
	}
	if to != "" {
		r.IPTo = Ptr(netip.MustParsePrefix(to).Masked())
	}
	return r
}
