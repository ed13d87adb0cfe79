package nm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/backend/ovs"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// openOVS puts the node's OVS database next to the kernel view, as the
// kernel backend's node does (pkg/backend/ovs): Show then reports OVS
// bridges, ports and interfaces exactly as there. No address (or
// ovs.NoAddress) = the node has no OVS: OVS states are refused.
func openOVS(ctx context.Context, k *kernel.Backend, opts Options) *ovs.Backend {
	if opts.OVSDB == "" || opts.OVSDB == ovs.NoAddress {
		return nil
	}
	return ovs.Open(ctx, k, ovs.Options{Address: opts.OVSDB, DefaultDatapath: opts.OVSDatapath})
}

// read is the node's state as the kernel backend (with OVS) reads it,
// without NetworkManager's own bookkeeping in OVSDB.
func (b *Backend) read(ctx context.Context) (*nmstate.State, error) {
	if b.ovs == nil {
		return b.kernel.Show(ctx)
	}
	s, err := b.ovs.Show(ctx)
	if err != nil {
		return nil, err
	}
	stripNMExternalIDs(s)
	return s, nil
}

// nmExternalIDPrefix marks the external_ids NetworkManager writes for
// itself on every OVSDB row it owns (NM.connection.uuid, ...): not part of
// anyone's configuration, so not reported.
const nmExternalIDPrefix = "NM."

func stripNMExternalIDs(s *nmstate.State) {
	strip := func(db **nmstate.OVSDBIface) {
		if *db == nil {
			return
		}
		for k := range (*db).ExternalIDs {
			if strings.HasPrefix(k, nmExternalIDPrefix) {
				delete((*db).ExternalIDs, k)
			}
		}
		if len((*db).ExternalIDs) == 0 {
			(*db).ExternalIDs = nil
		}
		if (*db).ExternalIDs == nil && len((*db).OtherConfig) == 0 {
			*db = nil
		}
	}
	for i := range s.Interfaces {
		ifc := &s.Interfaces[i]
		strip(&ifc.OVSDB)
		if ifc.OVSBridge != nil {
			for j := range ifc.OVSBridge.Port {
				if la := ifc.OVSBridge.Port[j].LinkAggregation; la != nil {
					strip(&la.OVSDB)
				}
			}
		}
	}
}

// ovsReachable refuses a state with Open vSwitch interfaces or OVSDB
// settings when this node has no reachable database: the first thing
// an apply checks, before any profile is made (a profile's own refusal,
// such as an ovs-bridge description, would hide the reason).
func (b *Backend) ovsReachable(m *nmstate.Merged) error {
	if !hasOVS(m) {
		return nil
	}
	if b.ovs == nil {
		return &nmstate.Error{Kind: nmstate.Dependency,
			Detail: fmt.Sprintf("%v: the NetworkManager backend has no Open vSwitch database for this node (give its socket with --ovsdb)", ovs.ErrNoOVSDB)}
	}
	if err := b.ovs.Connected(); err != nil {
		return &nmstate.Error{Kind: nmstate.Dependency,
			Detail: fmt.Sprintf("%v at %s (%v); start Open vSwitch or give its socket with --ovsdb", ovs.ErrNoOVSDB, b.ovs.Address(), err)}
	}
	return nil
}

