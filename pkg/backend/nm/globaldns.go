package nm

import (
	"net/netip"
	"slices"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Global DNS as upstream nmstate places DNS on NetworkManager
// (nm/query_apply/apply.rs, nm/query_apply/dns.rs): when an apply gives
// dns-resolver, NetworkManager's global DNS configuration (the manager's
// GlobalDnsConfiguration, which overrides every profile's DNS) is cleared
// and the DNS goes
//
//   - to profiles when only search or options are given (global DNS
//     would hide the servers DHCP learns);
//   - to profiles when "interface DNS" is wanted: a server is an IPv6
//     link-local address with a zone, or a desired interface runs DHCP or
//     autoconf with auto-dns: true given, or has static addresses; if no
//     profile can hold it (no interface with IP in the apply, IPv4 and
//     IPv6 servers interleaved), to the global configuration instead;
//   - nowhere when the configuration is empty (a purge: profiles'
//     DNS cleared too);
//   - otherwise to the global configuration.
//
// Read back as nmstate reports it: a non-empty global configuration is
// both dns-resolver.config and running.
//
// NetworkManager keeps global DNS in its intern configuration
// (/var/lib/NetworkManager/NetworkManager-intern.conf): it outlives a
// reboot even with memory-only profiles, and NetworkManager 1.42's
// checkpoints do not cover it (TRACK_INTERNAL_GLOBAL_DNS is 1.48), so the
// backend records it with its checkpoint and restores it on rollback.

// GlobalDNS is NetworkManager's global DNS configuration, reduced to what
// nmstate writes: the wildcard domain's servers, searches and options.
type GlobalDNS struct {
	Servers  []string `json:"servers,omitempty"`
	Searches []string `json:"searches,omitempty"`
	Options  []string `json:"options,omitempty"`
}

// Empty reports whether g configures nothing (NetworkManager's empty
// dictionary: no global DNS).
func (g *GlobalDNS) Empty() bool {
	return g == nil || len(g.Servers) == 0 && len(g.Searches) == 0 && len(g.Options) == 0
}

// Equal compares two configurations; nil is the empty one.
func (g *GlobalDNS) Equal(o *GlobalDNS) bool {
	if g.Empty() || o.Empty() {
		return g.Empty() == o.Empty()
	}
	return slices.Equal(g.Servers, o.Servers) && slices.Equal(g.Searches, o.Searches) && slices.Equal(g.Options, o.Options)
}

func globalDNSOf(c *nmstate.DNSConfig) *GlobalDNS {
	g := &GlobalDNS{Searches: slices.Clone(c.Search), Options: slices.Clone(c.Options)}
	for _, a := range c.Server {
		g.Servers = append(g.Servers, a.String())
	}
	return g
}

// dictionary is g as the GlobalDnsConfiguration property takes it.
func (g *GlobalDNS) dictionary() map[string]dbus.Variant {
	d := map[string]dbus.Variant{}
	if g.Empty() {
		return d
	}
	d["searches"] = dbus.MakeVariant(nonNil(g.Searches))
	d["options"] = dbus.MakeVariant(nonNil(g.Options))
	d["domains"] = dbus.MakeVariant(map[string]dbus.Variant{
		"*": dbus.MakeVariant(map[string]dbus.Variant{"servers": dbus.MakeVariant(nonNil(g.Servers))}),
	})
	return d
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func globalDNSFromDictionary(d map[string]dbus.Variant) *GlobalDNS {
	g := &GlobalDNS{}
	g.Searches, _ = d["searches"].Value().([]string)
	g.Options, _ = d["options"].Value().([]string)
	if doms, ok := d["domains"].Value().(map[string]dbus.Variant); ok {
		if all, ok := doms["*"].Value().(map[string]dbus.Variant); ok {
			g.Servers, _ = all["servers"].Value().([]string)
		}
	}
	return g
}

// dnsConfig is g as nmstate reports it.
func (g *GlobalDNS) dnsConfig() *nmstate.DNSConfig {
	c := &nmstate.DNSConfig{Server: []netip.Addr{}, Search: nonNil(slices.Clone(g.Searches)), Options: nonNil(slices.Clone(g.Options))}
	for _, s := range g.Servers {
		if a, err := netip.ParseAddr(s); err == nil {
			c.Server = append(c.Server, a)
		}
	}
	return c
}

func (c *client) globalDNS() (*GlobalDNS, error) {
	var d map[string]dbus.Variant
	if err := c.prop(nmPath, nmIface+".GlobalDnsConfiguration", &d); err != nil {
		return nil, err
	}
	return globalDNSFromDictionary(d), nil
}

func (c *client) setGlobalDNS(g *GlobalDNS) error {
	return c.obj(nmPath).SetProperty(nmIface+".GlobalDnsConfiguration", dbus.MakeVariant(g.dictionary()))
}

// ensureGlobalDNS writes the global configuration when it differs (a
// write NetworkManager only logs as invalid is caught by the read back).
func (c *client) ensureGlobalDNS(want *GlobalDNS) error {
	cur, err := c.globalDNS()
	if err != nil {
		return err
	}
	if cur.Equal(want) {
		return nil
	}
	if err := c.setGlobalDNS(want); err != nil {
		return err
	}
	if cur, err = c.globalDNS(); err != nil {
		return err
	}
	if !cur.Equal(want) {
		return &nmstate.Error{Kind: nmstate.Backend, Path: "dns-resolver.config", Detail: "NetworkManager did not take the global DNS configuration (see its log)"}
	}
	return nil
}

// dnsWantsGlobal reports whether the DNS of m goes straight to the global
// configuration (not search/options only, no interface DNS wanted, not a
// purge).
func dnsWantsGlobal(m *nmstate.Merged) bool {
	d := m.DNS
	if len(d.Server) == 0 {
		return false // search/options only, or a purge
	}
	return !ifaceDNSWanted(m)
}

// ifaceDNSWanted is nmstate's is_iface_dns_desired.
func ifaceDNSWanted(m *nmstate.Merged) bool {
	for _, a := range m.DNS.Server {
		if a.Is6() && a.IsLinkLocalUnicast() && a.Zone() != "" {
			return true
		}
	}
	if m.Desired == nil {
		return false
	}
	for i := range m.Desired.Interfaces {
		d := &m.Desired.Interfaces[i]
		if d.State != "" && d.State != nmstate.StateUp {
			continue
		}
		for _, c := range []*nmstate.IPConfig{d.IPv4, d.IPv6} {
			if c == nil || c.Enabled != nil && !*c.Enabled {
				continue
			}
			if c.IsAuto() && c.AutoDNS != nil && *c.AutoDNS {
				return true
			}
			if !c.IsAuto() && len(c.Address) > 0 {
				return true
			}
		}
	}
	return false
}

// dnsInterleaved reports servers profiles cannot hold in order: more than
// two with the families interleaved (one profile per family).
func dnsInterleaved(servers []netip.Addr) bool {
	if len(servers) <= 2 {
		return false
	}
	changes := 0
	for i := 1; i < len(servers); i++ {
		if servers[i].Is4() != servers[i-1].Is4() {
			changes++
		}
	}
	return changes > 1
}

// keepProfileDNS carries an existing profile's DNS keys over into its
// rewrite when the apply leaves DNS alone: nmstate updates a profile it
// finds (cloning what it does not set), so an apply that changes an
// interface without dns-resolver keeps the DNS the profile holds.
func keepProfileDNS(s Settings, old *profile) {
	if old == nil {
		return
	}
	for _, fam := range []string{"ipv4", "ipv6"} {
		sec := s[fam]
		if sec == nil {
			continue
		}
		if m, _ := sec["method"].Value().(string); m == "disabled" {
			continue
		}
		for _, k := range []string{"dns", "dns-search", "dns-options", "dns-priority"} {
			if _, set := sec[k]; set {
				continue
			}
			if v, ok := old.settings[fam][k]; ok && hasKey(old, fam, k) {
				sec[k] = v
			}
		}
	}
}

// dnsHolderGone reports whether an apply that leaves DNS alone takes a
// family's IP away from an interface whose profile holds that family's
// DNS (disabled, down or absent): nmstate then places the current DNS
// again (cur_dns_ifaces_still_valid_for_dns), or it would be lost with
// the profile's IP settings.
func dnsHolderGone(m *nmstate.Merged, existing existingProfiles) bool {
	for i := range m.Interfaces {
		ifc := &m.Interfaces[i]
		p := existing[ifc.Name]
		if p == nil {
			continue
		}
		for _, fam := range []string{"ipv4", "ipv6"} {
			if !hasKey(p, fam, "dns") && !hasKey(p, fam, "dns-search") {
				continue
			}
			c := ifc.IPv4
			if fam == "ipv6" {
				c = ifc.IPv6
			}
			st := ifc.EffectiveState()
			if st == nmstate.StateDown || st == nmstate.StateAbsent || c != nil && c.Enabled != nil && !*c.Enabled {
				return true
			}
		}
	}
	return false
}
