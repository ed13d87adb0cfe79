package nm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Open vSwitch through NetworkManager, as nmstate drives it: an ovs-bridge
// becomes an `ovs-bridge` profile, each of its ports an `ovs-port`
// profile (a bond's settings on the port, several interfaces under it),
// and each interface of a port a profile attached to that port
// (slave-type ovs-port): an `ovs-interface` profile for internal and patch
// interfaces, the interface's own (ethernet, ...) profile for a system
// one. NetworkManager writes the OVS database itself through its OVS
// device plugin; what it has no profile for (the Open_vSwitch table:
// ovs-db and ovn) goes to OVSDB directly, as nmstate does.
//
// Bridge, port and interface may all carry the same name (OpenShift's
// br-ex): the profiles are told apart by type, and their ids carry
// nmstate's suffixes (-br, -port, -if). Ports are attached to their
// bridge, and interfaces to their port, by UUID, so NetworkManager never
// has to resolve a name that three devices share. Bridge and port
// profiles do not autoconnect their ports: the apply activates each
// profile itself, in order, and a port activated by its controller too
// would be activated twice (the second activation tears down the first,
// midway through the interface's DHCP or addresses); at boot every
// profile autoconnects on its own.

// NetworkManager connection types of OVS.
const (
	nmOVSBridge    = "ovs-bridge"
	nmOVSPort      = "ovs-port"
	nmOVSInterface = "ovs-interface"
)

// ovsKey is how ovs-bridge and ovs-port profiles (and devices) are keyed
// among the existing ones: by type and name, since they share names with
// each other and with the bridge's internal interface.
func ovsKey(nmType, name string) string { return nmType + ":" + name }

// isOVSKeyed says whether profiles and devices of a NetworkManager type
// are keyed by ovsKey rather than by interface name.
func isOVSKeyed(nmType string) bool { return nmType == nmOVSBridge || nmType == nmOVSPort }

// ovsDeviceType maps NetworkManager's DeviceType of OVS bridge and port
// devices to their connection type (24, ovs-interface, is keyed by name).
var ovsDeviceType = map[uint32]string{25: nmOVSPort, 26: nmOVSBridge}

// ovsPlan is the OVS part of a ProfilePlan.
type ovsPlan struct {
	// profiles are the bridge and port profiles, each bridge followed by
	// its ports: saved and activated before any interface attached to a
	// port.
	profiles []PlannedProfile
	// portOf maps an interface to the UUID of the ovs-port profile it
	// attaches to.
	portOf map[string]string
	// members are the interfaces of the bridges' ports (they need a
	// profile attached to their port even when the apply does not name
	// them).
	members []string
	// gone are the bridges that go absent or down.
	gone []string
	// localMAC names the bridges whose local interface (the internal
	// interface named like the bridge: OpenShift's br-ex) asks for a MAC:
	// it goes on the bridge profile too (NetworkManager writes a bridge's
	// cloned MAC to its other_config:hwaddr, where ovs-vswitchd takes the
	// local port's MAC from, as the OVS backend writes it), and stays on
	// the interface's, as configure-ovs has it, except on the userspace
	// datapath (ovsLocalMAC).
	localMAC map[string]bool
}

// ovsProfileID is nmstate's id of an OVS profile without profile-name.
func ovsProfileID(nmType, name string) string {
	switch nmType {
	case nmOVSBridge:
		return name + "-br"
	case nmOVSPort:
		return name + "-port"
	case nmOVSInterface:
		return name + "-if"
	}
	return name
}

