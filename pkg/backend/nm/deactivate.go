package nm

import (
	"reflect"

	"github.com/godbus/dbus/v5"
)

// deactivateFirst names the planned profiles whose active connection must
// go down before the profile is saved and activated again, because
// NetworkManager cannot change them live (nmstate's
// gen_nm_conn_need_to_deactivate_first): a VLAN's id or protocol, a
// VXLAN's id, a VRF's table, a veth's peer; the ports of a linux bridge
// whose vlan-default-pvid changes; a bond port whose queue-id changes.
// Re-activating such a virtual device makes NetworkManager create its link
// anew with the new settings. existing are the profiles the interfaces have
// now (nil for gc: nothing is active).
func deactivateFirst(pp *ProfilePlan, existing existingProfiles) []string {
	if len(existing) == 0 {
		return nil
	}
	planned := map[string]Settings{}
	for _, p := range pp.Profiles {
		planned[p.Name] = p.Settings
	}
	changed := func(name, sec, key string, def any) bool {
		old := existing[name]
		s, ok := planned[name]
		if old == nil || !ok {
			return false
		}
		return !reflect.DeepEqual(settingValue(old.settings, sec, key, def), settingValue(s, sec, key, def))
	}
	has := func(name, sec string) bool {
		old := existing[name]
		return old != nil && old.settings[sec] != nil && planned[name][sec] != nil
	}
	var out []string
	for _, p := range pp.Profiles {
		n := p.Name
		typ, _ := p.Settings["connection"]["type"].Value().(string)
		ctl, _ := p.Settings["connection"]["master"].Value().(string)
		portType, _ := p.Settings["connection"]["slave-type"].Value().(string)
		var must bool
		switch {
		case typ == "vlan" && has(n, "vlan"):
			must = changed(n, "vlan", "id", uint32(0)) || changed(n, "vlan", "protocol", "802.1Q")
		case typ == "vxlan" && has(n, "vxlan"):
			must = changed(n, "vxlan", "id", uint32(0))
		case typ == "vrf" && has(n, "vrf"):
			must = changed(n, "vrf", "table", uint32(0))
		case typ == "veth" && has(n, "veth"):
			must = changed(n, "veth", "peer", "")
		}
		switch portType {
		case "bridge":
			must = must || changed(ctl, "bridge", "vlan-default-pvid", uint32(1))
		case "bond":
			must = must || changed(n, "bond-port", "queue-id", uint32(0))
		}
		if must {
			out = append(out, n)
		}
	}
	return out
}

// settingValue is a key's value, or def when the profile does not have
// it (NetworkManager leaves defaults out of what it sends).
func settingValue(s map[string]map[string]dbus.Variant, sec, key string, def any) any {
	if v, ok := s[sec][key]; ok {
		return v.Value()
	}
	return def
}
