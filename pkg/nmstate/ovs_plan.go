package nmstate

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// OVSBridgeSet makes the OVSDB bridge Name hold exactly Ports, with its
// options and ovs-db columns: one converging operation, so a backend can
// run it (and every other OVS operation of the plan) as one OVSDB
// transaction. Ports not listed are removed; listed ones are created or
// updated in place (their rows keep their uuids). Internal interfaces
// appear in the kernel only after the transaction, so the plan puts its
// kernel operations on them (MTU, state, addresses) after this one.
type OVSBridgeSet struct {
	Bridge OVSBridgeSpec
}

// OVSBridgeDelete removes the OVSDB bridge Name with its ports and
// interfaces (internal interfaces leave the kernel with them). A bridge
// already gone is success.
type OVSBridgeDelete struct {
	Name string
}

// OVSGlobalSet replaces the Open_vSwitch table's external_ids and
// other_config with these maps (OVN's bridge mappings are the
// external_ids key ovn-bridge-mappings); a nil map is left as it is.
type OVSGlobalSet struct {
	ExternalIDs map[string]string
	OtherConfig map[string]string
}

func (OVSBridgeSet) isOp()    {}
func (OVSBridgeDelete) isOp() {}
func (OVSGlobalSet) isOp()    {}

// OVSBridgeSpec is the whole OVSDB configuration of one bridge.
type OVSBridgeSpec struct {
	Name string `nms:"name"`
	// Description is the bridge's description: an OVS bridge has no
	// kernel link to carry it, so OVSDB keeps it.
	Description *string           `nms:"description"`
	Options     *OVSBridgeOptions `nms:"options"`
	OVSDB       *OVSDBIface       `nms:"ovs-db"`
	Ports       []OVSPortSpec     `nms:"port"`
}

// OVSPortSpec is one OVSDB Port row: one interface, or a bond of several.
type OVSPortSpec struct {
	Name       string         `nms:"name"`
	VLAN       *BridgeVLAN    `nms:"vlan"`
	Bond       *OVSBond       `nms:"bond"`
	Interfaces []OVSIfaceSpec `nms:"interfaces"`
}

// OVSIfaceSpec is one OVSDB Interface row.
type OVSIfaceSpec struct {
	Name string `nms:"name"`
	// Type is "" (a kernel NIC, "system"), "internal" or "patch".
	Type string `nms:"type"`
	Peer string `nms:"peer"`
	// MAC is set only when the desired state asks for one (internal ports).
	MAC   string      `nms:"mac"`
	OVSDB *OVSDBIface `nms:"ovs-db"`
}

// String: `ovs bridge set br0 options.stp.enabled false port eth1 port
// ovs0 internal port bond1 bond(eth1,eth2) mode balance-slb ...`.
func (o OVSBridgeSet) String() string {
	var b strings.Builder
	b.WriteString("ovs bridge set ")
	b.WriteString(o.Bridge.Name)
	if o.Bridge.Description != nil {
		b.WriteString(" description " + strconv.Quote(*o.Bridge.Description))
	}
	if o.Bridge.Options != nil {
		opWriteTree(&b, o.Bridge.Options, []string{"options"})
	}
	if o.Bridge.OVSDB != nil {
		opWriteTree(&b, o.Bridge.OVSDB, []string{"ovs-db"})
	}
	for _, p := range o.Bridge.Ports {
		b.WriteString(" port ")
		b.WriteString(p.Name)
		if p.Bond != nil {
			names := make([]string, 0, len(p.Interfaces))
			for _, i := range p.Interfaces {
				names = append(names, i.Name)
			}
			b.WriteString(" bond(" + strings.Join(names, ",") + ")")
			bond := *p.Bond
			bond.Port = nil
			opWriteTree(&b, &bond, nil)
		}
		if p.VLAN != nil {
			b.WriteString(" vlan" + strings.TrimPrefix(BridgeVLANSet{VLAN: p.VLAN}.String(), "bridge vlan set  master "))
		}
		for _, i := range p.Interfaces {
			if p.Bond != nil && i.Type == "" && i.MAC == "" && i.OVSDB == nil {
				continue
			}
			if p.Bond != nil {
				b.WriteString(" iface " + i.Name)
			}
			if i.Type != "" {
				b.WriteString(" " + i.Type)
			}
			if i.Peer != "" {
				b.WriteString(" peer " + i.Peer)
			}
			if i.MAC != "" {
				b.WriteString(" mac " + i.MAC)
			}
			if i.OVSDB != nil {
				opWriteTree(&b, i.OVSDB, []string{"ovs-db"})
			}
		}
	}
	return b.String()
}