// planOVS builds the bridge and port profiles of the merged state's OVS
// bridges. existing is keyed as ExecuteMerged keys it (ovsKey for bridges
// and ports); newUUID gives UUIDs to new profiles.
func planOVS(m *nmstate.Merged, existing existingProfiles, newUUID func(*nmstate.Interface) string) (*ovsPlan, error) {
	op := &ovsPlan{portOf: map[string]string{}, localMAC: map[string]bool{}}
	uuidOf := func(nmType, name string) (string, dbus.ObjectPath) {
		if p := existing[ovsKey(nmType, name)]; p != nil {
			return p.str("connection", "uuid"), p.path
		}
		return newUUID(&nmstate.Interface{Name: name, Type: nmstate.InterfaceType(nmType)}), ""
	}
	for i := range m.Interfaces {
		br := &m.Interfaces[i]
		if br.Type != nmstate.TypeOVSBridge {
			continue
		}
		switch br.State {
		case nmstate.StateAbsent, nmstate.StateDown:
			op.gone = append(op.gone, br.Name)
			continue
		case nmstate.StateIgnore:
			continue
		}
		uuid, path := uuidOf(nmOVSBridge, br.Name)
		s, err := ovsBridgeProfile(br, uuid)
		if err != nil {
			return nil, err
		}
		if local := m.Interface(br.Name, nmstate.TypeOVSInterface); local != nil && local.MACAddress != nil && local.State != nmstate.StateAbsent {
			s["802-3-ethernet"] = map[string]dbus.Variant{"assigned-mac-address": dbus.MakeVariant(strings.ToUpper(string(*local.MACAddress)))}
			op.localMAC[br.Name] = true
		}
		op.profiles = append(op.profiles, PlannedProfile{Name: br.Name, Settings: s, Path: path, Up: true})
		if br.OVSBridge == nil {
			continue
		}
		for j := range br.OVSBridge.Port {
			port := &br.OVSBridge.Port[j]
			puuid, ppath := uuidOf(nmOVSPort, port.Name)
			s, err := ovsPortProfile(br.Name, uuid, port, puuid)
			if err != nil {
				return nil, fmt.Errorf("interfaces[name=%s].bridge.port[name=%s]: %w", br.Name, port.Name, err)
			}
			op.profiles = append(op.profiles, PlannedProfile{Name: port.Name, Settings: s, Path: ppath, Up: true})
			members := []string{port.Name}
			if la := port.LinkAggregation; la != nil {
				members = members[:0]
				for _, bp := range la.Port {
					members = append(members, bp.Name)
				}
			}
			for _, name := range members {
				op.portOf[name] = puuid
				op.members = append(op.members, name)
			}
		}
	}
	return op, nil
}

// ovsBridgeProfile is the ovs-bridge profile of br.
func ovsBridgeProfile(br *nmstate.Interface, uuid string) (Settings, error) {
	id := ovsProfileID(nmOVSBridge, br.Name)
	if br.ProfileName != nil && *br.ProfileName != "" {
		id = *br.ProfileName
	}
	s := Settings{"connection": {
		"id":             dbus.MakeVariant(id),
		"uuid":           dbus.MakeVariant(uuid),
		"type":           dbus.MakeVariant(nmOVSBridge),
		"interface-name": dbus.MakeVariant(br.Name),
		"autoconnect":    dbus.MakeVariant(true),
	}}
	sec := map[string]dbus.Variant{}
	if br.OVSBridge != nil && br.OVSBridge.Options != nil {
		o := br.OVSBridge.Options
		if o.STP != nil && o.STP.Enabled != nil {
			sec["stp-enable"] = dbus.MakeVariant(*o.STP.Enabled)
		}
		if o.STP != nil && (o.STP.ForwardDelay != nil || o.STP.HelloTime != nil || o.STP.MaxAge != nil || o.STP.Priority != nil) {
			return nil, &nmstate.Error{Kind: nmstate.NotSupported, Path: nmstate.Path(fmt.Sprintf("interfaces[name=%s].bridge.options.stp", br.Name)),
				Detail: "NetworkManager's ovs-bridge profile has no STP timers or priority (only stp-enable)"}
		}
		if o.RSTP != nil {
			sec["rstp-enable"] = dbus.MakeVariant(*o.RSTP)
		}
		if o.McastSnoopingEnable != nil {
			sec["mcast-snooping-enable"] = dbus.MakeVariant(*o.McastSnoopingEnable)
		}
		if o.FailMode != nil && *o.FailMode != "" {
			sec["fail-mode"] = dbus.MakeVariant(*o.FailMode)
		}
		if o.Datapath != nil && *o.Datapath != "" {
			sec["datapath-type"] = dbus.MakeVariant(*o.Datapath)
		}
	}
	s[nmOVSBridge] = sec
	ovsDBSettings(s, br.OVSDB)
	if br.Description != nil && *br.Description != "" {
		// An ovs-bridge has no kernel link to carry it: it lives in the
		// Bridge row's external_ids, where the OVS backend keeps it and
		// reads it back, written by NetworkManager from the profile.
		data := map[string]string{}
		if sec, ok := s["ovs-external-ids"]; ok {
			data, _ = sec["data"].Value().(map[string]string)
		}
		data[ovsDescriptionKey] = *br.Description
		s["ovs-external-ids"] = map[string]dbus.Variant{"data": dbus.MakeVariant(data)}
	}
	return s, nil
}

