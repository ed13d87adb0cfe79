package nm

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// showExtras reports what NetworkManager holds and the kernel does not
// show, from each device's active profile, as nmstate reads it: lldp
// (enabled, and the neighbours NetworkManager's LLDP listener heard),
// 802.1x (secrets included: shown states hide them), wait-ip and the DHCP
// knobs of dynamic families; and from the kernel what the kernel backend
// does not read: link modes and MPTCP endpoints.
func (b *Backend) showExtras(ctx context.Context, s *nmstate.State, profiles []*profile, devs map[string]*device) {
	b.showLinkModes(s)
	b.showMPTCP(s)
	active := b.activeProfiles(devs)
	for _, p := range profiles {
		name, ok := active[p.path]
		if !ok {
			continue
		}
		var ifc *nmstate.Interface
		for _, c := range s.Find(name) {
			if !c.Type.IsUserSpace() {
				ifc = c
			}
		}
		if ifc == nil {
			continue
		}
		conn := p.settings["connection"]
		if ifc.Type == nmstate.TypeEthernet || ifc.Type == nmstate.TypeVeth {
			on := false
			if v, ok := conn["lldp"]; ok {
				l, _ := v.Value().(int32)
				on = l == 1
			}
			ifc.LLDP = &nmstate.LLDP{Enabled: &on}
			if on {
				var raw []map[string]dbus.Variant
				if d := devs[name]; d != nil && b.c.prop(d.path, deviceIface+".LldpNeighbors", &raw) == nil {
					ifc.LLDP.Neighbors = lldpNeighbors(raw)
				}
			}
		}
		if sec, ok := p.settings["802-1x"]; ok {
			ifc.IEEE8021X = b.ieee8021xFromProfile(ctx, p.path, sec)
		}
		if sec, ok := p.settings["macsec"]; ok && ifc.MACsec != nil {
			b.macsecKeysFromProfile(ctx, p.path, sec, ifc.MACsec)
		}
		if ifc.Controller == nil || *ifc.Controller == "" {
			ifc.WaitIP = waitIPFromProfile(p.settings)
		}
		for _, v6 := range []bool{false, true} {
			sec, c := p.settings["ipv4"], ifc.IPv4
			if v6 {
				sec, c = p.settings["ipv6"], ifc.IPv6
			}
			if m, _ := sec["method"].Value().(string); c != nil && (m == "auto" || m == "dhcp") {
				ipExtrasFromProfile(c, sec, v6)
			}
		}
	}
}

// ieee8021xFromProfile is the 802.1x section of a profile, with the
// secrets NetworkManager keeps for it (GetSecrets: the caller is root on
// the node, as nmstate's).
func (b *Backend) ieee8021xFromProfile(ctx context.Context, path dbus.ObjectPath, sec map[string]dbus.Variant) *nmstate.IEEE8021X {
	x := &nmstate.IEEE8021X{}
	str := func(m map[string]dbus.Variant, k string) *string {
		if v, ok := m[k]; ok {
			if s, ok := v.Value().(string); ok {
				return &s
			}
		}
		return nil
	}
	blob := func(k string) *string {
		if v, ok := sec[k]; ok {
			if raw, ok := v.Value().([]byte); ok {
				if p := blobPath(raw); p != "" {
					return &p
				}
			}
		}
		return nil
	}
	x.Identity = str(sec, "identity")
	if v, ok := sec["eap"]; ok {
		x.EAPMethods, _ = v.Value().([]string)
	}
	x.CACert, x.ClientCert, x.PrivateKey = blob("ca-cert"), blob("client-cert"), blob("private-key")
	x.CAPath, x.Phase2Auth = str(sec, "ca-path"), str(sec, "phase2-auth")
	var secrets map[string]map[string]dbus.Variant
	if err := b.c.call(ctx, path, connIface+".GetSecrets", "802-1x").Store(&secrets); err == nil {
		x.Password = str(secrets["802-1x"], "password")
		x.PrivateKeyPassword = str(secrets["802-1x"], "private-key-password")
	}
	return x
}

