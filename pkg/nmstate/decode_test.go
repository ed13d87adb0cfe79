package nmstate_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// TestLenientInput pins what upstream accepts beyond the canonical form:
// each input must decode to the canonical text given.
func TestLenientInput(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"integer strings, hex, numeric bond mode, ports alias", `
interfaces:
- name: bond0
  type: bond
  mtu: "0x5dc"
  link-aggregation:
    mode: 4
    options: {miimon: '140', lacp_rate: 1, balance-slb: "no"}
    ports: [eth1]`, `interfaces:
  - name: bond0
    type: bond
    link-aggregation:
      mode: 802.3ad
      options:
        balance_slb: false
        lacp_rate: fast
        miimon: 140
      port:
        - eth1
    mtu: 1500
`},
		{"boolean spellings", `
interfaces:
- name: eth1
  type: ethernet
  accept-all-mac-addresses: "yes"
  ipv4: {enabled: on, dhcp: n, auto-dns: 1}
  ipv6: {enabled: "off"}`, `interfaces:
  - name: eth1
    type: ethernet
    accept-all-mac-addresses: true
    ipv4:
      auto-dns: true
      dhcp: false
      enabled: true
    ipv6:
      enabled: false
`},
		{"key aliases", `
interfaces:
- name: mv0
  type: mac-vlan
  mac-vlan: {base-iface: eth1, mode: bridge, accept-all-mac: true}
- name: ovs0
  type: ovs-interface
  dpdk: {devargs: "0000:01:00.0", n_rxq: 2}
- name: br0
  type: linux-bridge
  bridge:
    options: {group-fwd-mask: 8, multicast-router: 2}
    ports: [{name: eth2}]
- name: eth3
  type: ethernet
  ipv4:
    address: [{ip: 192.0.2.7, prefix-length: "24", valid-lft: forever, preferred-lft: forever}]
route-rules:
  config:
  - family: ipv4
    suppress_prefixlength: 0
    route-table: 100`, `route-rules:
  config:
    - family: ipv4
      route-table: 100
      suppress-prefix-length: 0
interfaces:
  - name: mv0
    type: mac-vlan
    mac-vlan:
      base-iface: eth1
      mode: bridge
      promiscuous: true
  - name: ovs0
    type: ovs-interface
    dpdk:
      devargs: 0000:01:00.0
      rx-queue: 2
  - name: br0
    type: linux-bridge
    bridge:
      options:
        group-forward-mask: 8
        multicast-router: enabled
      port:
        - name: eth2
  - name: eth3
    type: ethernet
    ipv4:
      address:
        - ip: 192.0.2.7
          prefix-length: 24
          preferred-life-time: forever
          valid-life-time: forever
`},
		{"non-breaking spaces, mac case, route canonicalisation", "routes:\n  config:\n  -\u00a0destination: 198.51.100.7/24\n    next-hop-interface: eth1\n  - destination: 2001:db8::1\n    next-hop-interface: eth1\ninterfaces:\n- name: eth1\n  type: ethernet\n  mac-address: aa:bb:cc:dd:ee:0f\n",
			`routes:
  config:
    - destination: 198.51.100.0/24
      next-hop-interface: eth1
    - destination: 2001:db8::1/128
      next-hop-interface: eth1
interfaces:
  - name: eth1
    type: ethernet
    mac-address: AA:BB:CC:DD:EE:0F
`},
		{"ovs stp shorthand and absent stripping", `
interfaces:
- name: br1
  type: ovs-bridge
  bridge: {options: {stp: true}}
- name: eth1.101
  type: vlan
  state: absent
  mtu: 1400
  vlan: {base-iface: eth1, id: 101}`, `interfaces:
  - name: br1
    type: ovs-bridge
    bridge:
      options:
        stp:
          enabled: true
  - name: eth1.101
    type: vlan
    state: absent
`},
		{"json input with tabs", "{\n\t\"interfaces\": [{\"name\": \"eth1\", \"type\": \"ethernet\", \"mtu\": 9000, \"ovs-db\": {\"external_ids\": {\"a\": \"1\", \"b\": null}}}],\n\t\"route-rules\": {\"config\": [{\"ip-to\": \"192.0.2.0/24\", \"fwmark\": \"0x30\", \"fwmask\": 16}]}\n}",
			`route-rules:
  config:
    - fwmark: "0x30"
      fwmask: "0x10"
      ip-to: 192.0.2.0/24
interfaces:
  - name: eth1
    type: ethernet
    mtu: 9000
    ovs-db:
      external_ids:
        a: "1"
        b: null
`},
		{"opaque query-only values keep their text", `
interfaces:
- name: eth1
  type: ethernet
  lldp:
    enabled: true
    neighbors:
    - - {type: 1, subtype: 0x4, _description: "Chassis ID", chassis-id: "00:01:02:03:04:05"}
      - {type: 8, ratio: 1.0, big: 1e21, none: ~, on: yes}`, `interfaces:
  - name: eth1
    type: ethernet
    lldp:
      enabled: true
      neighbors:
        - - _description: Chassis ID
            chassis-id: 00:01:02:03:04:05
            subtype: 4
            type: 1
          - big: 1e+21
            none: null
            "on": "yes"
            ratio: 1
            type: 8
`},
		{"yaml flow style", "{interfaces: [{name: eth1, type: ethernet, mtu: 1500}]}", `interfaces:
  - name: eth1
    type: ethernet
    mtu: 1500
`},
		{"empty document", "", "{}\n"},
		{"empty lists stay distinct from unset", `
dns-resolver:
  config: {server: [], search: []}
interfaces: []`, `dns-resolver:
  config:
    search: []
    server: []
interfaces: []
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := nmstate.Decode([]byte(tc.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			got, err := nmstate.EncodeYAML(s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("canonical form (-want +got):\n%s", diff)
			}
			checkRoundTrip(t, s)
		})
	}
}

func TestUnsetIsNotZero(t *testing.T) {
	s, err := nmstate.Decode([]byte(`
interfaces:
- name: eth1
  type: ethernet
  controller: ""
  ipv4: {address: []}
- name: eth2
  type: ethernet`))
	if err != nil {
		t.Fatal(err)
	}
	want := st.State(st.Interfaces(
		st.Ethernet("eth1", st.StateOf(""), st.Controller(""),
			st.With(func(i *nmstate.Interface) { i.IPv4 = &nmstate.IPConfig{Address: []nmstate.Address{}} })),
		st.Ethernet("eth2", st.StateOf("")),
	))
	if diff := cmp.Diff(want, s, cmpOpts); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestBuildersEncode(t *testing.T) {
	s := st.State(
		st.Interfaces(
			st.Bond("bond0", st.Mode("802.3ad"), st.Ports("eth1", "eth2"), st.IPv4("192.0.2.1/24")),
			st.VLAN("bond0.10", "bond0", 10, st.MTU(1500)),
		),
		st.Routes(st.Route("0.0.0.0/0", "bond0", "192.0.2.254", st.Metric(100))),
	)
	if errs := nmstate.Validate(s, nil); len(errs) > 0 {
		t.Fatalf("Validate: %v", errs)
	}
	yml, _ := checkRoundTrip(t, s)
	golden(t, "builders.yml", yml)
}

func TestErrorsCarryLineAndKind(t *testing.T) {
	_, err := nmstate.Decode([]byte("interfaces:\n- name: eth1\n  mtu: x\n"))
	var l nmstate.ErrorList
	if !errors.As(err, &l) || len(l) != 1 {
		t.Fatalf("got %v", err)
	}
	if l[0].Line != 3 || l[0].Path != "interfaces[0].mtu" {
		t.Errorf("got line %d path %s", l[0].Line, l[0].Path)
	}
	if !errors.Is(err, &nmstate.Error{Kind: nmstate.InvalidArgument}) || nmstate.KindOf(err) != nmstate.InvalidArgument {
		t.Errorf("kind not found through errors.Is/KindOf")
	}
	if got := err.Error(); !strings.HasPrefix(got, "interfaces[0].mtu: ") {
		t.Errorf("Error() = %q", got)
	}
}

func TestUnmarshalJSONIsStrict(t *testing.T) {
	var s nmstate.State
	if err := s.UnmarshalJSON([]byte(`{"interfaces":[{"name":"eth1","bogus":1}]}`)); err == nil {
		t.Fatal("unknown key accepted")
	}
}

func TestCloneIsDeep(t *testing.T) {
	b, err := os.ReadFile("testdata/nmstate-examples/linuxbrige_eth1_up_port_vlan.yml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := nmstate.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Clone()
	if diff := cmp.Diff(s, c, cmpOpts); diff != "" {
		t.Fatalf("clone differs (-orig +clone):\n%s", diff)
	}
	*c.Interfaces[1].LinuxBridge.Port[0].VLAN.Tag = 7
	c.Interfaces[1].LinuxBridge.Port[0].VLAN.TrunkTags[0].ID = nil
	if *s.Interfaces[1].LinuxBridge.Port[0].VLAN.Tag != 100 || s.Interfaces[1].LinuxBridge.Port[0].VLAN.TrunkTags[0].ID == nil {
		t.Error("editing the clone changed the original")
	}
}

func TestTree(t *testing.T) {
	s, err := nmstate.Decode([]byte("interfaces:\n- name: bond0\n  type: bond\n  mtu: '9000'\n  link-aggregation: {mode: 1, ports: [eth1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := nmstate.Tree(&s.Interfaces[0])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "bond0", "type": "bond", "mtu": json.Number("9000"),
		"link-aggregation": map[string]any{"mode": "active-backup", "port": []any{"eth1"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