// ovsPrepare runs before the profiles are saved: it refuses OVS without
// a reachable database before any change, gives new bridges the node's
// datapath, and takes down and deletes the bridges that go (with their
// ports) and the ports no bridge lists any more.
func (b *Backend) ovsPrepare(ctx context.Context, m *nmstate.Merged, pp *ProfilePlan, profiles []*profile, devs map[string]*device) error {
	op := pp.ovs
	if op == nil {
		return nil
	}
	if err := b.ovsReachable(m); err != nil {
		return err
	}
	netdev := map[string]bool{} // bridges on the userspace datapath
	for _, p := range op.profiles {
		if sec := p.Settings[nmOVSBridge]; sec != nil {
			if _, ok := sec["datapath-type"]; !ok && b.opts.OVSDatapath != "" {
				sec["datapath-type"] = dbus.MakeVariant(b.opts.OVSDatapath)
			}
			if dp, _ := sec["datapath-type"].Value().(string); dp == "netdev" {
				netdev[p.Name] = true
			}
		}
	}
	for _, p := range pp.Profiles {
		if t, _ := p.Settings["connection"]["type"].Value().(string); t == nmOVSInterface && op.localMAC[p.Name] && netdev[p.Name] {
			ovsLocalMAC(p.Settings)
		}
	}

	uuidOf := map[string]string{} // bridge name → its profile's UUID
	for _, p := range profiles {
		if p.str("connection", "type") == nmOVSBridge {
			uuidOf[p.str("connection", "interface-name")] = p.str("connection", "uuid")
		}
	}
	keptPorts := map[string]bool{}
	for _, p := range op.profiles {
		if u, _ := p.Settings["connection"]["uuid"].Value().(string); p.Settings[nmOVSPort] != nil {
			keptPorts[u] = true
		}
	}
	goneBridge := map[string]bool{}
	for _, name := range op.gone {
		goneBridge[name] = true
		if uuidOf[name] != "" {
			goneBridge[uuidOf[name]] = true
		}
	}
	// Ports of a bridge that goes, or that their bridge no longer lists.
	var drop []*profile
	for _, p := range profiles {
		switch p.str("connection", "type") {
		case nmOVSBridge:
			if goneBridge[p.str("connection", "interface-name")] {
				drop = append(drop, p)
			}
		case nmOVSPort:
			master := p.str("connection", "master")
			if goneBridge[master] || !keptPorts[p.str("connection", "uuid")] && bridgeListed(op, master, uuidOf) {
				drop = append(drop, p)
			}
		}
	}
	for _, name := range op.gone {
		if d := devs[ovsKey(nmOVSBridge, name)]; d != nil && d.active != "" && d.active != "/" {
			if err := b.c.deactivate(ctx, d.active); err != nil {
				return fmt.Errorf("deactivating OVS bridge %s: %w", name, err)
			}
		}
	}
	for _, p := range drop {
		if !p.unsaved && b.opts.MemoryOnly {
			continue // in-memory mode leaves profiles on disk alone
		}
		if err := b.c.deleteProfile(ctx, p.path); err != nil {
			return fmt.Errorf("deleting profile %s: %w", p.str("connection", "id"), err)
		}
	}
	return nil
}

// bridgeListed says whether master (a bridge's name or profile UUID)
// names a bridge this apply configures.
func bridgeListed(op *ovsPlan, master string, uuidOf map[string]string) bool {
	for _, p := range op.profiles {
		if p.Settings[nmOVSBridge] == nil {
			continue
		}
		u, _ := p.Settings["connection"]["uuid"].Value().(string)
		if master == p.Name || master == u || uuidOf[p.Name] == master {
			return true
		}
	}
	return false
}

// keepOnAbsent says whether the generic removal of an absent interface's
// profiles must leave p alone: bridge and port profiles share names with
// interfaces and are removed with their bridge (ovsPrepare).
func keepOnAbsent(p *profile) bool { return isOVSKeyed(p.str("connection", "type")) }

// touchUpExecute runs what the kernel touch-up found left: OVS bridges
// are NetworkManager's (a difference there is for verification to
// report, not for a second writer of OVSDB to paper over), the
// Open_vSwitch table is written directly (nmstate does so too: no
// profile holds it), everything else goes to the kernel.
func (b *Backend) touchUpExecute(ctx context.Context, p *nmstate.Plan) error {
	if b.ovs == nil {
		return b.kernel.Execute(ctx, p)
	}
	kept := &nmstate.Plan{}
	for _, op := range p.Ops {
		switch op.(type) {
		case nmstate.OVSBridgeSet, nmstate.OVSBridgeDelete:
			continue
		}
		kept.Ops = append(kept.Ops, op)
	}
	if len(kept.Ops) == 0 {
		return nil
	}
	return b.ovs.Execute(ctx, kept)
}

// keepDevice decides under which key devices lists d: OVS bridge and
// port devices by ovsKey (they share the name of the bridge's internal
// interface); for a name two devices share, the ovs-interface rather than
// the tun link the netdev datapath makes for it (NetworkManager shows
// both), and a real device rather than a placeholder.
func keepDevice(out map[string]*device, d *device) (string, bool) {
	if t, ok := ovsDeviceType[d.typ]; ok {
		return ovsKey(t, d.name), true
	}
	prev, ok := out[d.name]
	switch {
	case !ok:
	case prev.typ == devTypeOVSInterface && d.typ != devTypeOVSInterface:
		return "", false
	case d.typ == devTypeOVSInterface:
	case prev.real && !d.real:
		return "", false
	}
	return d.name, true
}

