// Package lldp decodes LLDP data units (IEEE 802.1AB) into the neighbour
// form nmstate reports under `lldp.neighbors`: one list of TLV objects per
// neighbour, each with its TLV `type` and nmstate's keys (chassis-id,
// port-id, system-name, system-capabilities, management-addresses, and the
// IEEE 802.1/802.3 organisation TLVs nmstate knows).
//
// It is pure: bytes in, values out. Receiving frames is the node
// runtime's (pkg/noded), storing and reporting them the kernel backend's.
package lldp

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// EtherType is LLDP's ethertype.
const EtherType = 0x88cc

// TLV types (IEEE 802.1AB 8.4).
const (
	tlvEnd          = 0
	tlvChassisID    = 1
	tlvPortID       = 2
	tlvTTL          = 3
	tlvPortDesc     = 4
	tlvSystemName   = 5
	tlvSystemDesc   = 6
	tlvCapabilities = 7
	tlvMgmtAddress  = 8
	tlvOrgSpecific  = 127
)

// Neighbor is one decoded LLDPDU.
type Neighbor struct {
	// ChassisID and PortID identify the neighbour (its MSAP).
	ChassisID, PortID string
	// TTL is how long, in seconds, the information stays valid; 0 means
	// the neighbour is leaving (shutdown LLDPDU).
	TTL uint16
	// TLVs are nmstate's TLV objects, in the order received.
	TLVs []any
}

// Key identifies the neighbour across its updates.
func (n Neighbor) Key() string { return n.ChassisID + "\x00" + n.PortID }

var chassisIDTypes = []string{"Reserved", "Chasis compontent", "Interface alias", "Port component", "MAC address", "Network address", "Interface name", "Locally assigned"}

var portIDTypes = []string{"Reserved", "Interface alias", "Port component", "MAC address", "Network address", "Interface name", "Agent circuit ID", "Locally assigned"}

// capabilityNames are the system capability bits, as nmstate names them.
var capabilityNames = []string{"Other", "Repeater", "MAC Bridge component", "802.11 Access Point (AP)", "Router", "Telephone", "DOCSIS cable device", "Station Only", "C-VLAN component", "S-VLAN component", "Two-port MAC Relay component"}

// Decode decodes an LLDPDU (the frame's payload after the ethertype).
// The mandatory chassis ID, port ID and TTL TLVs must come first, in that
// order; unknown TLVs are skipped.
func Decode(b []byte) (Neighbor, error) {
	n, err := decode(b)
	n.TLVs = merge(n.TLVs)
	return n, err
}

func decode(b []byte) (Neighbor, error) {
	var n Neighbor
	for i := 0; ; i++ {
		if len(b) < 2 {
			if i < 3 {
				return n, errors.New("lldp: truncated before the mandatory TLVs")
			}
			return n, nil // no End TLV: tolerated
		}
		hdr := binary.BigEndian.Uint16(b)
		typ, length := int(hdr>>9), int(hdr&0x1ff)
		if len(b) < 2+length {
			return n, fmt.Errorf("lldp: TLV %d of type %d is %d bytes, %d left", i, typ, length, len(b)-2)
		}
		v := b[2 : 2+length]
		b = b[2+length:]
		if i < 3 && typ != []int{tlvChassisID, tlvPortID, tlvTTL}[i] {
			return n, fmt.Errorf("lldp: TLV %d has type %d; the first three must be chassis ID, port ID and TTL", i, typ)
		}
		switch typ {
		case tlvEnd:
			return n, nil
		case tlvChassisID, tlvPortID:
			if len(v) < 2 {
				return n, fmt.Errorf("lldp: ID TLV of type %d is too short", typ)
			}
			sub, id := int(v[0]), idText(typ, int(v[0]), v[1:])
			if typ == tlvChassisID {
				n.ChassisID = id
				n.TLVs = append(n.TLVs, map[string]any{"type": num(typ), "chassis-id": id, "chassis-id-type": num(sub), "_description": name(chassisIDTypes, sub)})
			} else {
				n.PortID = id
				n.TLVs = append(n.TLVs, map[string]any{"type": num(typ), "port-id": id, "port-id-type": num(sub), "_description": name(portIDTypes, sub)})
			}
		case tlvTTL:
			if len(v) < 2 {
				return n, errors.New("lldp: TTL TLV is too short")
			}
			n.TTL = binary.BigEndian.Uint16(v)
		case tlvSystemName:
			n.TLVs = append(n.TLVs, map[string]any{"type": num(typ), "system-name": string(v)})
		case tlvSystemDesc:
			n.TLVs = append(n.TLVs, map[string]any{"type": num(typ), "system-description": string(v)})
		case tlvCapabilities:
			if len(v) >= 4 {
				// nmstate lists the enabled capabilities.
				enabled := binary.BigEndian.Uint16(v[2:])
				caps := []any{}
				for bit, c := range capabilityNames {
					if enabled&(1<<bit) != 0 {
						caps = append(caps, c)
					}
				}
				n.TLVs = append(n.TLVs, map[string]any{"type": num(typ), "system-capabilities": caps})
			}
		case tlvMgmtAddress:
			if a, ok := mgmtAddress(v); ok {
				n.TLVs = append(n.TLVs, map[string]any{"type": num(typ), "management-addresses": []any{a}})
			}
		case tlvOrgSpecific:
			if t, ok := orgTLV(v); ok {
				n.TLVs = append(n.TLVs, t)
			}
		}
	}
}

