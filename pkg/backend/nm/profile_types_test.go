package nm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// flatten renders the settings of the given sections as "sec.key value"
// lines in GVariant text (type and value), sorted: the golden form of a
// profile.
func flatten(s Settings, secs ...string) string {
	var b strings.Builder
	for _, sec := range sortedKeys(s) {
		if len(secs) > 0 && !contains(secs, sec) {
			continue
		}
		for _, k := range sortedKeys(s[sec]) {
			fmt.Fprintf(&b, "%s.%s %s\n", sec, k, s[sec][k].String())
		}
	}
	return b.String()
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// planFor plans the profiles of a state as gc does (over assumed NICs).
func planFor(t *testing.T, y string) map[string]Settings {
	t.Helper()
	st, err := nmstate.Decode([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	m, err := nmstate.Merge(st.Clone(), assumedNICs(st))
	if err != nil {
		t.Fatal(err)
	}
	pp, err := PlanProfiles(m, nil, nil, func(*nmstate.Interface) string { return "u" })
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Settings{}
	for _, p := range pp.Profiles {
		out[p.Name] = p.Settings
	}
	return out
}

// TestProfileTypeSettings: each type's settings as nmstate's
// NetworkManager plugin writes them (golden, per profile, the type's own
// sections and the port keys).
func TestProfileTypeSettings(t *testing.T) {
	for _, tc := range []struct {
		name, state string
		iface       string
		secs        []string
		want        string
	}{{
		name: "bond every option",
		state: `
interfaces:
- name: bond0
  type: bond
  link-aggregation:
    mode: 802.3ad
    port: [eth1]
    options:
      ad_actor_sys_prio: 100
      ad_actor_system: "02:00:00:00:00:01"
      ad_select: bandwidth
      ad_user_port_key: 7
      all_slaves_active: dropped
      arp_all_targets: all
      arp_validate: none
      downdelay: 200
      fail_over_mac: none
      lacp_rate: fast
      lp_interval: 2
      miimon: 100
      min_links: 1
      num_grat_arp: 3
      num_unsol_na: 3
      packets_per_slave: 1
      primary_reselect: better
      resend_igmp: 2
      tlb_dynamic_lb: true
      updelay: 100
      use_carrier: true
      xmit_hash_policy: encap3+4
      balance-slb: false
      arp_missed_max: 5
`,
		iface: "bond0", secs: []string{"bond"},
		want: `bond.options {"ad_actor_sys_prio": "100", "ad_actor_system": "02:00:00:00:00:01", "ad_select": "bandwidth", "ad_user_port_key": "7", "all_slaves_active": "0", "arp_all_targets": "all", "arp_missed_max": "5", "arp_validate": "none", "balance-slb": "0", "downdelay": "200", "fail_over_mac": "none", "lacp_rate": "fast", "lp_interval": "2", "miimon": "100", "min_links": "1", "mode": "802.3ad", "num_grat_arp": "3", "num_unsol_na": "3", "packets_per_slave": "1", "primary_reselect": "better", "resend_igmp": "2", "tlb_dynamic_lb": "1", "updelay": "100", "use_carrier": "1", "xmit_hash_policy": "encap3+4"}
`,
	}, {
		name: "bond arp_interval 0 keeps targets given along, default arp_missed_max and zero actor left out",
		state: `
interfaces:
- name: bond0
  type: bond
  link-aggregation:
    mode: active-backup
    port: []
    options: {arp_interval: 0, arp_ip_target: 192.0.2.1, arp_missed_max: 2, ad_actor_system: "00:00:00:00:00:00", primary: ""}
`,
		iface: "bond0", secs: []string{"bond"},
		want: `bond.options {"arp_interval": "0", "arp_ip_target": "192.0.2.1", "mode": "active-backup"}
`,
	}, {
		name: "bond port with queue-id and prio",
		state: `
interfaces:
- name: bond0
  type: bond
  link-aggregation:
    mode: balance-rr
    port: [eth1, eth2, eth3]
    ports-config:
    - {name: eth1, queue-id: 2, priority: 0}
    - {name: eth2, priority: 10}
    - {name: eth3, queue-id: 0, priority: 0}
`,
		iface: "eth1", secs: []string{"bond-port", "connection", "ipv4"},
		want: `bond-port.queue-id @u 2
connection.autoconnect true
connection.id "eth1"
connection.interface-name "eth1"
connection.master "bond0"
connection.slave-type "bond"
connection.type "802-3-ethernet"
connection.uuid "u"
`,
	}, {
		name:  "bond port prio only",
		state: "interfaces:\n- {name: bond0, type: bond, link-aggregation: {mode: balance-rr, port: [eth2], ports-config: [{name: eth2, priority: 10}]}}\n",
		iface: "eth2", secs: []string{"bond-port"},
		want: "bond-port.prio 10\n",
	}, {
		name:  "bond port with defaults has no bond-port",
		state: "interfaces:\n- {name: bond0, type: bond, link-aggregation: {mode: balance-rr, port: [eth3], ports-config: [{name: eth3, queue-id: 0, priority: 0}]}}\n",
		iface: "eth3", secs: []string{"bond-port"},
		want: "",
	}, {
		name:  "vlan on ethernet, defaults",
		state: "interfaces:\n- {name: eth1.10, type: vlan, vlan: {base-iface: eth1, id: 10}}\n",
		iface: "eth1.10", secs: []string{"vlan"},
		want: `vlan.flags @u 1
vlan.id @u 10
vlan.parent "eth1"
`,
	}, {
		name:  "vlan 802.1ad with every flag",
		state: "interfaces:\n- {name: eth1.10, type: vlan, vlan: {base-iface: eth1, id: 10, protocol: 802.1ad, reorder-headers: true, loose-binding: true, registration-protocol: gvrp}}\n",
		iface: "eth1.10", secs: []string{"vlan"},
		want: `vlan.flags @u 7
vlan.id @u 10
vlan.parent "eth1"
vlan.protocol "802.1ad"
`,
	}, {
		name:  "vlan 802.1q is NetworkManager's default, mvrp, no reorder",
		state: "interfaces:\n- {name: eth1.10, type: vlan, vlan: {base-iface: eth1, id: 10, protocol: 802.1q, reorder-headers: false, registration-protocol: mvrp}}\n",
		iface: "eth1.10", secs: []string{"vlan"},
		want: `vlan.flags @u 8
vlan.id @u 10
vlan.parent "eth1"
`,
	}, {
		name: "vlan on bond",
		state: `
interfaces:
- {name: bond0, type: bond, link-aggregation: {mode: balance-rr, port: []}}
- {name: bond0.5, type: vlan, mtu: 1500, vlan: {base-iface: bond0, id: 5}}
`,
		iface: "bond0.5", secs: []string{"vlan", "802-3-ethernet"},
		want: `802-3-ethernet.mtu @u 1500
vlan.flags @u 1
vlan.id @u 5
vlan.parent "bond0"
`,
	}, {
		name:  "vxlan",
		state: "interfaces:\n- {name: vx0, type: vxlan, vxlan: {base-iface: eth1, id: 42, local: 192.0.2.1, remote: 192.0.2.2, destination-port: 4790, learning: true}}\n",
		iface: "vx0", secs: []string{"vxlan"},
		want: `vxlan.destination-port @u 4790
vxlan.id @u 42
vxlan.learning true
vxlan.local "192.0.2.1"
vxlan.parent "eth1"
vxlan.remote "192.0.2.2"
`,
	}, {
		name:  "vxlan without parent",
		state: "interfaces:\n- {name: vx0, type: vxlan, vxlan: {id: 42, remote: 2001:db8::2}}\n",
		iface: "vx0", secs: []string{"vxlan"},
		want: `vxlan.id @u 42
vxlan.remote "2001:db8::2"
`,
	}, {
		name:  "vrf",
		state: "interfaces:\n- {name: vrf0, type: vrf, vrf: {route-table-id: 100, port: [eth1]}}\n",
		iface: "vrf0", secs: []string{"vrf", "connection"},
		want: `connection.autoconnect true
connection.autoconnect-slaves 1
connection.id "vrf0"
connection.interface-name "vrf0"
connection.type "vrf"
connection.uuid "u"
vrf.table @u 100
`,
	}, {
		name: "vrf port keeps its IP and its routes name the table",
		state: `
interfaces:
- {name: vrf0, type: vrf, vrf: {route-table-id: 100, port: [eth1]}}
- {name: eth1, type: ethernet, ipv4: {enabled: true, address: [{ip: 192.0.2.1, prefix-length: 24}]}}
routes:
  config:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.254, next-hop-interface: eth1, table-id: 100}
`,
		iface: "eth1", secs: []string{"ipv4"},
		want: `ipv4.address-data [{"address": <"192.0.2.1">, "prefix": <@u 24>}]
ipv4.may-fail true
ipv4.method "manual"
ipv4.route-data [{"dest": <"0.0.0.0">, "next-hop": <"192.0.2.254">, "prefix": <@u 0>, "table": <@u 100>}]
`,
	}, {
		name:  "dummy",
		state: "interfaces:\n- {name: dummy0, type: dummy, mtu: 1280}\n",
		iface: "dummy0", secs: []string{"connection", "802-3-ethernet"},
		want: `802-3-ethernet.mtu @u 1280
connection.autoconnect true
connection.id "dummy0"
connection.interface-name "dummy0"
connection.type "dummy"
connection.uuid "u"
`,
	}, {
		name: "bridge vlan filtering",
		state: `
interfaces:
- name: br0
  type: linux-bridge
  bridge:
    options: {stp: {enabled: false}, vlan-protocol: 802.1ad, vlan-default-pvid: 7}
    port:
    - {name: eth1, vlan: {mode: trunk, trunk-tags: [{id: 10}, {id-range: {min: 20, max: 29}}]}}
    - {name: eth2}
`,
		iface: "br0", secs: []string{"bridge"},
		want: `bridge.stp false
bridge.vlan-default-pvid @u 7
bridge.vlan-filtering true
bridge.vlan-protocol "802.1ad"
`,
	}, {
		name:  "bridge without port vlans does not filter",
		state: "interfaces:\n- {name: br0, type: linux-bridge, bridge: {port: [{name: eth1}, {name: eth2, vlan: {}}]}}\n",
		iface: "br0", secs: []string{"bridge"},
		want: `bridge.stp false
bridge.vlan-filtering false
`,
	}, {
		name:  "bridge trunk port: ranges, native tag as pvid untagged",
		state: "interfaces:\n- {name: br0, type: linux-bridge, bridge: {port: [{name: eth1, vlan: {mode: trunk, enable-native: true, tag: 5, trunk-tags: [{id: 10}, {id-range: {min: 20, max: 29}}]}}]}}\n",
		iface: "eth1", secs: []string{"bridge-port"},
		want: `bridge-port.vlans [{"pvid": <false>, "untagged": <false>, "vid-end": <@q 10>, "vid-start": <@q 10>}, {"pvid": <false>, "untagged": <false>, "vid-end": <@q 29>, "vid-start": <@q 20>}, {"pvid": <true>, "untagged": <true>, "vid-end": <@q 5>, "vid-start": <@q 5>}]
`,
	}, {
		name:  "bridge access port",
		state: "interfaces:\n- {name: br0, type: linux-bridge, bridge: {port: [{name: eth1, stp-path-cost: 4, vlan: {mode: access, tag: 300}}]}}\n",
		iface: "eth1", secs: []string{"bridge-port"},
		want: `bridge-port.path-cost @u 4
bridge-port.vlans [{"pvid": <true>, "untagged": <true>, "vid-end": <@q 300>, "vid-start": <@q 300>}]
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := planFor(t, tc.state)[tc.iface]
			if s == nil {
				t.Fatalf("no profile for %s", tc.iface)
			}
			if diff := cmp.Diff(tc.want, flatten(s, tc.secs...)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestProfileTypeErrors: what a type's profile cannot be built from fails
// with the interface's path.
func TestProfileTypeErrors(t *testing.T) {
	for _, tc := range []struct{ name, iface, want string }{
		{"vlan without id", "{name: v0, type: vlan, vlan: {base-iface: eth1}}", "interfaces[name=v0]: vlan: a vlan needs base-iface and id"},
		{"vxlan without id", "{name: vx0, type: vxlan, vxlan: {remote: 192.0.2.1}}", "interfaces[name=vx0]: vxlan.id: a vxlan needs an id"},
		{"vrf without table", "{name: vrf0, type: vrf, vrf: {port: []}}", "interfaces[name=vrf0]: vrf.route-table-id: a vrf needs a route table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := nmstate.Decode([]byte("interfaces:\n- " + tc.iface + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Profile(ProfileInput{Iface: &st.Interfaces[0], UUID: "u"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestBondOptionsOverPreviousProfile: the options the apply gives are
// laid over the previous profile's, a mode change clears those, and a bond
// without a profile keeps its current options, as nmstate does.
func TestBondOptionsOverPreviousProfile(t *testing.T) {
	cur, err := nmstate.Decode([]byte(`
interfaces:
- {name: eth1, type: ethernet, state: up, controller: bond0}
- {name: bond0, type: bond, state: up, link-aggregation: {mode: balance-rr, port: [eth1], options: {miimon: 100, packets_per_slave: 3, num_grat_arp: 1, num_unsol_na: 1}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		previous map[string]string // nil: no profile
		desired  string
		want     string
	}{
		{"mode change clears", map[string]string{"mode": "balance-rr", "miimon": "100", "packets_per_slave": "3"},
			"{name: bond0, type: bond, link-aggregation: {mode: active-backup, options: {miimon: 200}}}",
			`{"miimon": "200", "mode": "active-backup"}`},
		{"same mode merges", map[string]string{"mode": "balance-rr", "miimon": "100", "packets_per_slave": "3"},
			"{name: bond0, type: bond, link-aggregation: {mode: balance-rr, options: {updelay: 0}}}",
			`{"miimon": "100", "mode": "balance-rr", "packets_per_slave": "3", "updelay": "0"}`},
		{"no options given keeps the profile's", map[string]string{"mode": "balance-rr", "miimon": "150"},
			"{name: bond0, type: bond, mtu: 1400}",
			`{"miimon": "150", "mode": "balance-rr"}`},
		{"arp_interval 0 clears the profile's targets", map[string]string{"mode": "balance-rr", "arp_interval": "100", "arp_ip_target": "192.0.2.1"},
			"{name: bond0, type: bond, link-aggregation: {options: {arp_interval: 0}}}",
			`{"arp_interval": "0", "mode": "balance-rr"}`},
		{"default arp_missed_max kept once present", map[string]string{"mode": "balance-rr", "arp_missed_max": "5"},
			"{name: bond0, type: bond, link-aggregation: {options: {arp_missed_max: 2}}}",
			`{"arp_missed_max": "2", "mode": "balance-rr"}`},
		{"num_grat_arp sets the one kernel attribute", map[string]string{"mode": "balance-rr", "num_grat_arp": "1", "num_unsol_na": "1"},
			"{name: bond0, type: bond, link-aggregation: {options: {num_grat_arp: 3}}}",
			`{"mode": "balance-rr", "num_grat_arp": "3", "num_unsol_na": "3"}`},
		{"no profile keeps the current options", nil,
			"{name: bond0, type: bond, link-aggregation: {options: {num_unsol_na: 4}}}",
			`{"miimon": "100", "mode": "balance-rr", "num_grat_arp": "4", "num_unsol_na": "4", "packets_per_slave": "3"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := nmstate.Decode([]byte("interfaces:\n- " + tc.desired + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := nmstate.Merge(d, cur.Clone())
			if err != nil {
				t.Fatal(err)
			}
			var existing existingProfiles
			if tc.previous != nil {
				existing = existingProfiles{"bond0": &profile{settings: map[string]map[string]dbus.Variant{
					"connection": {"uuid": dbus.MakeVariant("u")},
					"bond":       {"options": dbus.MakeVariant(tc.previous)},
				}}}
			}
			pp, err := PlanProfiles(m, existing, nil, func(*nmstate.Interface) string { return "u" })
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pp.Profiles {
				if p.Name == "bond0" {
					if diff := cmp.Diff("bond.options "+tc.want+"\n", flatten(p.Settings, "bond")); diff != "" {
						t.Errorf("(-want +got):\n%s", diff)
					}
				}
			}
		})
	}
}

// TestDeactivateFirst: the changes NetworkManager cannot make live take
// the active profile down first; others do not.
func TestDeactivateFirst(t *testing.T) {
	old := func(sec map[string]map[string]dbus.Variant) *profile { return &profile{settings: sec} }
	v := dbus.MakeVariant
	for _, tc := range []struct {
		name     string
		existing existingProfiles
		state    string
		want     []string
	}{
		{"vlan id", existingProfiles{"eth1.10": old(map[string]map[string]dbus.Variant{"vlan": {"id": v(uint32(11)), "parent": v("eth1")}})},
			"interfaces:\n- {name: eth1.10, type: vlan, vlan: {base-iface: eth1, id: 10}}\n", []string{"eth1.10"}},
		{"vlan protocol", existingProfiles{"eth1.10": old(map[string]map[string]dbus.Variant{"vlan": {"id": v(uint32(10))}})},
			"interfaces:\n- {name: eth1.10, type: vlan, vlan: {base-iface: eth1, id: 10, protocol: 802.1ad}}\n", []string{"eth1.10"}},
		{"vlan flags only", existingProfiles{"eth1.10": old(map[string]map[string]dbus.Variant{"vlan": {"id": v(uint32(10)), "protocol": v("802.1Q"), "flags": v(uint32(0))}})},
			"interfaces:\n- {name: eth1.10, type: vlan, vlan: {base-iface: eth1, id: 10}}\n", nil},
		{"vxlan id", existingProfiles{"vx0": old(map[string]map[string]dbus.Variant{"vxlan": {"id": v(uint32(1))}})},
			"interfaces:\n- {name: vx0, type: vxlan, vxlan: {base-iface: eth1, id: 2}}\n", []string{"vx0"}},
		{"vxlan remote", existingProfiles{"vx0": old(map[string]map[string]dbus.Variant{"vxlan": {"id": v(uint32(2)), "remote": v("192.0.2.1")}})},
			"interfaces:\n- {name: vx0, type: vxlan, vxlan: {base-iface: eth1, id: 2, remote: 192.0.2.9}}\n", nil},
		{"vrf table", existingProfiles{"vrf0": old(map[string]map[string]dbus.Variant{"vrf": {"table": v(uint32(100))}})},
			"interfaces:\n- {name: vrf0, type: vrf, vrf: {route-table-id: 101, port: []}}\n", []string{"vrf0"}},
		{"bridge default pvid: its ports", existingProfiles{"br0": old(map[string]map[string]dbus.Variant{"bridge": {}}), "eth1": old(nil)},
			"interfaces:\n- {name: br0, type: linux-bridge, bridge: {options: {vlan-default-pvid: 2}, port: [{name: eth1}]}}\n", []string{"eth1"}},
		{"bridge default pvid unchanged", existingProfiles{"br0": old(map[string]map[string]dbus.Variant{"bridge": {"vlan-default-pvid": v(uint32(2))}}), "eth1": old(nil)},
			"interfaces:\n- {name: br0, type: linux-bridge, bridge: {options: {vlan-default-pvid: 2}, port: [{name: eth1}]}}\n", nil},
		{"bond port queue-id", existingProfiles{"bond0": old(nil), "eth1": old(map[string]map[string]dbus.Variant{"bond-port": {"queue-id": v(uint32(1))}})},
			"interfaces:\n- {name: bond0, type: bond, link-aggregation: {mode: balance-rr, port: [eth1]}}\n", []string{"eth1"}},
		{"new profiles", nil, "interfaces:\n- {name: eth1.10, type: vlan, vlan: {base-iface: eth1, id: 10}}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := nmstate.Decode([]byte(tc.state))
			if err != nil {
				t.Fatal(err)
			}
			m, err := nmstate.Merge(st.Clone(), assumedNICs(st))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.existing {
				if p.settings == nil {
					p.settings = map[string]map[string]dbus.Variant{}
				}
				p.settings["connection"] = map[string]dbus.Variant{"uuid": v("u")}
			}
			pp, err := PlanProfiles(m, tc.existing, nil, func(*nmstate.Interface) string { return "u" })
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pp.DeactivateFirst); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestActivationOrder: controllers first, ports last, and a stacked
// interface after its parent.
func TestActivationOrder(t *testing.T) {
	for _, tc := range []struct {
		name, state string
		want        []string
	}{
		{"bond and vlan", `
interfaces:
- {name: bond0.10, type: vlan, vlan: {base-iface: bond0, id: 10}}
- {name: bond0, type: bond, link-aggregation: {mode: balance-rr, port: [eth1, eth2]}}
`, []string{"bond0", "bond0.10", "eth1", "eth2"}},
		{"vxlan on vlan on ethernet", `
interfaces:
- {name: vx0, type: vxlan, vxlan: {base-iface: eth1.10, id: 1, remote: 192.0.2.1}}
- {name: eth1.10, type: vlan, vlan: {base-iface: eth1, id: 10}}
- {name: eth1, type: ethernet}
`, []string{"eth1", "eth1.10", "vx0"}},
		{"vlan on a bridge port", `
interfaces:
- {name: eth1.10, type: vlan, vlan: {base-iface: eth1, id: 10}}
- {name: br0, type: linux-bridge, bridge: {port: [{name: eth1}]}}
`, []string{"br0", "eth1", "eth1.10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := nmstate.Decode([]byte(tc.state))
			if err != nil {
				t.Fatal(err)
			}
			m, err := nmstate.Merge(st.Clone(), assumedNICs(st))
			if err != nil {
				t.Fatal(err)
			}
			pp, err := PlanProfiles(m, nil, nil, func(*nmstate.Interface) string { return "u" })
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range pp.Profiles {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestBondPortsConfigRewritesPorts: a queue-id change in a bond's
// ports-config rewrites the port's profile (its bond-port setting holds
// it) and takes the port down first, although the state lists only the
// bond; an unchanged ports-config leaves the ports' profiles alone.
func TestBondPortsConfigRewritesPorts(t *testing.T) {
	cur, err := nmstate.Decode([]byte(`
interfaces:
- name: bond0
  type: bond
  state: up
  link-aggregation:
    mode: balance-rr
    port: [eth1, eth2]
    ports-config: [{name: eth1, queue-id: 0}, {name: eth2, queue-id: 2}]
- {name: eth1, type: ethernet, state: up, controller: bond0}
- {name: eth2, type: ethernet, state: up, controller: bond0}
`))
	if err != nil {
		t.Fatal(err)
	}
	v := dbus.MakeVariant
	existing := func() existingProfiles {
		return existingProfiles{
			"bond0": {settings: map[string]map[string]dbus.Variant{"connection": {"uuid": v("b")}}},
			"eth1":  {settings: map[string]map[string]dbus.Variant{"connection": {"uuid": v("e1")}}},
			"eth2":  {settings: map[string]map[string]dbus.Variant{"connection": {"uuid": v("e2")}, "bond-port": {"queue-id": v(uint32(2))}}},
		}
	}
	for _, tc := range []struct {
		name      string
		queueID   int
		wantEth2  string
		wantFirst []string
	}{
		{"queue-id 2 -> 3", 3, "bond-port.queue-id @u 3\n", []string{"eth2"}},
		{"queue-id unchanged", 2, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := nmstate.Decode([]byte(fmt.Sprintf(`
interfaces:
- name: bond0
  type: bond
  link-aggregation:
    mode: balance-rr
    ports-config: [{name: eth1}, {name: eth2, queue-id: %d}]
`, tc.queueID)))
			if err != nil {
				t.Fatal(err)
			}
			m, err := nmstate.Merge(d, cur.Clone())
			if err != nil {
				t.Fatal(err)
			}
			pp, err := PlanProfiles(m, existing(), nil, func(*nmstate.Interface) string { return "u" })
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, p := range pp.Profiles {
				if p.Name == "eth2" {
					got = flatten(p.Settings, "bond-port")
				}
				if p.Name == "eth1" {
					t.Errorf("eth1's profile rewritten, its ports-config did not change")
				}
			}
			if got != tc.wantEth2 {
				t.Errorf("eth2's bond-port %q, want %q", got, tc.wantEth2)
			}
			if diff := cmp.Diff(tc.wantFirst, pp.DeactivateFirst); diff != "" {
				t.Errorf("deactivated first (-want +got):\n%s", diff)
			}
		})
	}
}
