package noded

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/noded/dhcp"
)

func decode(t *testing.T, y string) *nmstate.State {
	t.Helper()
	st, err := nmstate.Decode([]byte(y))
	if err != nil {
		t.Fatalf("decoding test state: %v", err)
	}
	return st
}

var auto4Default = Auto{DNS: true, Gateway: true, Routes: true, Table: MainTable, Metric: DefaultRouteMetric}

func TestUpdateSpecs(t *testing.T) {
	eth0DHCP := Spec{Interface: "eth0", V4: &Family4{DHCP: true, Auto: auto4Default, SendHostname: true}}
	tests := []struct {
		name    string
		prev    map[string]Spec
		applied string
		want    map[string]Spec
	}{{
		name:    "dhcp on with defaults",
		applied: "interfaces:\n- name: eth0\n  ipv4: {enabled: true, dhcp: true}\n",
		want:    map[string]Spec{"eth0": eth0DHCP},
	}, {
		name: "auto flags and client options are read",
		applied: `interfaces:
- name: eth0
  ipv4: {enabled: true, dhcp: true, auto-dns: false, auto-gateway: false, auto-route-table-id: 100,
         auto-route-metric: 150, dhcp-client-id: iaid+duid, dhcp-send-hostname: false, dhcp-custom-hostname: n1}
  ipv6: {enabled: true, dhcp: true, autoconf: false, auto-routes: false, dhcp-duid: ll}
`,
		want: map[string]Spec{"eth0": {Interface: "eth0",
			V4: &Family4{DHCP: true, Auto: Auto{DNS: false, Gateway: false, Routes: true, Table: 100, Metric: 150, TableSet: true, MetricSet: true},
				ClientID: "iaid+duid", SendHostname: false, Hostname: "n1"},
			V6: &Family6{DHCP: true, Autoconf: false, Auto: Auto{DNS: true, Gateway: true, Routes: false, Table: MainTable, Metric: DefaultRouteMetric},
				DUID: "ll", SendHostname: true},
		}},
	}, {
		name:    "an interface the state does not list keeps its spec",
		prev:    map[string]Spec{"eth0": eth0DHCP},
		applied: "interfaces:\n- name: eth1\n  ipv4: {enabled: true, dhcp: true}\n",
		want: map[string]Spec{"eth0": eth0DHCP, "eth1": {Interface: "eth1",
			V4: &Family4{DHCP: true, Auto: auto4Default, SendHostname: true}}},
	}, {
		name:    "a family section left out keeps that family",
		prev:    map[string]Spec{"eth0": eth0DHCP},
		applied: "interfaces:\n- name: eth0\n  mtu: 1400\n",
		want:    map[string]Spec{"eth0": eth0DHCP},
	}, {
		name:    "dhcp false turns dhcp off",
		prev:    map[string]Spec{"eth0": eth0DHCP},
		applied: "interfaces:\n- name: eth0\n  ipv4: {enabled: true, dhcp: false, address: [{ip: 192.0.2.5, prefix-length: 24}]}\n",
		want:    map[string]Spec{},
	}, {
		// nmstate merges a section into the current one (pkg/nmstate
		// mergeIP): dhcp is inherited, static addresses come on top.
		name:    "a static address alone keeps dhcp",
		prev:    map[string]Spec{"eth0": eth0DHCP},
		applied: "interfaces:\n- name: eth0\n  ipv4: {enabled: true, address: [{ip: 192.0.2.5, prefix-length: 24}]}\n",
		want:    map[string]Spec{"eth0": eth0DHCP},
	}, {
		// A new client option would mean a new client and lease: turning
		// auto-dns off must not reset the custom hostname.
		name: "keys a section leaves out keep their values",
		prev: map[string]Spec{"eth0": {Interface: "eth0",
			V4: &Family4{DHCP: true, Auto: Auto{DNS: true, Gateway: false, Routes: true, Table: 100, TableSet: true, Metric: 50, MetricSet: true},
				ClientID: "mac", SendHostname: true, Hostname: "n1"},
			V6: &Family6{DHCP: true, Autoconf: true, Auto: auto4Default, DUID: "ll", SendHostname: true, Hostname: "n1"}}},
		applied: `interfaces:
- name: eth0
  ipv4: {enabled: true, dhcp: true, auto-dns: false}
  ipv6: {enabled: true, dhcp: true, autoconf: true, auto-dns: false}
`,
		want: map[string]Spec{"eth0": {Interface: "eth0",
			V4: &Family4{DHCP: true, Auto: Auto{DNS: false, Gateway: false, Routes: true, Table: 100, TableSet: true, Metric: 50, MetricSet: true},
				ClientID: "mac", SendHostname: true, Hostname: "n1"},
			V6: &Family6{DHCP: true, Autoconf: true, Auto: Auto{DNS: false, Gateway: true, Routes: true, Table: MainTable, Metric: DefaultRouteMetric},
				DUID: "ll", SendHostname: true, Hostname: "n1"}}},
	}, {
		name:    "auto-route-table-id 0 goes back to the main table",
		prev:    map[string]Spec{"eth0": {Interface: "eth0", V4: &Family4{DHCP: true, Auto: Auto{DNS: true, Gateway: true, Routes: true, Table: 100, TableSet: true, Metric: DefaultRouteMetric}, SendHostname: true}}},
		applied: "interfaces:\n- name: eth0\n  ipv4: {enabled: true, dhcp: true, auto-route-table-id: 0}\n",
		want:    map[string]Spec{"eth0": eth0DHCP},
	}, {
		name:    "absent interface loses its spec",
		prev:    map[string]Spec{"eth0": eth0DHCP},
		applied: "interfaces:\n- name: eth0\n  state: absent\n",
		want:    map[string]Spec{},
	}, {
		name:    "down interface loses its spec",
		prev:    map[string]Spec{"eth0": eth0DHCP},
		applied: "interfaces:\n- name: eth0\n  state: down\n",
		want:    map[string]Spec{},
	}, {
		name:    "an interface that becomes a bridge port loses its spec",
		prev:    map[string]Spec{"eth0": eth0DHCP},
		applied: "interfaces:\n- name: br1\n  type: linux-bridge\n  ipv4: {enabled: true, dhcp: true}\n  bridge: {port: [{name: eth0}]}\n",
		want: map[string]Spec{"br1": {Interface: "br1",
			V4: &Family4{DHCP: true, Auto: auto4Default, SendHostname: true}}},
	}, {
		name:    "vrf ports keep their spec",
		prev:    map[string]Spec{"eth0": eth0DHCP},
		applied: "interfaces:\n- name: vrf1\n  type: vrf\n  vrf: {route-table-id: 100, port: [eth0]}\n",
		want:    map[string]Spec{"eth0": eth0DHCP},
	}, {
		name:    "ipv4 disabled with dhcp true is not dynamic",
		applied: "interfaces:\n- name: eth0\n  ipv4: {enabled: false, dhcp: true}\n",
		want:    map[string]Spec{},
	}, {
		name:    "autoconf alone is dynamic",
		applied: "interfaces:\n- name: eth0\n  ipv6: {enabled: true, autoconf: true}\n",
		want: map[string]Spec{"eth0": {Interface: "eth0", V6: &Family6{Autoconf: true,
			Auto: auto4Default, SendHostname: true}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prevCopy := cloneSpecs(tt.prev)
			got := UpdateSpecs(tt.prev, decode(t, tt.applied))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("UpdateSpecs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(prevCopy, cloneSpecs(tt.prev)); diff != "" {
				t.Errorf("UpdateSpecs modified prev (-before +after):\n%s", diff)
			}
		})
	}
}

func cloneSpecs(m map[string]Spec) map[string]Spec {
	out := map[string]Spec{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestDecide(t *testing.T) {
	v4 := func(name string, a Auto, cid string) Spec {
		return Spec{Interface: name, V4: &Family4{DHCP: true, Auto: a, ClientID: cid, SendHostname: true}}
	}
	noGW := auto4Default
	noGW.Gateway = false
	run := func(cid string) ClientConfig { return ClientConfig{ClientID: cid, SendHostname: true} }
	tests := []struct {
		name       string
		prev, next map[string]Spec
		running    map[Key]ClientConfig
		want       Actions
	}{{
		name: "new dhcp interface starts a client",
		next: map[string]Spec{"eth0": v4("eth0", auto4Default, "")},
		want: Actions{Start: []Key{{"eth0", 4}}},
	}, {
		name:    "unchanged spec keeps the client",
		prev:    map[string]Spec{"eth0": v4("eth0", auto4Default, "")},
		next:    map[string]Spec{"eth0": v4("eth0", auto4Default, "")},
		running: map[Key]ClientConfig{{"eth0", 4}: run("")},
	}, {
		name:    "client that failed to start is started again",
		prev:    map[string]Spec{"eth0": v4("eth0", auto4Default, "")},
		next:    map[string]Spec{"eth0": v4("eth0", auto4Default, "")},
		running: map[Key]ClientConfig{},
		want:    Actions{Start: []Key{{"eth0", 4}}},
	}, {
		name:    "auto flag change refreshes without restart",
		prev:    map[string]Spec{"eth0": v4("eth0", auto4Default, "")},
		next:    map[string]Spec{"eth0": v4("eth0", noGW, "")},
		running: map[Key]ClientConfig{{"eth0", 4}: run("")},
		want:    Actions{Refresh: []Key{{"eth0", 4}}},
	}, {
		name:    "client id change restarts with release",
		prev:    map[string]Spec{"eth0": v4("eth0", auto4Default, "")},
		next:    map[string]Spec{"eth0": v4("eth0", auto4Default, "iaid+duid")},
		running: map[Key]ClientConfig{{"eth0", 4}: run("")},
		want:    Actions{Stop: []Stop{{Key{"eth0", 4}, true}}, Start: []Key{{"eth0", 4}}},
	}, {
		name:    "dhcp off releases",
		prev:    map[string]Spec{"eth0": v4("eth0", auto4Default, "")},
		next:    map[string]Spec{},
		running: map[Key]ClientConfig{{"eth0", 4}: run("")},
		want:    Actions{Stop: []Stop{{Key{"eth0", 4}, true}}},
	}, {
		name: "autoconf on writes the ra sysctls",
		next: map[string]Spec{"eth1": {Interface: "eth1", V6: &Family6{Autoconf: true, Auto: auto4Default}}},
		want: Actions{Sysctls: []Sysctl{
			{"eth1", "disable_ipv6", "0"}, {"eth1", "accept_ra", "2"}, {"eth1", "accept_ra_defrtr", "1"},
			{"eth1", "accept_ra_pinfo", "1"}, {"eth1", "accept_ra_rtr_pref", "1"}, {"eth1", "accept_ra_rt_info_max_plen", "64"},
			{"eth1", "ra_defrtr_metric", "100"}, {"eth1", "autoconf", "1"},
		}, Solicit: []string{"eth1"}},
	}, {
		name:    "autoconf off with dhcpv6 keeps ras but stops slaac",
		prev:    map[string]Spec{"eth1": {Interface: "eth1", V6: &Family6{DHCP: true, Autoconf: true, Auto: auto4Default}}},
		next:    map[string]Spec{"eth1": {Interface: "eth1", V6: &Family6{DHCP: true, Autoconf: false, Auto: auto4Default}}},
		running: map[Key]ClientConfig{{"eth1", 6}: {}},
		want: Actions{Sysctls: []Sysctl{
			{"eth1", "disable_ipv6", "0"}, {"eth1", "accept_ra", "2"}, {"eth1", "accept_ra_defrtr", "1"},
			{"eth1", "accept_ra_pinfo", "1"}, {"eth1", "accept_ra_rtr_pref", "1"}, {"eth1", "accept_ra_rt_info_max_plen", "64"},
			{"eth1", "ra_defrtr_metric", "100"}, {"eth1", "autoconf", "0"},
		}, FlushAutoconf: []string{"eth1"}, Solicit: []string{"eth1"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.prev, tt.next, tt.running)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLeaseRoutes(t *testing.T) {
	gw := netip.MustParseAddr("192.0.2.1")
	l := dhcp.Lease{Family: dhcp.IPv4, Interface: "eth0", Address: netip.MustParsePrefix("192.0.2.150/24"),
		Routers: []netip.Addr{gw}}
	withClassless := l
	withClassless.Routes = []dhcp.Route{{Destination: netip.MustParsePrefix("198.51.100.0/24"), Gateway: gw}}
	def := netip.MustParsePrefix("0.0.0.0/0")
	table100 := auto4Default
	table100.Table, table100.Metric = 100, 150
	noGW, noRoutes := auto4Default, auto4Default
	noGW.Gateway, noRoutes.Routes = false, false
	tests := []struct {
		name  string
		lease dhcp.Lease
		auto  Auto
		want  []Route
	}{
		{"default route via the router", l, auto4Default, []Route{{"eth0", def, gw, MainTable, DefaultRouteMetric}}},
		{"auto-gateway false", l, noGW, nil},
		{"auto-routes false", withClassless, noRoutes, nil},
		{"classless routes replace the router", withClassless, auto4Default,
			[]Route{{"eth0", netip.MustParsePrefix("198.51.100.0/24"), gw, MainTable, DefaultRouteMetric}}},
		{"other table gets the subnet too", l, table100, []Route{
			{"eth0", netip.MustParsePrefix("192.0.2.0/24"), netip.Addr{}, 100, 150},
			{"eth0", def, gw, 100, 150},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, LeaseRoutes(tt.lease, tt.auto), cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
				cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("LeaseRoutes (-want +got):\n%s", diff)
			}
		})
	}
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

var cmpAddr = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func TestMergeDNS(t *testing.T) {
	tests := []struct {
		name         string
		file         nmstate.DNSConfig
		added, dyn   DynamicDNS
		want         nmstate.DNSConfig
		wantAppended DynamicDNS
	}{{
		name:         "dynamic servers go after static ones",
		file:         nmstate.DNSConfig{Server: addrs("198.51.100.53"), Search: []string{"corp.example"}},
		dyn:          DynamicDNS{Server: addrs("192.0.2.1"), Search: []string{"lab.example"}},
		want:         nmstate.DNSConfig{Server: addrs("198.51.100.53", "192.0.2.1"), Search: []string{"corp.example", "lab.example"}},
		wantAppended: DynamicDNS{Server: addrs("192.0.2.1"), Search: []string{"lab.example"}},
	}, {
		name:         "what was appended before is replaced",
		file:         nmstate.DNSConfig{Server: addrs("198.51.100.53", "192.0.2.1")},
		added:        DynamicDNS{Server: addrs("192.0.2.1")},
		dyn:          DynamicDNS{Server: addrs("192.0.2.2")},
		want:         nmstate.DNSConfig{Server: addrs("198.51.100.53", "192.0.2.2")},
		wantAppended: DynamicDNS{Server: addrs("192.0.2.2")},
	}, {
		name:  "no leases leaves the static part",
		file:  nmstate.DNSConfig{Server: addrs("198.51.100.53", "192.0.2.1"), Search: []string{"lab.example"}},
		added: DynamicDNS{Server: addrs("192.0.2.1"), Search: []string{"lab.example"}},
		want:  nmstate.DNSConfig{Server: addrs("198.51.100.53")},
	}, {
		name: "a dynamic server already static is not repeated",
		file: nmstate.DNSConfig{Server: addrs("192.0.2.1")},
		dyn:  DynamicDNS{Server: addrs("192.0.2.1")},
		want: nmstate.DNSConfig{Server: addrs("192.0.2.1")},
	}, {
		name:  "file rewritten by someone else: appended entries are dropped wherever they are",
		file:  nmstate.DNSConfig{Server: addrs("192.0.2.1", "198.51.100.53")},
		added: DynamicDNS{Server: addrs("192.0.2.1")},
		want:  nmstate.DNSConfig{Server: addrs("198.51.100.53")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, appended := MergeDNS(tt.file, tt.added, tt.dyn)
			if diff := cmp.Diff(tt.want, got, cmpAddr, cmpEmpty); diff != "" {
				t.Errorf("resolv.conf (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAppended, appended, cmpAddr, cmpEmpty); diff != "" {
				t.Errorf("appended (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpEmpty treats nil and empty slices alike.
var cmpEmpty = cmp.FilterValues(func(a, b any) bool { return isEmptySlice(a) && isEmptySlice(b) }, cmp.Ignore())

func isEmptySlice(v any) bool {
	switch s := v.(type) {
	case []netip.Addr:
		return len(s) == 0
	case []string:
		return len(s) == 0
	}
	return false
}

func TestLeaseDNSOrderAndAutoDNS(t *testing.T) {
	specs := map[string]Spec{
		"eth0": {Interface: "eth0", V4: &Family4{DHCP: true, Auto: auto4Default}, V6: &Family6{DHCP: true, Auto: auto4Default}},
		"eth1": {Interface: "eth1", V4: &Family4{DHCP: true, Auto: Auto{DNS: false}}},
		"eth2": {Interface: "eth2", V4: &Family4{DHCP: true, Auto: auto4Default}},
	}
	leases := []InstalledLease{
		{Interface: "eth0", Family: 6, DNS: addrs("2001:db8::1")},
		{Interface: "eth2", Family: 4, DNS: addrs("192.0.2.2", "192.0.2.1"), Search: []string{"b.example"}},
		{Interface: "eth1", Family: 4, DNS: addrs("192.0.2.9")},
		{Interface: "eth0", Family: 4, DNS: addrs("192.0.2.1"), Search: []string{"a.example"}},
	}
	want := DynamicDNS{Server: addrs("192.0.2.1", "192.0.2.2", "2001:db8::1"), Search: []string{"a.example", "b.example"}}
	if diff := cmp.Diff(want, LeaseDNS(leases, specs), cmpAddr); diff != "" {
		t.Errorf("LeaseDNS (-want +got):\n%s", diff)
	}
}

func TestAnnotate(t *testing.T) {
	st := decode(t, `interfaces:
- name: eth0
  type: ethernet
  ipv4: {enabled: true, dhcp: true, address: [{ip: 192.0.2.150, prefix-length: 24, valid-life-time: 100sec, preferred-life-time: 100sec}]}
  ipv6: {enabled: true, dhcp: false, autoconf: true}
- name: eth1
  type: ethernet
  ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.1, prefix-length: 24}]}
dns-resolver:
  config: {server: [198.51.100.53, 192.0.2.1], search: [corp.example, lab.example]}
  running: {server: [198.51.100.53, 192.0.2.1], search: [corp.example, lab.example]}
`)
	a := Auto{DNS: false, Gateway: true, Routes: true, Table: 100, TableSet: true, Metric: 150, MetricSet: true}
	rec := &Record{
		Specs: map[string]Spec{"eth0": {Interface: "eth0",
			V4: &Family4{DHCP: true, Auto: a, ClientID: "ll", SendHostname: true},
			V6: &Family6{DHCP: true, Autoconf: true, Auto: auto4Default, SendHostname: false}}},
		DNS: DynamicDNS{Server: addrs("192.0.2.1"), Search: []string{"lab.example"}},
	}
	rec.Annotate(st)
	want := decode(t, `interfaces:
- name: eth0
  type: ethernet
  ipv4: {enabled: true, dhcp: true, address: [{ip: 192.0.2.150, prefix-length: 24, valid-life-time: 100sec, preferred-life-time: 100sec}],
         auto-dns: false, auto-gateway: true, auto-routes: true, auto-route-table-id: 100, auto-route-metric: 150,
         dhcp-client-id: ll, dhcp-send-hostname: true}
  ipv6: {enabled: true, dhcp: true, autoconf: true, auto-dns: true, auto-gateway: true, auto-routes: true,
         auto-route-table-id: 0, dhcp-send-hostname: false}
- name: eth1
  type: ethernet
  ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.1, prefix-length: 24}]}
dns-resolver:
  config: {server: [198.51.100.53], search: [corp.example]}
  running: {server: [198.51.100.53, 192.0.2.1], search: [corp.example, lab.example]}
`)
	gotY, err := nmstate.EncodeYAML(st)
	if err != nil {
		t.Fatal(err)
	}
	wantY, err := nmstate.EncodeYAML(want)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(wantY), string(gotY)); diff != "" {
		t.Errorf("annotated state (-want +got):\n%s", diff)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	empty, err := ReadRecord(dir)
	if err != nil {
		t.Fatalf("reading a missing record: %v", err)
	}
	if len(empty.Specs) != 0 || len(empty.Leases) != 0 {
		t.Errorf("missing record reads as %+v, want empty", empty)
	}
	rec := &Record{
		Specs: map[string]Spec{"eth0": {Interface: "eth0", V4: &Family4{DHCP: true, Auto: auto4Default}}},
		Leases: []InstalledLease{{Interface: "eth0", Family: 4, Address: netip.MustParsePrefix("192.0.2.150/24"),
			Expires: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), OneShot: true,
			Routes: []Route{{"eth0", netip.MustParsePrefix("0.0.0.0/0"), netip.MustParseAddr("192.0.2.1"), MainTable, 100}}}},
		DNS:       DynamicDNS{Server: addrs("192.0.2.1")},
		Submitted: 3,
	}
	if err := WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, got, cmpAddr, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("record round trip (-want +got):\n%s", diff)
	}
}