// chassisIDTypes and portIDTypes are the ID subtype names nmstate prints
// (pkg/lldp has the same for the kernel backend's listener).
var (
	chassisIDTypes = []string{"Reserved", "Chasis compontent", "Interface alias", "Port component", "MAC address", "Network address", "Interface name", "Locally assigned"}
	portIDTypes    = []string{"Reserved", "Interface alias", "Port component", "MAC address", "Network address", "Interface name", "Agent circuit ID", "Locally assigned"}
	capNames       = []string{"Other", "Repeater", "MAC Bridge component", "802.11 Access Point (AP)", "Router", "Telephone", "DOCSIS cable device", "Station Only", "C-VLAN component", "S-VLAN component", "Two-port MAC Relay component"}
)

// lldpNeighbors converts NetworkManager's LldpNeighbors into nmstate's
// neighbour lists (one list of TLV objects each), in the order nmstate's
// NetworkManager plugin emits them.
func lldpNeighbors(raw []map[string]dbus.Variant) []any {
	out := []any{}
	for _, n := range raw {
		u := func(k string) (uint32, bool) {
			v, ok := n[k]
			if !ok {
				return 0, false
			}
			x, ok := v.Value().(uint32)
			return x, ok
		}
		s := func(k string) (string, bool) {
			v, ok := n[k]
			if !ok {
				return "", false
			}
			x, ok := v.Value().(string)
			return x, ok
		}
		var tlvs []any
		if v, ok := s("system-name"); ok {
			tlvs = append(tlvs, map[string]any{"type": num(5), "system-name": v})
		}
		if v, ok := s("system-description"); ok {
			tlvs = append(tlvs, map[string]any{"type": num(6), "system-description": v})
		}
		if v, ok := u("system-capabilities"); ok {
			caps := []any{}
			for bit, c := range capNames {
				if v&(1<<bit) != 0 {
					caps = append(caps, c)
				}
			}
			tlvs = append(tlvs, map[string]any{"type": num(7), "system-capabilities": caps})
		}
		if t, ok := u("chassis-id-type"); ok {
			if id, ok := s("chassis-id"); ok {
				tlvs = append(tlvs, map[string]any{"type": num(1), "chassis-id": id, "chassis-id-type": num(int(t)), "_description": idName(chassisIDTypes, t)})
			}
		}
		if t, ok := u("port-id-type"); ok {
			if id, ok := s("port-id"); ok {
				tlvs = append(tlvs, map[string]any{"type": num(2), "port-id": id, "port-id-type": num(int(t)), "_description": idName(portIDTypes, t)})
			}
		}
		if v, ok := n["ieee-802-1-vlans"]; ok {
			vlans := []any{}
			list, _ := v.Value().([]map[string]dbus.Variant)
			for _, e := range list {
				vid, ok1 := e["vid"].Value().(uint32)
				name, ok2 := e["name"].Value().(string)
				if ok1 && ok2 {
					vlans = append(vlans, map[string]any{"vid": num(int(vid)), "name": name})
				}
			}
			tlvs = append(tlvs, map[string]any{"type": num(127), "oui": "00:80:c2", "subtype": num(3), "ieee-802-1-vlans": vlans})
		}
		if v, ok := n["ieee-802-3-mac-phy-conf"]; ok {
			m, _ := v.Value().(map[string]dbus.Variant)
			a, ok1 := m["autoneg"].Value().(uint32)
			p, ok2 := m["pmd-autoneg-cap"].Value().(uint32)
			o, ok3 := m["operational-mau-type"].Value().(uint32)
			if ok1 && ok2 && ok3 {
				tlvs = append(tlvs, map[string]any{"type": num(127), "oui": "00:12:0f", "subtype": num(1), "ieee-802-3-mac-phy-conf": map[string]any{
					"autoneg": a > 0, "pmd-autoneg-cap": num(int(p)), "operational-mau-type": num(int(o))}})
			}
		}
		if v, ok := n["ieee-802-1-ppvids"]; ok {
			ppvids := []any{}
			list, _ := v.Value().([]map[string]dbus.Variant)
			for _, e := range list {
				if p, ok := e["ppvid"].Value().(uint32); ok {
					ppvids = append(ppvids, num(int(p)))
				}
			}
			tlvs = append(tlvs, map[string]any{"type": num(127), "oui": "00:80:c2", "subtype": num(2), "ieee-802-1-ppvids": ppvids})
		}
		if v, ok := n["management-addresses"]; ok {
			addrs := []any{}
			list, _ := v.Value().([]map[string]dbus.Variant)
			for _, e := range list {
				if a, ok := mgmtAddr(e); ok {
					addrs = append(addrs, a)
				}
			}
			tlvs = append(tlvs, map[string]any{"type": num(8), "management-addresses": addrs})
		}
		if v, ok := u("ieee-802-3-max-frame-size"); ok {
			tlvs = append(tlvs, map[string]any{"type": num(127), "oui": "00:12:0f", "subtype": num(4), "ieee-802-3-max-frame-size": num(int(v))})
		}
		if len(tlvs) > 0 {
			out = append(out, tlvs)
		}
	}
	return out
}

