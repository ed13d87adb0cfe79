package dhcp

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net"
	"strings"
)

// IAID derives the identity association identifier of an interface from
// its name, so it stays the same across restarts and MAC changes.
func IAID(ifname string) [4]byte {
	h := fnv.New32a()
	h.Write([]byte(ifname))
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], h.Sum32())
	return b
}

// duidLL is a DUID-LL (type 3) for an Ethernet address (RFC 8415 11.4).
func duidLL(mac net.HardwareAddr) []byte {
	return append([]byte{0, 3, 0, 1}, mac...)
}

// ClientID4 encodes DHCPv4 option 61 from nmstate's dhcp-client-id value:
//   - "" or "ll": hardware type 1 followed by the MAC;
//   - "iaid+duid": RFC 4361, 0xff, the IAID, a DUID-LL;
//   - colon-separated hex bytes ("01:52:54:00:12:34:56"): those bytes;
//   - anything else: type 0 followed by the text.
func ClientID4(value, ifname string, mac net.HardwareAddr) ([]byte, error) {
	switch value {
	case "", "ll":
		if len(mac) == 0 {
			return nil, fmt.Errorf("dhcp-client-id %q: interface %s has no hardware address", value, ifname)
		}
		return append([]byte{1}, mac...), nil
	case "iaid+duid":
		if len(mac) == 0 {
			return nil, fmt.Errorf("dhcp-client-id %q: interface %s has no hardware address", value, ifname)
		}
		iaid := IAID(ifname)
		return append(append([]byte{0xff}, iaid[:]...), duidLL(mac)...), nil
	}
	if b, ok := parseHexBytes(value); ok {
		return b, nil
	}
	return append([]byte{0}, value...), nil
}

// DUID encodes the DHCPv6 client DUID from nmstate's dhcp-duid value:
// "" or "ll" for a DUID-LL of the interface's MAC, or colon-separated hex
// bytes used as they are.
func DUID(value, ifname string, mac net.HardwareAddr) ([]byte, error) {
	switch value {
	case "", "ll":
		if len(mac) == 0 {
			return nil, fmt.Errorf("dhcp-duid %q: interface %s has no hardware address", value, ifname)
		}
		return duidLL(mac), nil
	}
	if b, ok := parseHexBytes(value); ok && len(b) >= 3 {
		return b, nil
	}
	return nil, fmt.Errorf("dhcp-duid %q: want \"ll\" or colon-separated hex bytes", value)
}

// parseHexBytes reads "01:ab:..." with at least two bytes.
func parseHexBytes(s string) ([]byte, bool) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 {
		return nil, false
	}
	out := make([]byte, 0, len(parts))
	for _, p := range parts {
		if len(p) != 2 {
			return nil, false
		}
		b, err := hex.DecodeString(p)
		if err != nil {
			return nil, false
		}
		out = append(out, b[0])
	}
	return out, true
}
