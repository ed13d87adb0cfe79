package nm

import (
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// wiredKeys are the 802-3-ethernet properties this file owns (the MTU is
// Profile's); an existing profile's values are kept unless the desired
// state sets them.
var wiredKeys = []string{"assigned-mac-address", "auto-negotiate", "speed", "duplex", "accept-all-mac-addresses"}

// wiredSettings maps mac-address (NetworkManager's cloned MAC, set on the
// device at activation), accept-all-mac-addresses and the ethernet
// section's link modes, as nmstate's wired setting does: auto-negotiation
// on drops speed and duplex (the device advertises all it can), off sets
// the given ones.
func wiredSettings(s Settings, in ProfileInput) error {
	out := map[string]dbus.Variant{}
	for _, k := range wiredKeys {
		if v, ok := in.Previous["802-3-ethernet"][k]; ok {
			out[k] = v
		}
	}
	if d := in.Desired; d != nil {
		if d.MACAddress != nil && *d.MACAddress != "" {
			// D-Bus carries the cloned MAC as assigned-mac-address (a
			// string; cloned-mac-address is its deprecated byte form).
			out["assigned-mac-address"] = dbus.MakeVariant(strings.ToUpper(string(*d.MACAddress)))
		}
		if d.AcceptAllMAC != nil {
			v := int32(0)
			if *d.AcceptAllMAC {
				v = 1
			}
			out["accept-all-mac-addresses"] = dbus.MakeVariant(v)
		}
		if e := d.Ethernet; e != nil && e.AutoNegotiation != nil {
			out["auto-negotiate"] = dbus.MakeVariant(*e.AutoNegotiation)
			delete(out, "speed")
			delete(out, "duplex")
			if !*e.AutoNegotiation {
				if e.Speed != nil {
					out["speed"] = dbus.MakeVariant(*e.Speed)
				}
				if e.Duplex != nil {
					out["duplex"] = dbus.MakeVariant(string(*e.Duplex))
				}
				_, sp := out["speed"]
				_, du := out["duplex"]
				if sp != du {
					// NetworkManager takes both or neither (neither: the
					// link modes are left alone).
					return &nmstate.Error{Kind: nmstate.InvalidArgument, Path: "ethernet",
						Detail: "auto-negotiation false needs both speed and duplex, or neither, on NetworkManager"}
				}
			}
		}
		// speed and duplex without auto-negotiation: false are not
		// mapped, as nmstate does not map them.
	}
	if len(out) == 0 {
		return nil
	}
	sec := section(s, "802-3-ethernet")
	for k, v := range out {
		sec[k] = v
	}
	return nil
}
