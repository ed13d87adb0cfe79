package nmstate

import (
	"reflect"
	"sort"
	"strings"
)

// OVSGlobalOf returns the Open_vSwitch table's maps as a state reports
// them: `ovs-db`, with `ovn.bridge-mappings` folded back into
// external_ids:ovn-bridge-mappings. The maps are never nil.
func OVSGlobalOf(s *State) OVSGlobal {
	g := OVSGlobal{ExternalIDs: map[string]string{}, OtherConfig: map[string]string{}}
	if s == nil {
		return g
	}
	if s.OVSDB != nil {
		g.ExternalIDs, g.OtherConfig = flatMap(s.OVSDB.ExternalIDs), flatMap(s.OVSDB.OtherConfig)
	}
	if s.OVN != nil && len(s.OVN.BridgeMappings) > 0 {
		g.ExternalIDs[OVNBridgeMappingsKey] = formatBridgeMappings(s.OVN.BridgeMappings)
	}
	return g
}

// ParseBridgeMappings reads OVN's "localnet:bridge,..." form.
func ParseBridgeMappings(v string) []OVNBridgeMapping {
	var out []OVNBridgeMapping
	for _, item := range strings.Split(v, ",") {
		ln, br, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok || ln == "" {
			continue
		}
		out = append(out, OVNBridgeMapping{Localnet: ln, Bridge: strPtr(br)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Localnet < out[j].Localnet })
	return out
}

func formatBridgeMappings(l []OVNBridgeMapping) string {
	parts := make([]string, 0, len(l))
	for _, m := range l {
		br := ""
		if m.Bridge != nil {
			br = *m.Bridge
		}
		parts = append(parts, m.Localnet+":"+br)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// mergeOVSGlobal computes the target of the Open_vSwitch table's maps:
// current overlaid with `ovs-db` (a null value removes the key) and with
// `ovn.bridge-mappings` (a mapping replaces the one of its localnet,
// state absent removes it).
func (mg *merger) mergeOVSGlobal() {
	d := mg.m.Desired
	if d.OVSDB == nil && d.OVN == nil {
		return
	}
	g := OVSGlobalOf(mg.m.Current)
	if d.OVSDB != nil {
		for _, m := range []struct {
			in  map[string]*string
			out map[string]string
		}{{d.OVSDB.ExternalIDs, g.ExternalIDs}, {d.OVSDB.OtherConfig, g.OtherConfig}} {
			for k, v := range m.in {
				if v == nil {
					delete(m.out, k)
				} else {
					m.out[k] = *v
				}
			}
		}
	}
	if d.OVN != nil {
		byNet := map[string]OVNBridgeMapping{}
		for _, m := range ParseBridgeMappings(g.ExternalIDs[OVNBridgeMappingsKey]) {
			byNet[m.Localnet] = m
		}
		for _, m := range d.OVN.BridgeMappings {
			if m.State != nil && *m.State == "absent" {
				delete(byNet, m.Localnet)
				continue
			}
			byNet[m.Localnet] = OVNBridgeMapping{Localnet: m.Localnet, Bridge: m.Bridge}
		}
		l := make([]OVNBridgeMapping, 0, len(byNet))
		for _, m := range byNet {
			l = append(l, m)
		}
		if len(l) == 0 {
			delete(g.ExternalIDs, OVNBridgeMappingsKey)
		} else {
			g.ExternalIDs[OVNBridgeMappingsKey] = formatBridgeMappings(l)
		}
	}
	if !reflect.DeepEqual(g, OVSGlobalOf(mg.m.Current)) {
		mg.m.OVSDB = &g
	}
}

// OVSGlobalState is the inverse of OVSGlobalOf: the `ovs-db` and `ovn`
// sections a backend reports for these maps (OVN's mappings moved out of
// external_ids into `ovn`, nil when there are none).
func OVSGlobalState(g OVSGlobal) (*OVSDB, *OVN) {
	db := &OVSDB{ExternalIDs: map[string]*string{}, OtherConfig: map[string]*string{}}
	var ovn *OVN
	for k, v := range g.ExternalIDs {
		if k == OVNBridgeMappingsKey {
			if l := ParseBridgeMappings(v); len(l) > 0 {
				ovn = &OVN{BridgeMappings: l}
			}
			continue
		}
		db.ExternalIDs[k] = strPtr(v)
	}
	for k, v := range g.OtherConfig {
		db.OtherConfig[k] = strPtr(v)
	}
	return db, ovn
}

// ovsGlobal checks the Open_vSwitch table's maps: every key desired sets
// has its value, every key desired removes is gone; OVN mappings likewise.
func (v *verifier) ovsGlobal() {
	d := v.desired
	if d.OVSDB == nil && d.OVN == nil {
		return
	}
	cur := OVSGlobalOf(v.current)
	if d.OVSDB != nil {
		for _, m := range []struct {
			name string
			want map[string]*string
			got  map[string]string
		}{{"external_ids", d.OVSDB.ExternalIDs, cur.ExternalIDs}, {"other_config", d.OVSDB.OtherConfig, cur.OtherConfig}} {
			for _, k := range sortedStringKeys(m.want) {
				got, ok := m.got[k]
				switch want := m.want[k]; {
				case want == nil && ok:
					v.add("ovs-db."+m.name+"."+k, "null", got)
				case want != nil && (!ok || got != *want):
					v.add("ovs-db."+m.name+"."+k, *want, strOrNull(map[bool]*string{true: &got}[ok]))
				}
			}
		}
	}
	if d.OVN != nil {
		have := map[string]string{}
		for _, m := range ParseBridgeMappings(cur.ExternalIDs[OVNBridgeMappingsKey]) {
			have[m.Localnet] = *m.Bridge
		}
		for _, m := range d.OVN.BridgeMappings {
			br, ok := have[m.Localnet]
			p := "ovn.bridge-mappings[localnet=" + m.Localnet + "]"
			switch {
			case m.State != nil && *m.State == "absent":
				if ok {
					v.add(p, "absent", br)
				}
			case !ok:
				v.add(p, strOrNull(m.Bridge), "absent")
			case m.Bridge != nil && *m.Bridge != br:
				v.add(p, *m.Bridge, br)
			}
		}
	}
}

func sortedStringKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// revertOVSGlobal gives back before's maps: its values for every key, and
// removals for the keys the apply added. OVN mappings ride in
// external_ids, so they are restored with it.
func revertOVSGlobal(before, after OVSGlobal) *OVSDB {
	out := &OVSDB{ExternalIDs: map[string]*string{}, OtherConfig: map[string]*string{}}
	for _, m := range []struct {
		b, a map[string]string
		out  map[string]*string
	}{{before.ExternalIDs, after.ExternalIDs, out.ExternalIDs}, {before.OtherConfig, after.OtherConfig, out.OtherConfig}} {
		for k, v := range m.b {
			m.out[k] = strPtr(v)
		}
		for k := range m.a {
			if _, ok := m.b[k]; !ok {
				m.out[k] = nil
			}
		}
	}
	return out
}

// revertOVSDBIfaces adds removals to the reverted interfaces' ovs-db maps
// for keys the apply added, and empty VLAN sections to OVS ports that got
// one: merge keeps what the desired state does not mention, so restoring
// before's values alone would keep the new ones.
func revertOVSDBIfaces(out, after *State) {
	for i := range out.Interfaces {
		r := &out.Interfaces[i]
		if r.State == StateAbsent {
			continue
		}
		a := findSameKind(after, r.Name, r.Type)
		if a == nil {
			continue
		}
		if r.OVSBridge != nil && a.OVSBridge != nil {
			// A port's VLAN is kept when not given; an empty one clears it.
			for j := range r.OVSBridge.Port {
				rp := &r.OVSBridge.Port[j]
				for _, ap := range a.OVSBridge.Port {
					if ap.Name == rp.Name && rp.VLAN == nil && !ap.VLAN.IsEmpty() {
						rp.VLAN = &BridgeVLAN{}
					}
				}
			}
		}
		if a.OVSDB == nil {
			continue
		}
		if r.OVSDB == nil {
			r.OVSDB = &OVSDBIface{}
		}
		for _, m := range []struct {
			a   map[string]*string
			out *map[string]*string
		}{{a.OVSDB.ExternalIDs, &r.OVSDB.ExternalIDs}, {a.OVSDB.OtherConfig, &r.OVSDB.OtherConfig}} {
			for k := range m.a {
				if *m.out == nil {
					*m.out = map[string]*string{}
				}
				if _, ok := (*m.out)[k]; !ok {
					(*m.out)[k] = nil
				}
			}
		}
	}
}

// sanitizeOVSDB turns the removals (null values) of an interface's desired
// ovs-db maps into nothing to check when the key is indeed gone; a key
// still there stays a mismatch.
func sanitizeOVSDB(want, got map[string]any) {
	w, ok := want["ovs-db"].(map[string]any)
	if !ok {
		return
	}
	g, _ := got["ovs-db"].(map[string]any)
	for _, col := range []string{"external_ids", "other_config"} {
		wm, ok := w[col].(map[string]any)
		if !ok {
			continue
		}
		gm, _ := g[col].(map[string]any)
		for k, v := range wm {
			if _, has := gm[k]; v == nil && !has {
				delete(wm, k)
			}
		}
		if len(wm) == 0 {
			delete(w, col)
		}
	}
	if len(w) == 0 {
		delete(want, "ovs-db")
	}
}
