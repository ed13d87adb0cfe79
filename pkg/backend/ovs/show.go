package ovs

import (
	"sort"
	"strconv"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/ovsdb"
)

// datapathLinks are the kernel links OVS makes for its datapaths, not
// interfaces of anyone's configuration.
var datapathLinks = map[string]bool{"ovs-system": true, "ovs-netdev": true}

// overlay merges an OVSDB snapshot into a kernel state, as nmstate shows
// OVS: one ovs-bridge per Bridge row, internal interfaces as
// ovs-interface with their bridge as controller, patch ports as
// ovs-interface entries of their own, system ports with their bridge as
// controller, and the Open_vSwitch table as ovs-db and ovn.
func overlay(s *nmstate.State, snap *snapshot) {
	kept := s.Interfaces[:0:0]
	for _, ifc := range s.Interfaces {
		if !datapathLinks[ifc.Name] {
			kept = append(kept, ifc)
		}
	}
	s.Interfaces = kept
	kernel := func(name string) *nmstate.Interface {
		for i := range s.Interfaces {
			if s.Interfaces[i].Name == name && !s.Interfaces[i].Type.IsUserSpace() {
				return &s.Interfaces[i]
			}
		}
		return nil
	}
	var added []nmstate.Interface
	for _, br := range snap.bridges {
		name := br.String("name")
		bi := nmstate.Interface{Name: name, Type: nmstate.TypeOVSBridge, State: nmstate.StateUp,
			OVSBridge: &nmstate.OVSBridge{Options: bridgeOptions(br), Port: []nmstate.OVSBridgePort{}}}
		bi.OVSDB = ifaceOVSDB(br)
		if d, ok := br.Map("external_ids")[descriptionKey]; ok {
			bi.Description = &d
			delete(bi.OVSDB.ExternalIDs, descriptionKey)
			if len(bi.OVSDB.ExternalIDs) == 0 {
				bi.OVSDB.ExternalIDs = nil
				if len(bi.OVSDB.OtherConfig) == 0 {
					bi.OVSDB = nil
				}
			}
		}
		for _, pu := range br.UUIDs("ports") {
			port, ok := snap.ports[pu]
			if !ok {
				continue
			}
			bp := nmstate.OVSBridgePort{Name: port.String("name"), VLAN: portVLAN(port)}
			ifaces := port.UUIDs("interfaces")
			if len(ifaces) > 1 || port.String("bond_mode") != "" {
				bp.LinkAggregation = portBond(port, snap)
			}
			bi.OVSBridge.Port = append(bi.OVSBridge.Port, bp)
			for _, iu := range ifaces {
				row, ok := snap.ifaces[iu]
				if !ok {
					continue
				}
				iname := row.String("name")
				ctrl := name
				switch row.String("type") {
				case "internal":
					k := kernel(iname)
					if k == nil {
						// vswitchd has not made its link (yet).
						added = append(added, nmstate.Interface{Name: iname, Type: nmstate.TypeOVSInterface,
							State: nmstate.StateDown, Controller: &ctrl, OVSDB: ifaceOVSDB(row)})
						continue
					}
					k.Type, k.Tun, k.Controller, k.OVSDB = nmstate.TypeOVSInterface, nil, &ctrl, ifaceOVSDB(row)
				case "patch":
					added = append(added, nmstate.Interface{Name: iname, Type: nmstate.TypeOVSInterface,
						State: nmstate.StateUp, Controller: &ctrl, OVSDB: ifaceOVSDB(row),
						Patch: &nmstate.OVSPatch{Peer: row.Map("options")["peer"]}})
				default:
					if k := kernel(iname); k != nil {
						k.Controller, k.OVSDB = &ctrl, ifaceOVSDB(row)
					}
				}
			}
		}
		sort.Slice(bi.OVSBridge.Port, func(i, j int) bool { return bi.OVSBridge.Port[i].Name < bi.OVSBridge.Port[j].Name })
		added = append(added, bi)
	}
	s.Interfaces = append(s.Interfaces, added...)
	sort.SliceStable(s.Interfaces, func(i, j int) bool { return s.Interfaces[i].Name < s.Interfaces[j].Name })
	s.OVSDB, s.OVN = nmstate.OVSGlobalState(nmstate.OVSGlobal{
		ExternalIDs: nonNil(snap.root.Map("external_ids")), OtherConfig: nonNil(snap.root.Map("other_config"))})
}

