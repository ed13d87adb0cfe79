package nm

import (
	"fmt"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// typeKeyfileLines renders the type keys whose keyfile form is not the
// plain key=value of their D-Bus value: bond.options becomes one key per
// option in [bond]; bridge and bridge-port vlans one comma-separated
// list ("10-20,30 pvid untagged", nm_bridge_vlan_to_str).
func typeKeyfileLines(sec, key string, v dbus.Variant) ([]string, bool) {
	switch {
	case sec == "bond" && key == "options":
		opts, _ := v.Value().(map[string]string)
		var out []string
		for _, k := range sortedKeys(opts) {
			out = append(out, k+"="+opts[k])
		}
		return out, true
	case (sec == "bridge" || sec == "bridge-port") && key == "vlans":
		ranges, _ := v.Value().([]map[string]dbus.Variant)
		var parts []string
		for _, r := range ranges {
			lo, _ := r["vid-start"].Value().(uint16)
			hi, _ := r["vid-end"].Value().(uint16)
			p := fmt.Sprint(lo)
			if hi != lo {
				p = fmt.Sprintf("%d-%d", lo, hi)
			}
			if pvid, _ := r["pvid"].Value().(bool); pvid {
				p += " pvid"
			}
			if u, _ := r["untagged"].Value().(bool); u {
				p += " untagged"
			}
			parts = append(parts, p)
		}
		return []string{"vlans=" + strings.Join(parts, ",")}, true
	}
	return nil, false
}

// addTypeNICs names the interfaces gc assumes exist for a bond, VLAN,
// VXLAN or VRF: its ports and its base interface (ethernet unless the
// state defines them).
func addTypeNICs(ifc nmstate.Interface, add func(string)) {
	if ifc.LinkAggregation != nil {
		for _, p := range ifc.LinkAggregation.Port {
			add(p)
		}
	}
	if ifc.VRF != nil {
		for _, p := range ifc.VRF.Port {
			add(p)
		}
	}
	if ifc.VLAN != nil && ifc.VLAN.BaseIface != nil {
		add(*ifc.VLAN.BaseIface)
	}
	if ifc.VXLAN != nil && ifc.VXLAN.BaseIface != nil {
		add(*ifc.VXLAN.BaseIface)
	}
}