// ovsDescriptionKey is the Bridge external_ids key of an ovs-bridge's
// description (pkg/backend/ovs's descriptionKey: its Show reports it).
const ovsDescriptionKey = "knmstate-description"

// ovsPortProfile is the ovs-port profile of one port of bridge brName
// (profile brUUID): its VLAN, and for a bond its mode, LACP and delays.
func ovsPortProfile(brName, brUUID string, port *nmstate.OVSBridgePort, uuid string) (Settings, error) {
	s := Settings{"connection": {
		"id":             dbus.MakeVariant(ovsProfileID(nmOVSPort, port.Name)),
		"uuid":           dbus.MakeVariant(uuid),
		"type":           dbus.MakeVariant(nmOVSPort),
		"interface-name": dbus.MakeVariant(port.Name),
		"autoconnect":    dbus.MakeVariant(true),
		"master":         dbus.MakeVariant(brUUID),
		"slave-type":     dbus.MakeVariant(nmOVSBridge),
	}}
	sec := map[string]dbus.Variant{}
	if v := port.VLAN; v != nil && !v.IsEmpty() {
		if v.Tag != nil {
			sec["tag"] = dbus.MakeVariant(uint32(*v.Tag))
		}
		if v.Mode != nil {
			mode := string(*v.Mode)
			if *v.Mode == "trunk" && v.EnableNative != nil && *v.EnableNative {
				// nmstate's trunk with a native VLAN is OVS's
				// native-untagged.
				mode = "native-untagged"
			}
			sec["vlan-mode"] = dbus.MakeVariant(mode)
		}
		var trunks []map[string]dbus.Variant
		for _, t := range v.TrunkTags {
			lo, hi := uint64(0), uint64(0)
			switch {
			case t.ID != nil:
				lo, hi = uint64(*t.ID), uint64(*t.ID)
			case t.IDRange != nil:
				lo, hi = uint64(t.IDRange.Min), uint64(t.IDRange.Max)
			default:
				continue
			}
			trunks = append(trunks, map[string]dbus.Variant{"start": dbus.MakeVariant(lo), "end": dbus.MakeVariant(hi)})
		}
		if len(trunks) > 0 {
			sort.SliceStable(trunks, func(i, j int) bool { return trunks[i]["start"].Value().(uint64) < trunks[j]["start"].Value().(uint64) })
			sec["trunks"] = dbus.MakeVariant(trunks)
		}
	}
	if la := port.LinkAggregation; la != nil {
		if la.Mode != nil {
			// nmstate's mapping: lacp is OVS's default bond mode with LACP
			// active; balance-tcp needs LACP too.
			switch *la.Mode {
			case "lacp":
				sec["lacp"] = dbus.MakeVariant("active")
			case "balance-tcp":
				sec["lacp"] = dbus.MakeVariant("active")
				sec["bond-mode"] = dbus.MakeVariant(string(*la.Mode))
			case "active-backup", "balance-slb":
				sec["lacp"] = dbus.MakeVariant("off")
				sec["bond-mode"] = dbus.MakeVariant(string(*la.Mode))
			default:
				return nil, &nmstate.Error{Kind: nmstate.InvalidArgument, Path: "link-aggregation.mode", Detail: fmt.Sprintf("OVS bond mode %s", *la.Mode)}
			}
		}
		if la.BondUpdelay != nil {
			sec["bond-updelay"] = dbus.MakeVariant(*la.BondUpdelay)
		}
		if la.BondDowndelay != nil {
			sec["bond-downdelay"] = dbus.MakeVariant(*la.BondDowndelay)
		}
		ovsDBSettings(s, la.OVSDB)
	}
	s[nmOVSPort] = sec
	return s, nil
}

