package nm

import (
	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// bridgeVLANSettings adds a linux bridge's VLAN filtering keys: protocol
// and default PVID when given, and vlan-filtering on exactly when a port
// has a VLAN configuration (nmstate writes it whenever the port list is
// given; the merged bridge always has its ports).
func bridgeVLANSettings(br map[string]dbus.Variant, ifc *nmstate.Interface) {
	lb := ifc.LinuxBridge
	if lb == nil {
		return
	}
	if o := lb.Options; o != nil {
		if o.VlanProtocol != nil {
			br["vlan-protocol"] = dbus.MakeVariant(map[nmstate.VLANProto]string{"802.1q": "802.1Q", "802.1ad": "802.1ad"}[*o.VlanProtocol])
		}
		if o.VlanDefaultPVID != nil {
			br["vlan-default-pvid"] = dbus.MakeVariant(uint32(*o.VlanDefaultPVID))
		}
	}
	if lb.Port != nil {
		filtering := false
		for _, p := range lb.Port {
			if !p.VLAN.IsEmpty() {
				filtering = true
			}
		}
		br["vlan-filtering"] = dbus.MakeVariant(filtering)
	}
}

// bridgePortVLANs is a port's bridge-port.vlans: trunk tags become ranges
// neither PVID nor untagged; the access tag (or a trunk's native tag) one
// VLAN that is both.
func bridgePortVLANs(v *nmstate.BridgeVLAN) []map[string]dbus.Variant {
	if v.IsEmpty() || v.Mode == nil {
		return nil
	}
	rng := func(lo, hi uint16, native bool) map[string]dbus.Variant {
		return map[string]dbus.Variant{
			"vid-start": dbus.MakeVariant(lo),
			"vid-end":   dbus.MakeVariant(hi),
			"pvid":      dbus.MakeVariant(native),
			"untagged":  dbus.MakeVariant(native),
		}
	}
	var out []map[string]dbus.Variant
	if *v.Mode == "trunk" {
		for _, t := range v.TrunkTags {
			switch {
			case t.ID != nil:
				out = append(out, rng(*t.ID, *t.ID, false))
			case t.IDRange != nil:
				out = append(out, rng(t.IDRange.Min, t.IDRange.Max, false))
			}
		}
	}
	if v.Tag != nil {
		out = append(out, rng(*v.Tag, *v.Tag, true))
	}
	return out
}

// portTypeSettings adds what a port's controller type asks of it:
// bond-port, and the VLANs of a linux bridge port.
func portTypeSettings(s Settings, in ProfileInput) {
	switch in.ControllerType {
	case nmstate.TypeBond:
		bondPortSettings(s, in)
	case nmstate.TypeLinuxBridge:
		if p := in.BridgePort; p != nil && p.VLAN != nil {
			if vlans := bridgePortVLANs(p.VLAN); vlans != nil {
				if s["bridge-port"] == nil {
					s["bridge-port"] = map[string]dbus.Variant{}
				}
				s["bridge-port"]["vlans"] = dbus.MakeVariant(vlans)
			}
		}
	}
}