// devTypeOVSInterface is NetworkManager's DeviceType of an ovs-interface.
const devTypeOVSInterface = 24

// closeOVS closes the OVS database connection, if any.
func (b *Backend) closeOVS() error {
	if b.ovs == nil {
		return nil
	}
	return b.ovs.Close()
}

// waitOVSReady waits, after the activations, until the OVS bridges that
// go have left OVSDB and each internal OVS
// interface the apply activated exists in the kernel with the static
// addresses of its profile, up. On the userspace (netdev) datapath
// NetworkManager 1.42 reports an ovs-interface activated before
// ovs-vswitchd has made its tap link; it configures the link's addresses
// and routes once it appears, a moment later: the kernel touch-up and
// verification must not read the node before that. Routes are not waited
// for: ovs-vswitchd may take the new tap down and up once more, which
// drops the routes NetworkManager had put on it (it does not notice);
// the kernel touch-up puts them back.
func (b *Backend) waitOVSReady(ctx context.Context, pp *ProfilePlan) error {
	want := map[string][]string{}
	for _, p := range pp.Profiles {
		if t, _ := p.Settings["connection"]["type"].Value().(string); t != nmOVSInterface || !p.Up {
			continue
		}
		if typ, _ := p.Settings[nmOVSInterface]["type"].Value().(string); typ != "internal" {
			continue
		}
		var addrs []string
		for _, fam := range []string{"ipv4", "ipv6"} {
			if ad, ok := p.Settings[fam]["address-data"].Value().([]map[string]dbus.Variant); ok {
				for _, a := range ad {
					addrs = append(addrs, fmt.Sprintf("%v/%v", a["address"].Value(), a["prefix"].Value()))
				}
			}
		}
		want[p.Name] = addrs
	}
	var gone []string
	if pp.ovs != nil && b.ovs != nil {
		gone = pp.ovs.gone
	}
	if len(want) == 0 && len(gone) == 0 {
		return nil
	}
	var missing string
	for {
		s, err := b.read(ctx)
		if err != nil {
			return err
		}
		missing = ""
		for _, name := range gone {
			// NetworkManager removes a bridge from OVSDB after its
			// profile is gone, asynchronously.
			if s.FindTyped(name, nmstate.TypeOVSBridge) != nil {
				missing = fmt.Sprintf("bridge %s still in OVSDB", name)
			}
		}
		for name, addrs := range want {
			var have map[string]bool
			for _, ifc := range s.Find(name) {
				if ifc.Type.IsUserSpace() {
					continue
				}
				have = map[string]bool{}
				if ifc.State != nmstate.StateUp {
					continue
				}
				have["up"] = true
				for _, c := range []*nmstate.IPConfig{ifc.IPv4, ifc.IPv6} {
					if c != nil {
						for _, a := range c.Address {
							have[fmt.Sprintf("%s/%d", a.IP, a.PrefixLength)] = true
						}
					}
				}
			}
			if have == nil {
				missing = fmt.Sprintf("%s: no kernel link yet", name)
				break
			}
			if !have["up"] {
				missing = fmt.Sprintf("%s: not up yet", name)
				break
			}
			for _, a := range addrs {
				if !have[a] {
					missing = fmt.Sprintf("%s: %s not there yet", name, a)
					break
				}
			}
		}
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for OVS internal interfaces: %w (%s)", ctx.Err(), missing)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ovsReapplied reapplies the profile of an OVS bridge or port that is
// active already (Device.Reapply) instead of activating it again:
// activating a bridge again tears down its ports and their interfaces
// (the node's uplink and address, for br-ex) and races the activations
// queued after it. It reports false when the profile is to be activated
// (not active, or NetworkManager cannot reapply the change).
func (b *Backend) ovsReapplied(ctx context.Context, p PlannedProfile, path dbus.ObjectPath, devs map[string]*device) bool {
	t, _ := p.Settings["connection"]["type"].Value().(string)
	if !isOVSKeyed(t) || p.Path == "" {
		return false
	}
	d := devs[ovsKey(t, p.Name)]
	if d == nil || d.state != devActivated || d.active == "" || d.active == "/" {
		return false
	}
	if d.profile != path {
		return false
	}
	return b.c.call(ctx, d.path, deviceIface+".Reapply", map[string]map[string]dbus.Variant(p.Settings), uint64(0), uint32(0)).Err == nil
}
