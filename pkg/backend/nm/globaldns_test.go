package nm

import (
	"strings"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestDNSPlacement: where PlanProfiles puts a desired DNS configuration,
// by nmstate's rules: global unless interface DNS is wanted (static IP
// given, DHCP with auto-dns: true given, an IPv6 link-local server) or
// only search/options are given; a purge clears both; gc never writes
// global DNS.
func TestDNSPlacement(t *testing.T) {
	current := `
interfaces:
- {name: eth1, type: ethernet, state: up, mtu: 1500, ipv4: {enabled: false}, ipv6: {enabled: false}}
dns-resolver: {config: {server: [192.0.2.99], search: [], options: []}}
`
	for _, tc := range []struct {
		name, desired string
		gc            bool
		// global is GlobalDNS's servers and searches ("-" = nil, left
		// alone); profile eth1's ipv4+ipv6 dns as "v4 / v6".
		global, profile string
	}{
		{"no DNS", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}}]", false, "-", "/"},
		{"servers only", "dns-resolver: {config: {server: [192.0.2.53]}}", false, "192.0.2.53|", "-"},
		{"static interface", "dns-resolver: {config: {server: [192.0.2.53, 2001:db8::53], search: [a.example]}}\ninterfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}, ipv6: {enabled: true, address: [{ip: 2001:db8::1, prefix-length: 64}]}}]", false, "|", "192.0.2.53 / 2001:db8::53"},
		{"static interface, no IPv6 for the IPv6 server: global fallback", "dns-resolver: {config: {server: [192.0.2.53, 2001:db8::53]}}\ninterfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}}]", false, "192.0.2.53,2001:db8::53|", "/"},
		{"dhcp, auto-dns false", "dns-resolver: {config: {server: [192.0.2.53]}}\ninterfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, dhcp: true, auto-dns: false}}]", false, "192.0.2.53|", "/"},
		{"dhcp, auto-dns true", "dns-resolver: {config: {server: [192.0.2.53]}}\ninterfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, dhcp: true, auto-dns: true}}]", false, "|", "192.0.2.53 /"},
		{"search only", "dns-resolver: {config: {server: [], search: [a.example]}}\ninterfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, dhcp: true}}]", false, "|", "/"},
		{"interleaved, static: global fallback", "dns-resolver: {config: {server: [192.0.2.53, 2001:db8::53, 192.0.2.54]}}\ninterfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}, ipv6: {enabled: true, address: [{ip: 2001:db8::1, prefix-length: 64}]}}]", false, "192.0.2.53,2001:db8::53,192.0.2.54|", "/"},
		{"purge", "dns-resolver: {config: {}}", false, "|", "-"},
		{"gc: dhcp holds it", "dns-resolver: {config: {server: [192.0.2.53]}}\ninterfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, dhcp: true, auto-dns: false}}]", true, "-", "192.0.2.53 /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, err := nmstate.Decode([]byte(current))
			if err != nil {
				t.Fatal(err)
			}
			des, err := nmstate.Decode([]byte(tc.desired))
			if err != nil {
				t.Fatal(err)
			}
			m, err := nmstate.Merge(des, cur)
			if err != nil {
				t.Fatal(err)
			}
			existing := existingProfiles{}
			if tc.gc {
				existing = nil
			}
			pp, err := PlanProfiles(m, existing, nil, func(*nmstate.Interface) string { return "u" })
			if err != nil {
				t.Fatal(err)
			}
			global := "-"
			if pp.GlobalDNS != nil {
				global = strings.Join(pp.GlobalDNS.Servers, ",") + "|" + strings.Join(pp.GlobalDNS.Searches, ",")
			}
			if global != tc.global {
				t.Errorf("global DNS %q, want %q", global, tc.global)
			}
			profile := "-"
			for _, p := range pp.Profiles {
				if p.Name == "eth1" {
					var fam []string
					for _, f := range []string{"ipv4", "ipv6"} {
						var ss []string
						for _, a := range dnsServers(p.Settings[f]) {
							ss = append(ss, a.String())
						}
						fam = append(fam, strings.Join(ss, ","))
					}
					profile = strings.TrimSpace(strings.Join(fam, " / "))
				}
			}
			if profile != tc.profile {
				t.Errorf("eth1's profile DNS %q, want %q", profile, tc.profile)
			}
		})
	}
}

func TestDNSInterleaved(t *testing.T) {
	for _, tc := range []struct {
		servers string
		want    bool
	}{
		{"192.0.2.1 2001:db8::1", false},
		{"192.0.2.1 192.0.2.2 2001:db8::1", false},
		{"192.0.2.1 2001:db8::1 192.0.2.2", true},
		{"2001:db8::1 192.0.2.1 2001:db8::2", true},
	} {
		st, err := nmstate.Decode([]byte("dns-resolver: {config: {server: [" + strings.ReplaceAll(tc.servers, " ", ", ") + "]}}"))
		if err != nil {
			t.Fatal(err)
		}
		if got := dnsInterleaved(st.DNSResolver.Config.Server); got != tc.want {
			t.Errorf("%s: interleaved %v, want %v", tc.servers, got, tc.want)
		}
	}
}

// TestCheckpointID: the checkpoint id carries what NetworkManager 1.42's
// checkpoint does not restore, and is the bare object path when there is
// nothing to carry (as before).
func TestCheckpointID(t *testing.T) {
	const p = "/org/freedesktop/NetworkManager/Checkpoint/3"
	for _, x := range []cpExtra{
		{},
		{GlobalDNS: &GlobalDNS{Servers: []string{"192.0.2.53"}, Searches: []string{"example.com"}}},
		{Unmanaged: []string{"eth0"}},
	} {
		id := encodeCheckpointID(p, x)
		if x.GlobalDNS.Empty() && len(x.Unmanaged) == 0 && id != p {
			t.Errorf("id %q, want the bare path", id)
		}
		gotP, got, err := decodeCheckpointID(id)
		if err != nil {
			t.Fatal(err)
		}
		if gotP != p || !got.GlobalDNS.Equal(x.GlobalDNS) || strings.Join(got.Unmanaged, ",") != strings.Join(x.Unmanaged, ",") {
			t.Errorf("%q decoded to %q %+v, want %+v", id, gotP, got, x)
		}
	}
	if _, _, err := decodeCheckpointID(p + "#!!"); err == nil || !strings.Contains(err.Error(), "checkpoint id") {
		t.Errorf("a damaged id: %v", err)
	}
}
