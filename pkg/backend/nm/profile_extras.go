package nm

import (
	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// The settings below are nmstate's mapping of the base-interface keys that
// are not about the interface type: the wired setting (MAC, link modes,
// accept-all-mac-addresses), ethtool, SR-IOV, 802.1X, LLDP and MPTCP
// (each in its own file), hooked into Profile by extraSettings.
//
// Where their values come from matters. Profile is built from the full
// target (desired overlaid on the current state), and for keys the kernel
// reports on every interface — ethtool features, speed and duplex, the MAC
// — the target holds whatever the kernel shows: copied into a profile they
// would pin every feature of every device, and NetworkManager refuses the
// kernel feature names it has no property for. So those sections are
// nmstate's way: the existing profile's section (in.Previous) with the
// desired keys (in.Desired) on top. 802.1X, LLDP and MPTCP are reported
// from the profiles themselves (show_extras_linux.go), so the target's
// values are the profile's and are used whole.

// extraSettings adds the wired, ethtool, SR-IOV, 802.1X, LLDP and MPTCP
// settings of one profile.
func extraSettings(s Settings, in ProfileInput) error {
	ifc := in.Iface
	if ifc.Type != nmstate.TypeLoopback && ifc.Type != nmstate.TypeInfiniBand {
		if err := wiredSettings(s, in); err != nil {
			return err
		}
	}
	if err := ethtoolSettings(s, in); err != nil {
		return err
	}
	if err := sriovSettings(s, in); err != nil {
		return err
	}
	if err := ieee8021xSettings(s, ifc); err != nil {
		return err
	}
	if ifc.LLDP != nil && ifc.LLDP.Enabled != nil {
		// NM_SETTING_CONNECTION_LLDP_ENABLE_RX = 1, DISABLE = 0.
		v := int32(0)
		if *ifc.LLDP.Enabled {
			v = 1
		}
		s["connection"]["lldp"] = dbus.MakeVariant(v)
	}
	return mptcpSettings(s, ifc)
}

// previousSection is a copy of one setting of the existing profile, or an
// empty one.
func previousSection(in ProfileInput, name string) map[string]dbus.Variant {
	out := map[string]dbus.Variant{}
	for k, v := range in.Previous[name] {
		out[k] = v
	}
	return out
}

// section returns s's setting name, creating it.
func section(s Settings, name string) map[string]dbus.Variant {
	if s[name] == nil {
		s[name] = map[string]dbus.Variant{}
	}
	return s[name]
}

// desiredIface is the desired state's entry for ifc, or nil when the
// apply pulled the interface in without naming it.
func desiredIface(m *nmstate.Merged, ifc *nmstate.Interface) *nmstate.Interface {
	if m == nil || m.Desired == nil {
		return nil
	}
	if d := m.Desired.FindTyped(ifc.Name, ifc.Type); d != nil {
		return d
	}
	for _, d := range m.Desired.Find(ifc.Name) {
		if d.Type == "" || d.Type == nmstate.TypeEthernet || d.Type == nmstate.TypeVeth {
			return d
		}
	}
	return nil
}

// previousSettings is an existing profile's settings (nil for none).
func previousSettings(p *profile) Settings {
	if p == nil {
		return nil
	}
	return Settings(p.settings)
}
