package nm

import (
	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// NetworkManager's vlan.flags (NMVlanFlags).
const (
	vlanFlagReorderHeaders = 0x1
	vlanFlagGVRP           = 0x2
	vlanFlagLooseBinding   = 0x4
	vlanFlagMVRP           = 0x8
)

// vlanSettings is the `vlan` setting: parent, id, protocol and flags.
func vlanSettings(s Settings, ifc *nmstate.Interface) error {
	v := ifc.VLAN
	if v == nil || v.ID == nil || v.BaseIface == nil || *v.BaseIface == "" {
		return &nmstate.Error{Kind: nmstate.InvalidArgument, Path: "vlan", Detail: "a vlan needs base-iface and id"}
	}
	sec := map[string]dbus.Variant{
		"parent": dbus.MakeVariant(*v.BaseIface),
		"id":     dbus.MakeVariant(uint32(*v.ID)),
	}
	// 802.1Q is NetworkManager's default and vlan.protocol is new in 1.42:
	// nmstate writes only 802.1ad, so older releases take 802.1Q profiles.
	if v.Protocol != nil && *v.Protocol == "802.1ad" {
		sec["protocol"] = dbus.MakeVariant("802.1ad")
	}
	// Reordering headers is NetworkManager's (and iproute2's) default for
	// a new VLAN; the flags are written whole, the profile being rebuilt.
	flags := uint32(vlanFlagReorderHeaders)
	if v.ReorderHeaders != nil && !*v.ReorderHeaders {
		flags &^= vlanFlagReorderHeaders
	}
	if v.LooseBinding != nil && *v.LooseBinding {
		flags |= vlanFlagLooseBinding
	}
	if v.RegistrationProtocol != nil {
		switch *v.RegistrationProtocol {
		case "gvrp":
			flags |= vlanFlagGVRP
		case "mvrp":
			flags |= vlanFlagMVRP
		}
	}
	sec["flags"] = dbus.MakeVariant(flags)
	s["vlan"] = sec
	return nil
}
