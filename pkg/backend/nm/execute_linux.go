package nm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// ExecuteMerged applies the merged state m through NetworkManager: saves
// the profiles, takes down and removes what goes, activates in order and
// waits; then lets the kernel backend carry out what profiles cannot
// express (plan the remaining difference against a fresh read).
func (b *Backend) ExecuteMerged(ctx context.Context, m *nmstate.Merged, _ *nmstate.Plan) error {
	profiles, err := b.c.profiles(ctx)
	if err != nil {
		return err
	}
	devs, err := b.c.devices(ctx)
	if err != nil {
		return err
	}
	existing := existingProfiles{}
	active := b.activeProfiles(devs)
	activeConn := func(p dbus.ObjectPath) bool { _, ok := active[p]; return ok }
	for _, p := range profiles {
		name := p.str("connection", "interface-name")
		if name == "" || p.str("connection", "type") == "loopback" {
			continue
		}
		if t := p.str("connection", "type"); isOVSKeyed(t) {
			name = ovsKey(t, name)
		}
		if prev := existing[name]; prev == nil || activeConn(p.path) && !activeConn(prev.path) {
			existing[name] = p
		}
	}
	if err := b.ovsReachable(m); err != nil {
		return err
	}
	pp, err := PlanProfiles(m, existing, leftAlone(m, devs), randomUUID)
	if err != nil {
		return err
	}
	if err := needBridgeVLANFiltering(pp); err != nil {
		return err
	}
	if err := b.ovsPrepare(ctx, m, pp, profiles, devs); err != nil {
		return err
	}

	// Down and absent first (ports leave before their controller goes).
	for _, name := range append(append([]string{}, pp.Down...), pp.Absent...) {
		if d := devs[name]; d != nil && d.active != "" && d.active != "/" {
			if err := b.c.deactivate(ctx, d.active); err != nil {
				return fmt.Errorf("deactivating %s: %w", name, err)
			}
		}
	}
	// An OVS bridge and its internal interface share a name: each
	// profile is deleted once.
	deleted := map[dbus.ObjectPath]bool{}
	for _, name := range pp.Absent {
		for _, p := range profiles {
			if p.str("connection", "interface-name") != name || keepOnAbsent(p) || deleted[p.path] {
				continue
			}
			if b.opts.MemoryOnly {
				continue // memory-only deletes no profile (nmstate's)
			}
			if err := b.c.deleteProfile(ctx, p.path); err != nil {
				return fmt.Errorf("deleting profile %s of %s: %w", p.str("connection", "id"), name, err)
			}
			deleted[p.path] = true
		}
		if d := devs[name]; d != nil && d.real {
			if ifc := m.Interface(name, ""); ifc != nil && ifc.Type.IsVirtual() {
				// Errors ignored: the link may be gone with its profile.
				_ = b.c.deleteDevice(ctx, d.path)
			}
		}
	}

	// Global DNS first, as nmstate clears or sets it before the profiles.
	if pp.GlobalDNS != nil {
		if err := b.c.ensureGlobalDNS(pp.GlobalDNS); err != nil {
			return fmt.Errorf("setting NetworkManager's global DNS: %w", err)
		}
	}

	if err := b.deactivateFirst(ctx, pp, devs); err != nil {
		return err
	}

	// Save.
	paths := make([]dbus.ObjectPath, len(pp.Profiles))
	for i, p := range pp.Profiles {
		if p.Path != "" {
			if err := b.c.updateProfile(ctx, p.Path, p.Settings, !b.opts.MemoryOnly); err != nil {
				return fmt.Errorf("updating the profile of %s: %w", p.Name, err)
			}
			paths[i] = p.Path
			continue
		}
		path, err := b.c.addProfile(ctx, p.Settings, !b.opts.MemoryOnly)
		if err != nil {
			return fmt.Errorf("adding a profile for %s: %w", p.Name, err)
		}
		paths[i] = path
	}
	if !b.opts.MemoryOnly {
		// One profile per interface, as nmstate keeps it: the others of
		// the same interface and type go.
		for i, p := range pp.Profiles {
			for _, old := range profiles {
				if old.path != paths[i] && old.str("connection", "interface-name") == p.Name && sameProfileType(old, p.Settings) {
					if err := b.c.deleteProfile(ctx, old.path); err != nil {
						return fmt.Errorf("deleting duplicate profile %s: %w", old.str("connection", "id"), err)
					}
				}
			}
		}
	}

	// Activate in order (NetworkManager queues each activation), then
	// wait for all.
	actx, cancel := context.WithTimeout(ctx, b.opts.ActivationTimeout)
	defer cancel()
	type pending struct {
		name     string
		ac       dbus.ObjectPath
		settings Settings
		// byController: not activated here, NetworkManager activates
		// it with its controller (profile is its path).
		byController bool
		profile      dbus.ObjectPath
	}
	// A port's profile active before (the same path, rewritten as a port)
	// counts too: NetworkManager activates it anew with its controller.
	nowDevs, err := b.c.devices(actx)
	if err != nil {
		return err
	}
	activeNow := b.activeProfiles(nowDevs)
	// Kernel controllers activated here that were not active: their
	// profiles have autoconnect-slaves, so NetworkManager activates their
	// ports itself, as nmstate relies on. Activating such a port again
	// restarts its activation half-way: a bond's MAC then changes under
	// the DHCP client it already started (a guest run's bond got no lease).
	newControllers := map[string]bool{}
	var waits []pending
	// A stacked interface (VLAN, VXLAN, MAC-VLAN, MACsec) on a parent
	// activated here is activated once its parent is: until a bond has
	// its ports its MAC is a random one, the VLAN takes the MAC the bond
	// gets later, and NetworkManager's DHCP client on the VLAN, begun
	// with the first, gets no answer (a guest run's bond0.102).
	started := map[string]int{} // name -> index in waits
	done := map[int]bool{}
	for i, p := range pp.Profiles {
		if !p.Up || b.ovsReapplied(actx, p, paths[i], devs) {
			continue
		}
		if k, ok := started[profileParent(p.Settings)]; ok && !done[k] {
			if err := b.c.waitActive(actx, waits[k].name, waits[k].ac, waits[k].settings); err != nil {
				return err
			}
			done[k] = true
		}
		typ, _ := p.Settings["connection"]["type"].Value().(string)
		ctl, _ := p.Settings["connection"]["master"].Value().(string)
		portType, _ := p.Settings["connection"]["slave-type"].Value().(string)
		if ctl != "" && autoActivatesPorts(portType) && newControllers[portType+"/"+ctl] {
			// A controller among them (a bond under a bridge) activates
			// its own ports in turn.
			if autoActivatesPorts(typ) {
				newControllers[typ+"/"+p.Name] = true
			}
			waits = append(waits, pending{name: p.Name, settings: p.Settings, byController: true, profile: paths[i]})
			continue
		}
		if autoActivatesPorts(typ) && activeNow[paths[i]] == "" {
			newControllers[typ+"/"+p.Name] = true
		}
		ac, err := b.c.activate(actx, paths[i])
		if err != nil {
			if ke := kernel.MissingFeatureError(p.Name, kernelTypeOf(p.Settings), err); ke != nil {
				return ke
			}
			return activationError(p.Name, devs[p.Name], err)
		}
		started[p.Name] = len(waits)
		waits = append(waits, pending{name: p.Name, ac: ac, settings: p.Settings})
	}
	for k, w := range waits {
		if done[k] {
			continue
		}
		if w.byController {
			var before dbus.ObjectPath
			if d := nowDevs[w.name]; d != nil {
				before = d.active
			}
			if err := b.waitPortActivated(actx, w.name, before, w.profile, w.settings); err != nil {
				return err
			}
			continue
		}
		if err := b.c.waitActive(actx, w.name, w.ac, w.settings); err != nil {
			return err
		}
	}
	b.settle(ctx, pp)
	if err := b.waitOVSReady(actx, pp); err != nil {
		return err
	}
	return b.touchUp(ctx, m, pp)
}