// String: `ovs bridge delete br0`.
func (o OVSBridgeDelete) String() string { return "ovs bridge delete " + o.Name }

// String: `ovs global set external_ids.k v other_config.k v`.
func (o OVSGlobalSet) String() string {
	var b strings.Builder
	b.WriteString("ovs global set")
	for _, m := range []struct {
		name string
		m    map[string]string
	}{{"external_ids", o.ExternalIDs}, {"other_config", o.OtherConfig}} {
		if m.m == nil {
			continue
		}
		if len(m.m) == 0 {
			b.WriteString(" " + m.name + " {}")
		}
		keys := make([]string, 0, len(m.m))
		for k := range m.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(" " + m.name + "." + k + " " + opScalarText(m.m[k]))
		}
	}
	return b.String()
}

// OVNBridgeMappingsKey is the Open_vSwitch external_ids key that holds
// OVN's bridge mappings ("localnet:bridge,...").
const OVNBridgeMappingsKey = "ovn-bridge-mappings"

// isOVSBridge reports whether name is an OVS bridge in the target or the
// current state.
func (p *planner) isOVSBridge(name string) bool {
	if e := p.byKey[planKey(name, TypeOVSBridge)]; e != nil {
		return true
	}
	return p.cur[planKey(name, TypeOVSBridge)] != nil
}

// ovs turns the link operations the generic phases planned for OVS objects
// into OVSDB operations. Bridges, internal and patch interfaces and port
// membership live in OVSDB, so their link create/delete/controller
// operations are dropped, and the OVS operations take the place right
// after the create/modify phase (cut): after the kernel links they use as
// ports exist, before the states and addresses of the internal interfaces
// they create.
func (p *planner) ovs(cut int) error {
	for _, e := range p.entries {
		if !e.skip && !e.gone && e.t.DPDK != nil {
			// Valid nmstate, but nothing here can run it.
			return &Error{Kind: NotSupported, Path: planPath(e.name).Key("dpdk"),
				Detail: "DPDK ports are not supported: they need a DPDK-capable NIC bound to a userspace driver and Open vSwitch built with DPDK"}
		}
	}
	var ovsOps []Op
	candidates := map[string]bool{}
	var order []string
	addCand := func(br string) {
		if br != "" && !candidates[br] && p.isOVSBridge(br) {
			candidates[br] = true
			order = append(order, br)
		}
	}
	for _, e := range p.entries {
		if e.skip {
			continue
		}
		switch {
		case e.t.Type == TypeOVSBridge:
			if e.gone {
				if e.c != nil {
					ovsOps = append(ovsOps, OVSBridgeDelete{Name: e.name})
				}
				continue
			}
			addCand(e.name)
		default:
			// A port whose OVS-level settings change: its bridge is
			// converged again.
			addCand(e.ctrl)
			addCand(p.curCtrl[e.name])
		}
	}
	for _, br := range order {
		if e := p.byKey[planKey(br, TypeOVSBridge)]; e != nil && e.gone {
			continue
		}
		want := p.ovsSpec(br, true)
		if c := p.cur[planKey(br, TypeOVSBridge)]; c != nil && reflect.DeepEqual(want, p.ovsSpec(br, false)) {
			continue
		}
		ovsOps = append(ovsOps, OVSBridgeSet{Bridge: want})
	}
	if g := p.m.OVSDB; g != nil {
		cur := OVSGlobalOf(p.m.Current)
		set := OVSGlobalSet{}
		if !reflect.DeepEqual(g.ExternalIDs, cur.ExternalIDs) {
			set.ExternalIDs = g.ExternalIDs
		}
		if !reflect.DeepEqual(g.OtherConfig, cur.OtherConfig) {
			set.OtherConfig = g.OtherConfig
		}
		if set.ExternalIDs != nil || set.OtherConfig != nil {
			ovsOps = append(ovsOps, set)
		}
	}
	head := p.ovsFilter(p.ops[:cut])
	tail := p.ovsFilter(p.ops[cut:])
	out := make([]Op, 0, len(head)+len(ovsOps)+len(tail))
	out = append(out, head...)
	out = append(out, ovsOps...)
	p.ops = append(out, tail...)
	return nil
}

