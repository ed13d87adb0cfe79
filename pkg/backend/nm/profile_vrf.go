package nm

import (
	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// vrfSettings is the `vrf` setting: its route table. Ports attach with
// slave-type vrf (Profile) and, unlike other ports, keep their IP
// configuration; routes through them name the table themselves
// (route-data "table"), as nmstate places them.
func vrfSettings(s Settings, ifc *nmstate.Interface) error {
	if ifc.VRF == nil || ifc.VRF.RouteTableID == nil || *ifc.VRF.RouteTableID == 0 {
		return &nmstate.Error{Kind: nmstate.InvalidArgument, Path: "vrf.route-table-id", Detail: "a vrf needs a route table"}
	}
	s["vrf"] = map[string]dbus.Variant{"table": dbus.MakeVariant(*ifc.VRF.RouteTableID)}
	return nil
}
