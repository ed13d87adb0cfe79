package nm

import (
	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// vxlanSettings is the `vxlan` setting: id, parent (when given), local,
// remote, destination port and learning.
func vxlanSettings(s Settings, ifc *nmstate.Interface) error {
	v := ifc.VXLAN
	if v == nil || v.ID == nil {
		return &nmstate.Error{Kind: nmstate.InvalidArgument, Path: "vxlan.id", Detail: "a vxlan needs an id"}
	}
	sec := map[string]dbus.Variant{"id": dbus.MakeVariant(*v.ID)}
	if v.BaseIface != nil && *v.BaseIface != "" {
		sec["parent"] = dbus.MakeVariant(*v.BaseIface)
	}
	if v.Local != nil && v.Local.IsValid() {
		sec["local"] = dbus.MakeVariant(v.Local.String())
	}
	if v.Remote != nil && v.Remote.IsValid() {
		sec["remote"] = dbus.MakeVariant(v.Remote.String())
	}
	if v.DestinationPort != nil {
		sec["destination-port"] = dbus.MakeVariant(uint32(*v.DestinationPort))
	}
	if v.Learning != nil {
		sec["learning"] = dbus.MakeVariant(*v.Learning)
	}
	s["vxlan"] = sec
	return nil
}