// ovsFilter drops the link operations that OVSDB operations replace.
func (p *planner) ovsFilter(ops []Op) []Op {
	out := make([]Op, 0, len(ops))
	for _, op := range ops {
		switch o := op.(type) {
		case LinkCreate:
			if o.Iface.Type == TypeOVSBridge || o.Iface.Type == TypeOVSInterface {
				continue
			}
		case LinkDelete:
			if o.Type == TypeOVSBridge || o.Type == TypeOVSInterface {
				continue
			}
		case LinkModify:
			if o.Iface.Type == TypeOVSBridge {
				continue
			}
			if o.Iface.Type == TypeOVSInterface {
				d := o.Iface
				d.Patch, d.DPDK, d.OVSDB, d.MACAddress = nil, nil, nil, nil
				if _, changed := planLinkDiff(&d, &Interface{Name: d.Name, Type: d.Type}); !changed {
					continue
				}
				o.Iface = d
				op = o
			}
		case LinkSetController:
			if p.isOVSBridge(o.Controller) || o.Controller == "" && p.isOVSBridge(p.curCtrl[o.Name]) {
				continue
			}
		}
		out = append(out, op)
	}
	return out
}

// ovsSpec builds bridge br's OVSDB configuration from the target (the
// change set over the current state) or from the current state alone.
func (p *planner) ovsSpec(br string, target bool) OVSBridgeSpec {
	ifc := p.cur[planKey(br, TypeOVSBridge)]
	if e := p.byKey[planKey(br, TypeOVSBridge)]; target && e != nil {
		ifc = e.t
	}
	spec := OVSBridgeSpec{Name: br}
	if ifc == nil {
		return spec
	}
	spec.OVSDB = normOVSDB(ifc.OVSDB)
	if ifc.Description != nil && *ifc.Description != "" {
		spec.Description = ifc.Description
	}
	if ifc.OVSBridge == nil {
		return spec
	}
	spec.Options = ifc.OVSBridge.Options
	for _, port := range ifc.OVSBridge.Port {
		ps := OVSPortSpec{Name: port.Name, VLAN: port.VLAN}
		if port.VLAN.IsEmpty() {
			ps.VLAN = nil
		}
		if la := port.LinkAggregation; la != nil {
			// OVS keeps no order of members, and 0 is its "no delay".
			bond := *la
			bond.Port = append([]OVSBondPort(nil), la.Port...)
			sort.Slice(bond.Port, func(i, j int) bool { return bond.Port[i].Name < bond.Port[j].Name })
			zero := uint32(0)
			if bond.BondUpdelay == nil {
				bond.BondUpdelay = &zero
			}
			if bond.BondDowndelay == nil {
				bond.BondDowndelay = &zero
			}
			bond.OVSDB = normOVSDB(bond.OVSDB)
			ps.Bond = &bond
			for _, m := range bond.Port {
				ps.Interfaces = append(ps.Interfaces, p.ovsIfaceSpec(m.Name, target))
			}
		} else {
			ps.Interfaces = []OVSIfaceSpec{p.ovsIfaceSpec(port.Name, target)}
		}
		spec.Ports = append(spec.Ports, ps)
	}
	// OVS keeps no order of ports either.
	sort.SliceStable(spec.Ports, func(i, j int) bool { return spec.Ports[i].Name < spec.Ports[j].Name })
	return spec
}

func (p *planner) ovsIfaceSpec(name string, target bool) OVSIfaceSpec {
	s := OVSIfaceSpec{Name: name}
	c := p.curOf(name)
	ifc := c
	if e := p.byName[name]; target && e != nil && !e.gone {
		ifc = e.t
	}
	if ifc == nil {
		return s
	}
	if ifc.Type == TypeOVSInterface {
		switch {
		case ifc.Patch != nil:
			s.Type, s.Peer = "patch", ifc.Patch.Peer
		default:
			s.Type = "internal"
		}
		// The MAC is OVSDB's for an internal port; only an asked-for
		// one that differs from the kernel's is written.
		if target && ifc.MACAddress != nil && (c == nil || c.MACAddress == nil || !strings.EqualFold(string(*c.MACAddress), string(*ifc.MACAddress))) {
			s.MAC = string(*ifc.MACAddress)
		}
	}
	s.OVSDB = normOVSDB(ifc.OVSDB)
	return s
}

// normOVSDB drops removals and empty maps, so a spec compares equal to the
// state it produces.
func normOVSDB(o *OVSDBIface) *OVSDBIface {
	if o == nil {
		return nil
	}
	n := &OVSDBIface{}
	for _, m := range []struct {
		in  map[string]*string
		out *map[string]*string
	}{{o.ExternalIDs, &n.ExternalIDs}, {o.OtherConfig, &n.OtherConfig}} {
		for k, v := range m.in {
			if v == nil {
				continue
			}
			if *m.out == nil {
				*m.out = map[string]*string{}
			}
			(*m.out)[k] = v
		}
	}
	if n.ExternalIDs == nil && n.OtherConfig == nil {
		return nil
	}
	return n
}

// flatMap drops the removals (nil values) of an ovs-db map.
func flatMap(m map[string]*string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}