// ovsInterfaceSettings fills the ovs-interface (and ovs-patch) settings of
// an internal or patch interface, and the MTU and MAC an internal one
// asks for (NetworkManager writes them to its Interface row: mtu_request,
// and the bridge's hwaddr for the bridge's own local interface).
func ovsInterfaceSettings(s Settings, ifc *nmstate.Interface) error {
	if ifc.DPDK != nil {
		return &nmstate.Error{Kind: nmstate.NotSupported, Path: "dpdk", Detail: "DPDK interfaces are not configured through NetworkManager by knmstate"}
	}
	typ := "internal"
	if ifc.Patch != nil {
		typ = "patch"
		s["ovs-patch"] = map[string]dbus.Variant{"peer": dbus.MakeVariant(ifc.Patch.Peer)}
	}
	s[nmOVSInterface] = map[string]dbus.Variant{"type": dbus.MakeVariant(typ)}
	if typ == "internal" {
		wired := map[string]dbus.Variant{}
		if ifc.MTU != nil {
			wired["mtu"] = dbus.MakeVariant(uint32(*ifc.MTU))
		}
		if ifc.MACAddress != nil {
			wired["assigned-mac-address"] = dbus.MakeVariant(strings.ToUpper(string(*ifc.MACAddress)))
		}
		if len(wired) > 0 {
			s["802-3-ethernet"] = wired
		}
	}
	return nil
}

// ovsAttach makes the profile of an interface of an OVS port a port of
// that port profile (by UUID). An interface whose bridge the apply does
// not touch keeps the port its existing profile names (a revert or a
// change of its IP only); one whose bridge the apply changes without it
// (or removes) is detached.
func ovsAttach(m *nmstate.Merged, op *ovsPlan, in *ProfileInput, existing *profile) {
	name := in.Iface.Name
	if u, ok := op.portOf[name]; ok {
		in.Controller, in.ControllerType, in.BridgePort = u, nmstate.TypeOVSBridge, nil
		return
	}
	keep := func() bool {
		if existing == nil || existing.str("connection", "slave-type") != nmOVSPort || existing.str("connection", "master") == "" {
			return false
		}
		in.Controller, in.ControllerType, in.BridgePort = existing.str("connection", "master"), nmstate.TypeOVSBridge, nil
		return true
	}
	ctl := in.Controller
	if in.Iface.Type == nmstate.TypeOVSInterface && ctl == "" {
		keep()
		return
	}
	if ctl == "" {
		return
	}
	if m.Interface(ctl, nmstate.TypeOVSBridge) != nil {
		in.Controller, in.ControllerType, in.BridgePort = "", "", nil
		return
	}
	if m.Current != nil && m.Current.FindTyped(ctl, nmstate.TypeOVSBridge) != nil && !keep() {
		in.Controller, in.ControllerType, in.BridgePort = "", "", nil
	}
}