// mgmtAddr is one management address: IANA family 1 IPv4, 2 IPv6, 6 MAC.
func mgmtAddr(e map[string]dbus.Variant) (map[string]any, bool) {
	fam, ok1 := e["address-subtype"].Value().(uint32)
	raw, ok2 := e["address"].Value().([]byte)
	it, ok3 := e["interface-number-subtype"].Value().(uint32)
	in, ok4 := e["interface-number"].Value().(uint32)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, false
	}
	out := map[string]any{"interface-number-subtype": num(int(it)), "interface-number": num(int(in))}
	switch a, ok := netip.AddrFromSlice(raw); {
	case fam == 1 && ok && a.Is4():
		out["address"], out["address-subtype"] = a.String(), "IPv4"
	case fam == 2 && ok && a.Is6():
		out["address"], out["address-subtype"] = a.String(), "IPv6"
	case fam == 6 && len(raw) == 6:
		out["address"], out["address-subtype"] = strings.ToUpper(net.HardwareAddr(raw).String()), "MAC"
	default:
		return nil, false
	}
	return out, true
}

func idName(names []string, i uint32) string {
	if int(i) < len(names) {
		return names[i]
	}
	return "Reserved"
}

// num is a number as opaque values hold them.
func num(i int) json.Number { return json.Number(strconv.Itoa(i)) }

// dropProfileOnly removes from a touch-up's desired state what only
// NetworkManager's profiles hold (the kernel read shows none of it, and
// the kernel backend would try to configure it itself): lldp, 802.1x,
// mptcp, wait-ip, the DHCP knobs and the ethernet link modes.
func dropProfileOnly(s *nmstate.State) {
	for i := range s.Interfaces {
		ifc := &s.Interfaces[i]
		ifc.LLDP, ifc.IEEE8021X, ifc.MPTCP, ifc.WaitIP = nil, nil, nil, nil
		if m := ifc.MACsec; m != nil {
			// MKA is NetworkManager's wpa_supplicant's: the kernel read
			// has no keys (they live in no supplicant directory of the
			// kernel backend), and a touch-up would replace NetworkManager's
			// link by one without MKA to add them. Port 0 is outside
			// NetworkManager's macsec.port range (1..65534): the profile
			// leaves it to NetworkManager's default, and a touch-up must
			// not re-create the link for it either.
			m.MKACAK, m.MKACKN = nil, nil
			if m.Port != nil && *m.Port == 0 {
				m.Port = nil
			}
		}
		if e := ifc.Ethernet; e != nil {
			// Link modes are NetworkManager's (the kernel backend sets none).
			e.AutoNegotiation, e.Speed, e.Duplex = nil, nil, nil
		}
		for _, c := range []*nmstate.IPConfig{ifc.IPv4, ifc.IPv6} {
			if c != nil {
				c.DHCPClientID, c.DHCPDUID, c.Token = nil, nil, nil
				c.DHCPSendHostname, c.DHCPCustomHostname = nil, nil
				for j := range c.Address {
					c.Address[j].MPTCPFlags = nil
				}
			}
		}
	}
}