// autoActivatesPorts says whether NetworkManager activates the ports of a
// controller of this connection type (autoconnect-slaves) when it
// activates the controller. Open vSwitch profiles are left to their own
// path (ovsReapplied, waitOVSReady).
func autoActivatesPorts(connType string) bool {
	switch connType {
	case "bond", "bridge", "vrf", "team":
		return true
	}
	return false
}

// profileParent is the parent interface a profile stacks on ("" if none).
func profileParent(s Settings) string {
	for _, sec := range []string{"vlan", "vxlan", "macvlan", "macsec"} {
		if v, ok := s[sec]["parent"]; ok {
			p, _ := v.Value().(string)
			return p
		}
	}
	return ""
}

// portGrace is how long a port waits, once its controller is active, for
// NetworkManager to activate it before it is activated explicitly.
const portGrace = 10 * time.Second

// waitPortActivated waits until NetworkManager activated the port's
// profile with its controller (an activation other than before, the
// device's one before the apply's activations; a virtual port's device
// may not exist yet), or activates it after portGrace.
func (b *Backend) waitPortActivated(ctx context.Context, name string, before, profile dbus.ObjectPath, s Settings) error {
	deadline := time.Now().Add(portGrace)
	for {
		var dev, ac, conn dbus.ObjectPath
		if b.c.call(ctx, nmPath, nmIface+".GetDeviceByIpIface", name).Store(&dev) == nil &&
			b.c.prop(dev, deviceIface+".ActiveConnection", &ac) == nil && ac != "" && ac != "/" && ac != before &&
			b.c.prop(ac, acIface+".Connection", &conn) == nil && conn == profile {
			return b.c.waitActive(ctx, name, ac, s)
		}
		if time.Now().After(deadline) {
			ac, err := b.c.activate(ctx, profile)
			if err != nil {
				return activationError(name, nil, err)
			}
			return b.c.waitActive(ctx, name, ac, s)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("activating %s with its controller: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// touchUp makes the kernel match what the profiles could not express:
// the kernel backend plans the desired state (DNS left out: it is
// NetworkManager's) against a fresh read and executes that plan.
func (b *Backend) touchUp(ctx context.Context, m *nmstate.Merged, pp *ProfilePlan) error {
	desired := m.Desired.Clone()
	desired.DNSResolver = nil
	dropProfileOnly(desired)
	// Routes and rules no profile holds are asked of the kernel
	// explicitly: a profile rewritten without them made NetworkManager
	// remove them.
	if len(pp.KernelRoutes) > 0 {
		if desired.Routes == nil {
			desired.Routes = &nmstate.Routes{}
		}
		desired.Routes.Config = append(desired.Routes.Config, pp.KernelRoutes...)
	}
	if len(pp.KernelRules) > 0 {
		if desired.RouteRules == nil {
			desired.RouteRules = &nmstate.RouteRules{}
		}
		desired.RouteRules.Config = append(desired.RouteRules.Config, pp.KernelRules...)
	}
	if desired.Routes == nil && desired.RouteRules == nil && desired.Hostname == nil && len(desired.Interfaces) == 0 && desired.OVSDB == nil && desired.OVN == nil {
		return nil
	}
	var lastErr error
	// Settle: NetworkManager finishes some changes (ports attached,
	// addresses after DAD) just after reporting activation, and
	// ovs-vswitchd may take a new netdev tap down and up again, which
	// empties it for a moment (a route through it: network unreachable).
	// On a loaded node that moment outlasted three tries 200 ms apart, so
	// the tries are bounded by time, not by count.
	settleUntil := time.Now().Add(5 * time.Second)
	for i := 0; i < 3 || time.Now().Before(settleUntil); i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
		cur, err := b.read(ctx)
		if err != nil {
			return err
		}
		markPortsWithoutIP(cur, b.heldPorts(ctx, pp))
		// A read in the middle of NetworkManager's work can also be one
		// nothing merges into (a device's addresses flushed for a
		// re-activation: a route through it has IPv4 disabled): read
		// again as well.
		mm, err := nmstate.Merge(desired, cur)
		if err != nil {
			lastErr = err
			continue
		}
		plan, err := nmstate.PlanChanges(mm)
		if err != nil {
			lastErr = err
			continue
		}
		if plan.Empty() {
			return nil
		}
		if b.opts.OnTouchUp != nil {
			b.opts.OnTouchUp(plan)
		}
		if lastErr = b.touchUpExecute(ctx, plan); lastErr == nil {
			return nil
		}
	}
	return fmt.Errorf("kernel touch-up: %w", lastErr)
}

// Checkpoint is a NetworkManager checkpoint over all devices.
func (b *Backend) CheckpointCreate(ctx context.Context, timeout time.Duration) (string, error) {
	extra, err := b.recordExtra(ctx)
	if err != nil {
		return "", err
	}
	cp, err := b.c.checkpointCreate(ctx, timeout)
	if err != nil {
		var de dbus.Error
		if errors.As(err, &de) && de.Name == "org.freedesktop.NetworkManager.InvalidArguments" {
			return "", &nmstate.Error{Kind: nmstate.Backend, Detail: fmt.Sprintf("creating a NetworkManager checkpoint: another checkpoint exists (%v)", err)}
		}
		return "", fmt.Errorf("creating a NetworkManager checkpoint: %w", err)
	}
	return encodeCheckpointID(cp, extra), nil
}

// CheckpointRollback rolls NetworkManager back to the checkpoint and
// waits (bounded) until the devices it rolled back have settled.
func (b *Backend) CheckpointRollback(ctx context.Context, id string) error {
	cp, extra, err := decodeCheckpointID(id)
	if err != nil {
		return err
	}
	res, err := b.c.checkpointRollback(ctx, cp)
	if err != nil {
		// Gone (its timer rolled back) or failed: what it never covered
		// is restored all the same.
		return errors.Join(fmt.Errorf("rolling back NetworkManager checkpoint %s: %w", cp, err), b.restoreExtra(ctx, extra))
	}
	var failed []string
	rolled := map[dbus.ObjectPath]bool{}
	for dev, r := range res {
		switch r {
		case rollbackOK:
			rolled[dbus.ObjectPath(dev)] = true
		case rollbackFailed:
			failed = append(failed, dev)
		}
	}
	// NetworkManager re-activates what it rolled back after it replied:
	// until such a device is activated again, the kernel shows it
	// without its addresses (IPv4 disabled), and the revert plan read
	// then cannot even be merged. pkg/apply re-reads as well; this wait
	// makes its first read the settled one in the common case.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		devs, err := b.c.devices(ctx)
		if err != nil {
			break
		}
		busy := false
		for _, d := range devs {
			if rolled[d.path] && rollbackSettling(d.state) {
				busy = true
			}
		}
		if !busy {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rolling back NetworkManager checkpoint %s: %w", cp, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := b.restoreExtra(ctx, extra); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("NetworkManager checkpoint %s: rollback failed for devices %v", cp, failed)
	}
	return nil
}

// CheckpointDestroy commits: the checkpoint is dropped and nothing rolls
// back.
func (b *Backend) CheckpointDestroy(ctx context.Context, id string) error {
	cp, _, err := decodeCheckpointID(id)
	if err != nil {
		return err
	}
	if err := b.c.checkpointDestroy(ctx, cp); err != nil {
		return fmt.Errorf("destroying NetworkManager checkpoint %s: %w", id, err)
	}
	return nil
}

// Checkpoints lists NetworkManager's pending checkpoints.
func (b *Backend) Checkpoints() ([]string, error) {
	cps, err := b.c.checkpoints()
	out := make([]string, len(cps))
	for i, c := range cps {
		out[i] = string(c)
	}
	return out, err
}

// kernelTypeOf is the interface type of a profile whose device is a
// kernel link NetworkManager creates, for naming the module a kernel
// without it lacks; "" for the others.
func kernelTypeOf(s Settings) nmstate.InterfaceType {
	t, _ := s["connection"]["type"].Value().(string)
	switch t {
	case "bond":
		return nmstate.TypeBond
	case "vlan":
		return nmstate.TypeVLAN
	case "vrf":
		return nmstate.TypeVRF
	case "dummy":
		return nmstate.TypeDummy
	case "vxlan":
		return nmstate.TypeVXLAN
	case "macsec":
		return nmstate.TypeMACsec
	case "team":
		return nmstate.TypeTeam
	}
	return ""
}

// needBridgeVLANFiltering refuses, before anything changes, profiles that
// turn on VLAN filtering on a kernel without it: NetworkManager creates
// the bridge and then gives up on it ("the activation went away"), where
// the kernel backend names the kernel option.
func needBridgeVLANFiltering(pp *ProfilePlan) error {
	for _, p := range pp.Profiles {
		if on, _ := p.Settings["bridge"]["vlan-filtering"].Value().(bool); !on {
			continue
		}
		ok, err := kernel.BridgeVLANFiltering()
		if err != nil {
			return fmt.Errorf("asking the kernel about bridge vlan filtering for %s: %w", p.Name, err)
		}
		if !ok {
			return &nmstate.Error{Kind: nmstate.Dependency, Path: nmstate.Path("interfaces[name=" + p.Name + "]"),
				Detail: p.Name + ": kernel has no bridge vlan filtering support (CONFIG_BRIDGE_VLAN_FILTERING)"}
		}
		return nil
	}
	return nil
}