// ovsLocalMAC, for a bridge on the userspace (netdev) datapath, leaves
// the MAC of its local interface to the bridge profile alone: cloned on
// the interface, NetworkManager also sets it on the link, a tap
// ovs-vswitchd owns, which it cannot: it takes the link down and up
// again, and the link loses its routes. The tap may then still carry
// its first MAC when the DHCP client starts, so a DHCPv4 client-id made
// of the asked-for MAC (what the client sends by default, "01:" and the
// MAC) keeps the lease the same.
func ovsLocalMAC(s Settings) {
	wired := s["802-3-ethernet"]
	if wired == nil {
		return
	}
	mac, _ := wired["assigned-mac-address"].Value().(string)
	delete(wired, "assigned-mac-address")
	if len(wired) == 0 {
		delete(s, "802-3-ethernet")
	}
	if mac == "" || s["ipv4"] == nil {
		return
	}
	if m, _ := s["ipv4"]["method"].Value().(string); m == "auto" {
		// "mac" (nmstate's default, profile_ipauto.go) would be the tap's
		// own MAC here, not the asked-for one.
		if id, _ := s["ipv4"]["dhcp-client-id"].Value().(string); id == "" || id == "mac" {
			s["ipv4"]["dhcp-client-id"] = dbus.MakeVariant("01:" + strings.ToLower(mac))
		}
	}
}

// ovsDBSettings puts an interface's ovs-db (external_ids, other_config)
// into the profile's ovs-external-ids and ovs-other-config; removed keys
// (nil values) are left out, as they are of the row NetworkManager
// writes.
func ovsDBSettings(s Settings, db *nmstate.OVSDBIface) {
	if db == nil {
		return
	}
	for _, m := range []struct {
		sec string
		in  map[string]*string
	}{{"ovs-external-ids", db.ExternalIDs}, {"ovs-other-config", db.OtherConfig}} {
		data := map[string]string{}
		for k, v := range m.in {
			if v != nil {
				data[k] = *v
			}
		}
		if len(data) > 0 {
			s[m.sec] = map[string]dbus.Variant{"data": dbus.MakeVariant(data)}
		}
	}
}

// hasOVS says whether the merged state asks for anything of Open vSwitch:
// OVS interfaces up, or the Open_vSwitch table (ovs-db, ovn).
func hasOVS(m *nmstate.Merged) bool {
	for i := range m.Interfaces {
		ifc := &m.Interfaces[i]
		if (ifc.Type == nmstate.TypeOVSBridge || ifc.Type == nmstate.TypeOVSInterface) && ifc.State != nmstate.StateAbsent && ifc.State != nmstate.StateDown {
			return true
		}
	}
	return m.Desired != nil && (m.Desired.OVSDB != nil || m.Desired.OVN != nil)
}

// keyfileOVSData renders an ovs-external-ids / ovs-other-config data map
// as keyfile lines (data.KEY=VALUE, sorted).
func keyfileOVSData(b *strings.Builder, v any) {
	data, _ := v.(map[string]string)
	for _, k := range sortedKeys(data) {
		fmt.Fprintf(b, "data.%s=%s\n", k, data[k])
	}
}

// keyfileTrunks renders ovs-port.trunks as the keyfile's list of VLAN ids
// and ranges ("10,20-30").
func keyfileTrunks(v any) string {
	ranges, _ := v.([]map[string]dbus.Variant)
	parts := make([]string, 0, len(ranges))
	for _, r := range ranges {
		lo, _ := r["start"].Value().(uint64)
		hi, _ := r["end"].Value().(uint64)
		if lo == hi {
			parts = append(parts, fmt.Sprint(lo))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", lo, hi))
		}
	}
	return strings.Join(parts, ",")
}

// ovsPortNames lists the names of the ports and bond members of an OVS
// bridge (gc assumes the system ones are NICs).
func ovsPortNames(ifc *nmstate.Interface) []string {
	if ifc.Type != nmstate.TypeOVSBridge || ifc.OVSBridge == nil {
		return nil
	}
	var out []string
	for _, p := range ifc.OVSBridge.Port {
		if p.LinkAggregation != nil {
			for _, bp := range p.LinkAggregation.Port {
				out = append(out, bp.Name)
			}
			continue
		}
		out = append(out, p.Name)
	}
	return out
}
