package lldp

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tlv encodes one TLV.
func tlv(typ int, v ...byte) []byte {
	out := binary.BigEndian.AppendUint16(nil, uint16(typ<<9|len(v)))
	return append(out, v...)
}

func n(i int) json.Number { return json.Number(strconv.Itoa(i)) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	chassis = tlv(1, 4, 0x02, 0x6b, 0x6e, 0x6d, 0x00, 0x01)
	port    = tlv(2, append([]byte{5}, "sw-eth1"...)...)
	ttl     = tlv(3, 0, 120)
)

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name    string
		pdu     []byte
		want    Neighbor
		wantErr string
	}{{
		name: "switch port",
		pdu: cat(chassis, port, ttl,
			tlv(5, []byte("switch")...), tlv(6, []byte("Debian lldpd")...),
			tlv(7, 0, 0x14, 0, 0x04), // capable: bridge, router; enabled: bridge
			tlv(8, 5, 1, 192, 0, 2, 1, 2, 0, 0, 0, 7, 0),
			tlv(127, 0x00, 0x80, 0xc2, 3, 0, 100, 4, 'b', 'l', 'u', 'e'),
			tlv(127, 0x00, 0x80, 0xc2, 3, 0, 200, 3, 'r', 'e', 'd'),
			tlv(127, 0x00, 0x12, 0x0f, 4, 0x05, 0xee),
			tlv(127, 0x00, 0x12, 0x0f, 1, 0x03, 0x6c, 0x01, 0x00, 0x1e),
			tlv(127, 0x12, 0x34, 0x56, 9, 1), // unknown organisation: skipped
			tlv(0)),
		want: Neighbor{ChassisID: "02:6B:6E:6D:00:01", PortID: "sw-eth1", TTL: 120, TLVs: []any{
			map[string]any{"type": n(1), "chassis-id": "02:6B:6E:6D:00:01", "chassis-id-type": n(4), "_description": "MAC address"},
			map[string]any{"type": n(2), "port-id": "sw-eth1", "port-id-type": n(5), "_description": "Interface name"},
			map[string]any{"type": n(5), "system-name": "switch"},
			map[string]any{"type": n(6), "system-description": "Debian lldpd"},
			map[string]any{"type": n(7), "system-capabilities": []any{"MAC Bridge component"}},
			map[string]any{"type": n(8), "management-addresses": []any{map[string]any{"address": "192.0.2.1", "address-subtype": "IPv4", "interface-number": n(7), "interface-number-subtype": n(2)}}},
			map[string]any{"type": n(127), "oui": "00:80:c2", "subtype": n(3), "ieee-802-1-vlans": []any{
				map[string]any{"vid": n(100), "name": "blue"}, map[string]any{"vid": n(200), "name": "red"}}},
			map[string]any{"type": n(127), "oui": "00:12:0f", "subtype": n(4), "ieee-802-3-max-frame-size": n(1518)},
			map[string]any{"type": n(127), "oui": "00:12:0f", "subtype": n(1), "ieee-802-3-mac-phy-conf": map[string]any{"autoneg": true, "pmd-autoneg-cap": n(0x6c01), "operational-mau-type": n(30)}},
		}},
	}, {
		name:    "port ID first",
		pdu:     cat(port, chassis, ttl),
		wantErr: "the first three must be chassis ID, port ID and TTL",
	}, {
		name:    "truncated TLV",
		pdu:     cat(chassis, port, ttl, tlv(5, []byte("switch")...)[:5]),
		wantErr: "bytes, 3 left",
	}, {
		name:    "no TTL",
		pdu:     cat(chassis, port),
		wantErr: "truncated before the mandatory TLVs",
	}} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decode(c.pdu)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
