package nm

import (
	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// markPortsWithoutIP reports the bond and bridge ports NetworkManager
// holds with IPv6 off, as nmstate's model has ports (they carry no IP):
// NetworkManager drops a port profile's IP settings and leaves the port's
// disable_ipv6 sysctl as it was, and a bond port gets no IPv6 address from
// the kernel anyway. Without this the kernel touch-up would flip the
// sysctl, which NetworkManager's checkpoint does not restore: a rollback
// would then have to write profiles for the former ports to undo it. A
// port with a global IPv6 address is reported as it is.
func markPortsWithoutIP(s *nmstate.State, ports map[string]bool) {
	if s == nil {
		return
	}
	for i := range s.Interfaces {
		ifc := &s.Interfaces[i]
		if !ports[ifc.Name] || ifc.Controller == nil || *ifc.Controller == "" {
			continue
		}
		if c := ifc.IPv6; c != nil {
			global := false
			for _, a := range c.Address {
				if !a.IP.IsLinkLocalUnicast() {
					global = true
				}
			}
			if global {
				continue
			}
		}
		off := false
		ifc.IPv6 = &nmstate.IPConfig{Enabled: &off}
	}
}

// isPortProfile says whether settings are a bond or bridge port's.
func isPortProfile(s map[string]map[string]dbus.Variant) bool {
	t, _ := settingValue(s, "connection", "slave-type", "").(string)
	return t == "bond" || t == "bridge"
}

// activePorts names the devices whose active profile is a bond or bridge
// port's.
func activePorts(profiles []*profile, active map[dbus.ObjectPath]string) map[string]bool {
	out := map[string]bool{}
	for _, p := range profiles {
		if name, ok := active[p.path]; ok && isPortProfile(p.settings) {
			out[name] = true
		}
	}
	return out
}

// plannedPorts names the bond and bridge ports among pp's profiles.
func plannedPorts(pp *ProfilePlan) map[string]bool {
	out := map[string]bool{}
	for _, p := range pp.Profiles {
		if isPortProfile(p.Settings) {
			out[p.Name] = true
		}
	}
	return out
}
