package nm

import (
	"net/netip"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// ipExtras adds to one family's ip setting the DHCP/autoconf knobs
// nmstate maps (client id, DUID, IAID, hostname sending, IPv6 token) and
// wait-ip's may-fail. sec already has its method.
func ipExtras(sec map[string]dbus.Variant, ifc *nmstate.Interface, c *nmstate.IPConfig, v6 bool) {
	if w := ifc.WaitIP; w != nil {
		// wait-ip names the families the activation waits for: those may
		// not fail, the others may.
		need := map[nmstate.WaitIP][2]bool{"any": {false, false}, "ipv4": {true, false}, "ipv6": {false, true}, "ipv4+ipv6": {true, true}}[*w]
		fam := 0
		if v6 {
			fam = 1
		}
		sec["may-fail"] = dbus.MakeVariant(!need[fam])
	}
	if !c.IsAuto() {
		return
	}
	if !v6 {
		id := "mac" // nmstate's default: the link-layer address
		if c.DHCPClientID != nil {
			id = map[string]string{"ll": "mac", "iaid+duid": "duid"}[*c.DHCPClientID]
			if id == "" {
				id = *c.DHCPClientID
			}
		}
		sec["dhcp-client-id"] = dbus.MakeVariant(id)
	} else {
		duid := "ll"
		if c.DHCPDUID != nil {
			duid = *c.DHCPDUID
		}
		sec["dhcp-duid"] = dbus.MakeVariant(duid)
		sec["dhcp-iaid"] = dbus.MakeVariant("mac")
		// As with DHCP: never give up waiting for a router advertisement.
		sec["ra-timeout"] = dbus.MakeVariant(int32(2147483647))
		if c.Token != nil && c.Token.IsValid() && !c.Token.IsUnspecified() {
			sec["token"] = dbus.MakeVariant(c.Token.String())
			if _, ok := sec["addr-gen-mode"]; !ok {
				// NetworkManager takes a token with EUI-64 only, which
				// is nmstate's default addr-gen-mode.
				sec["addr-gen-mode"] = dbus.MakeVariant(int32(0))
			}
		}
	}
	if c.DHCPSendHostname != nil && !*c.DHCPSendHostname {
		sec["dhcp-send-hostname"] = dbus.MakeVariant(false)
		return
	}
	sec["dhcp-send-hostname"] = dbus.MakeVariant(true)
	if h := c.DHCPCustomHostname; h != nil && *h != "" {
		// IPv4 sends an FQDN option for a name with a dot (nmstate checks
		// no more of the FQDN syntax), a host name option otherwise.
		if !v6 && strings.Contains(*h, ".") {
			sec["dhcp-fqdn"] = dbus.MakeVariant(*h)
		} else {
			sec["dhcp-hostname"] = dbus.MakeVariant(*h)
		}
	}
}

// ipExtrasFromProfile reports a profile's DHCP knobs on cfg, as nmstate
// reads them back (only for a family running DHCP or autoconf).
func ipExtrasFromProfile(cfg *nmstate.IPConfig, sec map[string]dbus.Variant, v6 bool) {
	str := func(k string) (string, bool) {
		v, ok := sec[k]
		if !ok {
			return "", false
		}
		s, ok := v.Value().(string)
		return s, ok
	}
	if !v6 {
		if id, ok := str("dhcp-client-id"); ok {
			if n := map[string]string{"mac": "ll", "duid": "iaid+duid"}[id]; n != "" {
				id = n
			}
			cfg.DHCPClientID = &id
		}
	} else {
		if d, ok := str("dhcp-duid"); ok {
			cfg.DHCPDUID = &d
		}
		if t, ok := str("token"); ok {
			if a, err := netip.ParseAddr(t); err == nil {
				cfg.Token = &a
			}
		}
	}
	send := true
	if v, ok := sec["dhcp-send-hostname"]; ok {
		send, _ = v.Value().(bool)
	}
	cfg.DHCPSendHostname = &send
	if send {
		if h, ok := str("dhcp-fqdn"); ok && !v6 && h != "" {
			cfg.DHCPCustomHostname = &h
		} else if h, ok := str("dhcp-hostname"); ok && h != "" {
			cfg.DHCPCustomHostname = &h
		}
	}
	if v, ok := sec["route-metric"]; ok {
		if m, ok := v.Value().(int64); ok && m >= 0 {
			u := uint32(m)
			cfg.AutoRouteMetric = &u
		}
	}
}

// waitIPFromProfile is wait-ip as nmstate reads it from the may-fail of
// the enabled families.
func waitIPFromProfile(s map[string]map[string]dbus.Variant) *nmstate.WaitIP {
	mayFail := func(fam string) (enabled, may bool) {
		sec := s[fam]
		if m, _ := sec["method"].Value().(string); m == "" || m == "disabled" || m == "ignore" {
			return false, true
		}
		may = true
		if v, ok := sec["may-fail"]; ok {
			may, _ = v.Value().(bool)
		}
		return true, may
	}
	e4, m4 := mayFail("ipv4")
	e6, m6 := mayFail("ipv6")
	if !e4 && !e6 {
		return nil
	}
	w := nmstate.WaitIP("any")
	switch {
	case e4 && e6 && !m4 && !m6:
		w = "ipv4+ipv6"
	case e4 && !m4:
		w = "ipv4"
	case e6 && !m6:
		w = "ipv6"
	}
	return &w
}
