package nmstate

// mergeIP computes the target `ipv4`/`ipv6` section from the desired and
// current ones with nmstate's IP special merge:
//
//   - not given: the current section is kept as it is;
//   - enabled, dhcp and autoconf are inherited when not given (giving
//     addresses or turning DHCP/autoconf on implies enabled);
//   - enabled false: nothing else is kept (all addresses go);
//   - given addresses replace the current ones, minus dynamic addresses and
//     IPv6 link-local ones (the kernel and DHCP own those);
//   - addresses not given: the current static addresses stay; switching
//     DHCP/autoconf off converts the current dynamic addresses to static
//     ones (lifetimes dropped = forever), so the host keeps its address;
//   - not auto: every auto-* and DHCP-only key is dropped; auto: auto-dns,
//     auto-gateway and auto-routes default to true.
//
// The target always has Enabled set, and DHCP (plus Autoconf for IPv6) and
// Address set when enabled.
func mergeIP(d, c *IPConfig, v6 bool) *IPConfig {
	if d == nil {
		if c == nil {
			return nil
		}
		return cloneOf(c)
	}
	t := cloneOf(d)
	if t.Enabled == nil && (isTrue(t.DHCP) || isTrue(t.Autoconf) || len(t.Address) > 0) {
		// Asking for addresses or DHCP on a stack means enabling it.
		t.Enabled = boolPtr(true)
	}
	if t.Enabled == nil && c != nil && c.Enabled != nil {
		t.Enabled = boolPtr(*c.Enabled)
	}
	if t.Enabled == nil {
		t.Enabled = boolPtr(c == nil)
	}
	if !*t.Enabled {
		return &IPConfig{Enabled: boolPtr(false)}
	}
	wasAuto := c.IsAuto() && (c.Enabled == nil || *c.Enabled)
	if c != nil && !isFalse(c.Enabled) {
		if t.DHCP == nil && c.DHCP != nil {
			t.DHCP = boolPtr(*c.DHCP)
		}
		if v6 && t.Autoconf == nil && c.Autoconf != nil {
			t.Autoconf = boolPtr(*c.Autoconf)
		}
	}
	if t.DHCP == nil {
		t.DHCP = boolPtr(false)
	}
	if v6 && t.Autoconf == nil {
		t.Autoconf = boolPtr(false)
	}
	isAuto := t.IsAuto()
	switch {
	case t.Address != nil:
		t.Address = staticAddrs(t.Address, false)
	case c != nil && !isFalse(c.Enabled):
		t.Address = staticAddrs(c.Address, wasAuto && !isAuto)
	default:
		t.Address = []Address{}
	}
	if c != nil && !isFalse(c.Enabled) {
		rest := *c
		rest.Address = nil
		fillFrom(t, &rest)
	}
	if isAuto {
		for _, p := range []**bool{&t.AutoDNS, &t.AutoGateway, &t.AutoRoutes} {
			if *p == nil {
				*p = boolPtr(true)
			}
		}
	} else {
		t.AutoDNS, t.AutoGateway, t.AutoRoutes = nil, nil, nil
		t.AutoRouteTableID, t.AutoRouteMetric = nil, nil
		t.DHCPClientID, t.DHCPDUID = nil, nil
		t.DHCPSendHostname, t.DHCPCustomHostname = nil, nil
	}
	if !v6 {
		t.Autoconf = nil
	}
	return t
}

// staticAddrs returns the addresses an apply configures: IPv6 link-local
// ones are always dropped; dynamic ones are dropped, or converted to static
// (lifetimes removed) when convert is set.
func staticAddrs(in []Address, convert bool) []Address {
	out := []Address{}
	for _, a := range in {
		if a.IP.Is6() && a.IP.IsLinkLocalUnicast() {
			continue
		}
		a = cloneOf(a)
		if a.IsDynamic() {
			if !convert {
				continue
			}
			a.ValidLifetime, a.PreferredLifetime = nil, nil
		}
		out = append(out, a)
	}
	return out
}

func boolPtr(b bool) *bool { return &b }
