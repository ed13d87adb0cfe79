package nm

import (
	"errors"
	"fmt"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Devices NetworkManager does not manage, as upstream nmstate treats them
// (nm/show.rs, ifaces/inter_ifaces.rs):
//
//   - they are reported `state: ignore`, with what the kernel shows of
//     them;
//   - left out of a desired state they stay ignored: no profile, not
//     verified; what an apply asks of the kernel through them (routes,
//     rules naming them) is left to the kernel touch-up (upstream leaves
//     such routes unapplied and then fails to verify them);
//   - named in a desired state (state up, or a port listed by a desired
//     controller) they get a profile that is activated: NetworkManager
//     then manages the device (activation lifts the unmanaged flags set
//     at run time or by udev), or, for a device NetworkManager.conf's
//     `unmanaged-devices` names, refuses with DependencyFailed and the
//     apply rolls back.

// markIgnored reports the real devices NetworkManager leaves unmanaged as
// `state: ignore` (unrealized ones are only NetworkManager's and not in
// the kernel view).
func markIgnored(s *nmstate.State, devs map[string]*device) {
	for name, d := range devs {
		if !d.real || d.state != devUnmanaged {
			continue
		}
		for _, ifc := range s.Find(name) {
			if !ifc.Type.IsUserSpace() {
				ifc.State = nmstate.StateIgnore
			}
		}
	}
}

// leftAlone names the unmanaged devices an apply of m must leave alone:
// every one the desired state does not name, nor list as a port of a
// controller it wants up.
func leftAlone(m *nmstate.Merged, devs map[string]*device) map[string]bool {
	wanted := map[string]bool{}
	if m.Desired != nil {
		for i := range m.Desired.Interfaces {
			d := &m.Desired.Interfaces[i]
			if d.State == nmstate.StateIgnore {
				continue
			}
			wanted[d.Name] = true
			if d.EffectiveState() != nmstate.StateUp {
				continue
			}
			if ports, ok := d.Ports(); ok {
				for _, p := range ports {
					wanted[p] = true
				}
			}
		}
	}
	out := map[string]bool{}
	for name, d := range devs {
		if d.real && d.state == devUnmanaged && !wanted[name] {
			out[name] = true
		}
	}
	return out
}

// activationError names the interface and, when NetworkManager refuses
// a device it does not manage, says so as a dependency error. With the
// device left to NetworkManager's choice (as nmstate activates),
// NetworkManager 1.42 answers "No suitable device found" (UnknownDevice)
// for a device unmanaged-devices names, DependencyFailed when it tried to
// manage the device and could not.
func activationError(name string, d *device, err error) error {
	var de dbus.Error
	if d != nil && d.real && d.state == devUnmanaged && errors.As(err, &de) &&
		(de.Name == "org.freedesktop.NetworkManager.DependencyFailed" || de.Name == "org.freedesktop.NetworkManager.UnknownDevice") {
		return &nmstate.Error{Kind: nmstate.Dependency, Path: nmstate.Path("interfaces[name=" + name + "]"),
			Detail: fmt.Sprintf("NetworkManager does not manage %s and refuses to (unmanaged-devices in NetworkManager.conf): %v", name, err)}
	}
	return fmt.Errorf("activating %s: %w", name, err)
}