// num is a number as nmstate's opaque values hold them (canonical text).
func num(i int) json.Number { return json.Number(strconv.Itoa(i)) }

func name(names []string, i int) string {
	if i < len(names) {
		return names[i]
	}
	return "Reserved"
}

// idText renders a chassis or port ID: MAC addresses as nmstate prints
// them (upper case), network addresses as IPs, names as text.
func idText(typ, sub int, v []byte) string {
	macSub, netSub := 4, 5
	if typ == tlvPortID {
		macSub, netSub = 3, 4
	}
	switch {
	case sub == macSub && len(v) == 6:
		return strings.ToUpper(net.HardwareAddr(v).String())
	case sub == netSub && len(v) >= 1:
		if a, ok := ipOf(int(v[0]), v[1:]); ok {
			return a
		}
	}
	return string(v)
}

// ipOf renders an address of an IANA address family (1 IPv4, 2 IPv6).
func ipOf(family int, v []byte) (string, bool) {
	if a, ok := netip.AddrFromSlice(v); ok && (family == 1 && a.Is4() || family == 2 && a.Is6()) {
		return a.String(), true
	}
	return "", false
}

// mgmtAddress decodes a management address TLV.
func mgmtAddress(v []byte) (map[string]any, bool) {
	if len(v) < 2 {
		return nil, false
	}
	alen := int(v[0]) // subtype + address
	if alen < 1 || len(v) < 1+alen+5 {
		return nil, false
	}
	family, addr := int(v[1]), v[2:1+alen]
	rest := v[1+alen:]
	out := map[string]any{"interface-number-subtype": num(int(rest[0])), "interface-number": num(int(binary.BigEndian.Uint32(rest[1:5])))}
	switch family {
	case 1, 2:
		a, ok := ipOf(family, addr)
		if !ok {
			return nil, false
		}
		out["address"], out["address-subtype"] = a, map[int]string{1: "IPv4", 2: "IPv6"}[family]
	case 6:
		out["address"], out["address-subtype"] = strings.ToUpper(net.HardwareAddr(addr).String()), "MAC"
	default:
		return nil, false
	}
	return out, true
}

// orgTLV decodes the organisation-specific TLVs nmstate reports: IEEE
// 802.1 port VLAN IDs (subtype 2) and VLAN names (3), IEEE 802.3 MAC/PHY
// configuration (1) and maximum frame size (4).
func orgTLV(v []byte) (map[string]any, bool) {
	if len(v) < 4 {
		return nil, false
	}
	oui, sub, d := net.HardwareAddr(v[:3]).String(), int(v[3]), v[4:]
	t := map[string]any{"type": num(tlvOrgSpecific), "oui": oui, "subtype": num(sub)}
	switch {
	case oui == "00:80:c2" && sub == 2 && len(d) >= 3:
		t["ieee-802-1-ppvids"] = []any{num(int(binary.BigEndian.Uint16(d[1:3])))}
	case oui == "00:80:c2" && sub == 3 && len(d) >= 3:
		nameLen := int(d[2])
		if len(d) < 3+nameLen {
			return nil, false
		}
		t["ieee-802-1-vlans"] = []any{map[string]any{"vid": num(int(binary.BigEndian.Uint16(d))), "name": string(d[3 : 3+nameLen])}}
	case oui == "00:12:0f" && sub == 1 && len(d) >= 5:
		t["ieee-802-3-mac-phy-conf"] = map[string]any{
			"autoneg": d[0]&0x02 != 0, "pmd-autoneg-cap": num(int(binary.BigEndian.Uint16(d[1:3]))),
			"operational-mau-type": num(int(binary.BigEndian.Uint16(d[3:5]))),
		}
	case oui == "00:12:0f" && sub == 4 && len(d) >= 2:
		t["ieee-802-3-max-frame-size"] = num(int(binary.BigEndian.Uint16(d)))
	default:
		return nil, false
	}
	return t, true
}

// merge gathers repeated VLAN-name, port-VLAN and management-address
// TLVs of one neighbour into one TLV each, as nmstate lists them.
func merge(tlvs []any) []any {
	var out []any
	idx := map[string]int{}
	for _, t := range tlvs {
		m, ok := t.(map[string]any)
		if !ok {
			out = append(out, t)
			continue
		}
		key := ""
		switch {
		case m["management-addresses"] != nil:
			key = "management-addresses"
		case m["ieee-802-1-vlans"] != nil:
			key = "ieee-802-1-vlans"
		case m["ieee-802-1-ppvids"] != nil:
			key = "ieee-802-1-ppvids"
		}
		if i, seen := idx[key]; key != "" && seen {
			prev := out[i].(map[string]any)
			prev[key] = append(prev[key].([]any), m[key].([]any)...)
			continue
		}
		if key != "" {
			idx[key] = len(out)
		}
		out = append(out, m)
	}
	return out
}
