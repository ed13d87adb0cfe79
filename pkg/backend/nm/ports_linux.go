package nm

import "context"

// heldPorts names the bond and bridge ports NetworkManager holds after an
// apply: the planned ones and those active already (a bridge's ports that
// the apply does not change are not planned).
func (b *Backend) heldPorts(ctx context.Context, pp *ProfilePlan) map[string]bool {
	ports := plannedPorts(pp)
	profiles, err := b.c.profiles(ctx)
	if err != nil {
		return ports
	}
	devs, err := b.c.devices(ctx)
	if err != nil {
		return ports
	}
	for name := range activePorts(profiles, b.activeProfiles(devs)) {
		ports[name] = true
	}
	return ports
}