// descriptionKey is the Bridge external_ids key holding an ovs-bridge's
// description (shown as the interface's description, not in its ovs-db).
const descriptionKey = "knmstate-description"

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func bridgeOptions(br ovsdb.Row) *nmstate.OVSBridgeOptions {
	stp, _ := br.Bool("stp_enable")
	rstp, _ := br.Bool("rstp_enable")
	mcast, _ := br.Bool("mcast_snooping_enable")
	failMode := br.String("fail_mode")
	o := &nmstate.OVSBridgeOptions{STP: &nmstate.OVSBridgeSTP{Enabled: &stp}, RSTP: &rstp,
		McastSnoopingEnable: &mcast, FailMode: &failMode}
	if dp := br.String("datapath_type"); dp != "" {
		o.Datapath = &dp
	}
	oc := br.Map("other_config")
	for key, dst := range map[string]**uint16{"stp-forward-delay": &o.STP.ForwardDelay, "stp-hello-time": &o.STP.HelloTime,
		"stp-max-age": &o.STP.MaxAge, "stp-priority": &o.STP.Priority} {
		if v, err := strconv.ParseUint(oc[key], 10, 16); err == nil {
			n := uint16(v)
			*dst = &n
		}
	}
	return o
}

func ifaceOVSDB(r ovsdb.Row) *nmstate.OVSDBIface {
	ext, oc := r.Map("external_ids"), r.Map("other_config")
	if len(ext) == 0 && len(oc) == 0 {
		return nil
	}
	out := &nmstate.OVSDBIface{}
	for _, m := range []struct {
		in  map[string]string
		out *map[string]*string
	}{{ext, &out.ExternalIDs}, {oc, &out.OtherConfig}} {
		if len(m.in) == 0 {
			continue
		}
		*m.out = map[string]*string{}
		for k, v := range m.in {
			(*m.out)[k] = &v
		}
	}
	return out
}

// portVLAN reads tag, vlan_mode and trunks; trunk ids are shown as
// ranges where consecutive.
func portVLAN(p ovsdb.Row) *nmstate.BridgeVLAN {
	tag, hasTag := p.Int("tag")
	mode := p.String("vlan_mode")
	trunks := p.Ints("trunks")
	if !hasTag && mode == "" && len(trunks) == 0 {
		return nil
	}
	v := &nmstate.BridgeVLAN{}
	switch {
	case mode == "access" || mode == "" && hasTag && len(trunks) == 0:
		m := nmstate.BridgeVLANMode("access")
		v.Mode = &m
	default:
		m := nmstate.BridgeVLANMode("trunk")
		v.Mode = &m
		if mode == "native-untagged" || mode == "native-tagged" {
			t := true
			v.EnableNative = &t
		}
	}
	if hasTag {
		t := uint16(tag)
		v.Tag = &t
	}
	sort.Slice(trunks, func(i, j int) bool { return trunks[i] < trunks[j] })
	for i := 0; i < len(trunks); {
		j := i
		for j+1 < len(trunks) && trunks[j+1] == trunks[j]+1 {
			j++
		}
		if j == i {
			id := uint16(trunks[i])
			v.TrunkTags = append(v.TrunkTags, nmstate.TrunkTag{ID: &id})
		} else {
			v.TrunkTags = append(v.TrunkTags, nmstate.TrunkTag{IDRange: &nmstate.VLANRange{Min: uint16(trunks[i]), Max: uint16(trunks[j])}})
		}
		i = j + 1
	}
	return v
}

func portBond(p ovsdb.Row, snap *snapshot) *nmstate.OVSBond {
	b := &nmstate.OVSBond{}
	mode := p.String("bond_mode")
	if mode == "" && p.String("lacp") == "active" {
		mode = "lacp"
	}
	if mode != "" {
		m := nmstate.OVSBondMode(mode)
		b.Mode = &m
	}
	if v, ok := p.Int("bond_updelay"); ok {
		n := uint32(v)
		b.BondUpdelay = &n
	}
	if v, ok := p.Int("bond_downdelay"); ok {
		n := uint32(v)
		b.BondDowndelay = &n
	}
	for _, iu := range p.UUIDs("interfaces") {
		if r, ok := snap.ifaces[iu]; ok {
			b.Port = append(b.Port, nmstate.OVSBondPort{Name: r.String("name")})
		}
	}
	sort.Slice(b.Port, func(i, j int) bool { return b.Port[i].Name < b.Port[j].Name })
	b.OVSDB = ifaceOVSDB(p)
	return b
}
