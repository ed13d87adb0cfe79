package nmstate

import (
	"fmt"
	"strconv"
	"strings"
)

// MAC is a hardware address, normalised to upper case on decode (as
// nmstate prints it). Ethernet (6 bytes) and InfiniBand (20 bytes)
// addresses are accepted.
type MAC string

func (MAC) normalize(s string) (string, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 {
		return "", fmt.Errorf("%q is not a MAC address", s)
	}
	for _, p := range parts {
		if len(p) != 2 {
			return "", fmt.Errorf("%q is not a MAC address", s)
		}
		if _, err := strconv.ParseUint(p, 16, 8); err != nil {
			return "", fmt.Errorf("%q is not a MAC address", s)
		}
	}
	return strings.ToUpper(s), nil
}

// Bytes returns the address bytes (MAC is valid after decoding).
func (m MAC) Bytes() []byte {
	var out []byte
	for _, p := range strings.Split(string(m), ":") {
		b, _ := strconv.ParseUint(p, 16, 8)
		out = append(out, byte(b))
	}
	return out
}

// normalizer is implemented by string types that validate and canonicalise
// their text on decode.
type normalizer interface {
	normalize(string) (string, error)
}

// Hex16 is an integer nmstate prints in hex (InfiniBand pkey).
type Hex16 uint16

// Hex32 is an integer nmstate prints in hex (rule fwmark/fwmask).
type Hex32 uint32

func (h Hex16) String() string { return fmt.Sprintf("0x%x", uint16(h)) }
func (h Hex32) String() string { return fmt.Sprintf("0x%x", uint32(h)) }

// hexer marks integer types printed as a hex string.
type hexer interface{ hexString() string }

func (h Hex16) hexString() string { return h.String() }
func (h Hex32) hexString() string { return h.String() }

// parseInt parses nmstate's lenient integers: decimal, or hex with 0x.
func parseInt(s string, bits int, signed bool) (int64, uint64, error) {
	t := strings.TrimSpace(s)
	base := 10
	neg := false
	if signed && strings.HasPrefix(t, "-") {
		neg = true
		t = t[1:]
	} else if strings.HasPrefix(t, "+") {
		t = t[1:]
	}
	if strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X") {
		base = 16
		t = t[2:]
	}
	if t == "" || strings.HasPrefix(t, "+") || strings.HasPrefix(t, "-") {
		return 0, 0, fmt.Errorf("%q is not an integer", s)
	}
	u, err := strconv.ParseUint(t, base, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, 0, fmt.Errorf("%s is out of range %s", s, intRange(bits, signed))
		}
		return 0, 0, fmt.Errorf("%q is not an integer", s)
	}
	if signed {
		limit := uint64(1) << (bits - 1)
		if (!neg && u >= limit) || (neg && u > limit) {
			return 0, 0, fmt.Errorf("%s is out of range %s", s, intRange(bits, signed))
		}
		v := int64(u)
		if neg {
			v = -v
		}
		return v, 0, nil
	}
	if bits < 64 && u >= uint64(1)<<bits {
		return 0, 0, fmt.Errorf("%s is out of range %s", s, intRange(bits, signed))
	}
	return 0, u, nil
}

func intRange(bits int, signed bool) string {
	if signed {
		return fmt.Sprintf("%d..%d", -(int64(1) << (bits - 1)), int64(uint64(1)<<(bits-1)-1))
	}
	if bits == 64 {
		return fmt.Sprintf("0..%d", ^uint64(0))
	}
	return fmt.Sprintf("0..%d", uint64(1)<<bits-1)
}

// parseBool accepts nmstate's boolean spellings.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "on", "y", "1":
		return true, nil
	case "false", "no", "off", "n", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", s)
}
