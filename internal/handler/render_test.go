package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/pkg/nmpolicy"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

var renderNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mustState(t *testing.T, doc string) shared.State {
	t.Helper()
	s, err := shared.NewState([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustDecode(t *testing.T, doc string) *nmstate.State {
	t.Helper()
	s, err := nmstate.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const renderCurrent = `
interfaces:
- {name: eth1, type: ethernet, state: up, mtu: 9000}
- {name: eth2, type: ethernet, state: up, mtu: 1500}
routes:
  running:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth2, table-id: 254}
`

func TestRenderDefaultBridgeVLANs(t *testing.T) {
	spec := shared.NodeNetworkConfigurationPolicySpec{DesiredState: mustState(t, `
interfaces:
- name: br1
  type: linux-bridge
  state: up
  bridge:
    port:
    - name: eth1
    - name: eth2
      vlan: {}
- name: br2
  type: linux-bridge
  bridge:
    port:
    - name: eth3
`)}
	tests := []struct {
		name string
		opts renderOptions
		want string
		// wantNoTrunk: ports reported as left without the default trunk.
		wantNoTrunk []string
	}{
		{"kernel filters VLANs: upstream's trunk on ports without a vlan key", renderOptions{DefaultBridgeVLANs: true}, `
interfaces:
- name: br1
  type: linux-bridge
  state: up
  bridge:
    port:
    - name: eth1
      vlan: {mode: trunk, trunk-tags: [{id-range: {min: 2, max: 4094}}]}
    - name: eth2
      vlan: {}
- name: br2
  type: linux-bridge
  bridge:
    port:
    - name: eth3
`, nil},
		{"kernel without VLAN filtering: ports as written, and said", renderOptions{}, `
interfaces:
- name: br1
  type: linux-bridge
  state: up
  bridge:
    port:
    - name: eth1
    - name: eth2
      vlan: {}
- name: br2
  type: linux-bridge
  bridge:
    port:
    - name: eth3
`, []string{"br1/eth1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := renderPolicy(spec, mustDecode(t, renderCurrent), nil, renderNow, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			wantJSON, _ := nmstate.EncodeJSON(mustDecode(t, tt.want))
			var compact bytes.Buffer
			if err := json.Compact(&compact, wantJSON); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(compact.String(), out.Status.String()); diff != "" {
				t.Errorf("rendered desired state (-want +got):\n%s", diff)
			}
			gotJSON, _ := nmstate.EncodeJSON(out.Desired)
			compact.Reset()
			if err := json.Compact(&compact, gotJSON); err != nil {
				t.Fatal(err)
			}
			if compact.String() != out.Status.String() {
				t.Errorf("Desired and Status differ:\n%s\n%s", compact.String(), out.Status)
			}
			if diff := cmp.Diff(tt.wantNoTrunk, out.NoDefaultTrunk); diff != "" {
				t.Errorf("ports without the default trunk (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderCapturesAndCache(t *testing.T) {
	spec := shared.NodeNetworkConfigurationPolicySpec{
		Capture: map[string]string{
			"gw":     `routes.running.destination=="0.0.0.0/0"`,
			"uplink": `interfaces.name==capture.gw.routes.running.0.next-hop-interface`,
		},
		DesiredState: mustState(t, `
interfaces:
- name: uplink.10
  type: vlan
  state: up
  mtu: "{{ capture.uplink.interfaces.0.mtu }}"
  vlan: {base-iface: "{{ capture.uplink.interfaces.0.name }}", id: 10}
`),
	}
	out, err := renderPolicy(spec, mustDecode(t, renderCurrent), nil, renderNow, renderOptions{DefaultBridgeVLANs: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Status.String(), `"base-iface":"eth2"`) || !strings.Contains(out.Status.String(), `"mtu":1500`) {
		t.Errorf("templates not resolved: %s", out.Status)
	}
	if len(out.Captured) != 2 || !out.Captured["uplink"].MetaInfo.TimeStamp.Time.Equal(renderNow) {
		t.Fatalf("captured = %+v", out.Captured)
	}
	// The cache wins over a changed node: the uplink stays eth2.
	later := renderNow.Add(time.Hour)
	moved := mustDecode(t, `
interfaces:
- {name: eth1, type: ethernet, state: up, mtu: 9000}
routes:
  running:
  - {destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth1, table-id: 254}
`)
	again, err := renderPolicy(spec, moved, out.Captured, later, renderOptions{DefaultBridgeVLANs: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out.Status.String(), again.Status.String()); diff != "" {
		t.Errorf("render from the cache differs (-first +again):\n%s", diff)
	}
	if !again.Captured["uplink"].MetaInfo.TimeStamp.Time.Equal(renderNow) {
		t.Errorf("cached capture re-evaluated: %v", again.Captured["uplink"].MetaInfo)
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name, desired string
		capture       map[string]string
		want          string
	}{
		{"bad enum", "interfaces: [{name: eth1, type: ethernet, state: bogus}]", nil, "interfaces[0].state"},
		{"out of range", "interfaces: [{name: v, type: vlan, vlan: {base-iface: eth1, id: 5000}}]", nil, "interfaces[0].vlan.id"},
		{"unknown capture", `interfaces: [{name: "{{ capture.nope.interfaces.0.name }}", type: ethernet}]`, nil, "nope"},
		{"bad capture", `interfaces: [{name: eth1}]`, map[string]string{"x": `interfaces.name==`}, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := shared.NodeNetworkConfigurationPolicySpec{Capture: tt.capture, DesiredState: mustState(t, tt.desired)}
			_, err := renderPolicy(spec, mustDecode(t, renderCurrent), nil, renderNow, renderOptions{DefaultBridgeVLANs: true})
			var re *renderError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want a render error", err)
			}
			if !strings.HasPrefix(err.Error(), "failure generating desiredState and capturedStates: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want the generation prefix and %q", err, tt.want)
			}
		})
	}
}

func TestRenderEmpty(t *testing.T) {
	for _, doc := range []string{"", "{}", "interfaces: []"} {
		out, err := renderPolicy(shared.NodeNetworkConfigurationPolicySpec{DesiredState: mustState(t, doc)}, mustDecode(t, renderCurrent), nil, renderNow, renderOptions{DefaultBridgeVLANs: true})
		if err != nil || out.Desired != nil {
			t.Errorf("%q: Desired = %v, err = %v; want nothing to apply", doc, out.Desired, err)
		}
	}
}

func TestRenderFeatures(t *testing.T) {
	tests := []struct {
		name, desired string
		want          []string
	}{
		{"none", "interfaces: [{name: eth1, type: ethernet, state: up}]", nil},
		{"routes and dns, sorted", `
dns-resolver: {config: {server: [192.0.2.1], search: [example.com]}}
routes: {config: [{destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth2}]}
`, []string{"static-dns-name-server", "static-dns-search", "static-route"}},
		{"custom dhcp hostname", "interfaces: [{name: eth1, type: ethernet, ipv4: {enabled: true, dhcp: true, dhcp-custom-hostname: n1}}]",
			[]string{"dhcpv4-custom-hostname"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := renderPolicy(shared.NodeNetworkConfigurationPolicySpec{DesiredState: mustState(t, tt.desired)},
				mustDecode(t, renderCurrent), nil, renderNow, renderOptions{DefaultBridgeVLANs: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.Features); diff != "" {
				t.Errorf("features (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSuccessMessage: upstream's text, and what the node could not do of
// upstream's defaults after it.
func TestSuccessMessage(t *testing.T) {
	tests := []struct {
		name string
		out  rendered
		want string
	}{
		{"everything applied", rendered{}, "successfully reconciled"},
		{"no default trunk", rendered{NoDefaultTrunk: []string{"br0/eth1", "br1/eth2"}},
			"successfully reconciled; the default VLAN trunk (2-4094) was not applied to linux-bridge ports br0/eth1, br1/eth2: " +
				"this node's kernel cannot filter VLANs on bridges (CONFIG_BRIDGE_VLAN_FILTERING), so the bridges pass untagged traffic only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, successMessage(tt.out)); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderConversions: each form change of rendering gives what the
// JSON round trips it replaced gave.
func TestRenderConversions(t *testing.T) {
	t.Run("current state", func(t *testing.T) {
		for _, doc := range []string{renderCurrent, `
interfaces:
- name: bond0
  type: bond
  state: up
  mac-address: 02:00:00:00:00:01
  ipv4: {enabled: true, address: [{ip: 192.0.2.5, prefix-length: 24}]}
  link-aggregation: {mode: 802.3ad, port: [eth1, eth2], options: {miimon: 100}}
- {name: eth1, type: ethernet, state: up, mtu: 9000, ethtool: {feature: {rx-checksum: true}}}
dns-resolver: {running: {server: [192.0.2.53]}}
route-rules: {config: [{ip-from: 192.0.2.0/24, route-table: 100, priority: 1000}]}
`} {
			st := mustDecode(t, doc)
			got, err := currentDocument(st)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := nmstate.EncodeJSON(st)
			if err != nil {
				t.Fatal(err)
			}
			want, err := nmpolicy.DecodeDocument(raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("current document (-indented JSON round trip +compact):\n%s", diff)
			}
		}
	})
	t.Run("capture cache", func(t *testing.T) {
		at := metav1.NewTime(renderNow)
		for _, tt := range []struct {
			name  string
			cache map[string]shared.NodeNetworkConfigurationEnactmentCapturedState
			want  nmpolicy.CapturedStates
		}{
			{"none", nil, nil},
			{"states and an empty one", map[string]shared.NodeNetworkConfigurationEnactmentCapturedState{
				"gw": {State: mustState(t, `{"routes":{"running":[{"destination":"0.0.0.0/0","table-id":254}]}}`),
					MetaInfo: shared.NodeNetworkConfigurationEnactmentMetaInfo{Version: "0", TimeStamp: at}},
				"none": {MetaInfo: shared.NodeNetworkConfigurationEnactmentMetaInfo{Version: "0", TimeStamp: at}},
			}, nmpolicy.CapturedStates{
				"gw": {State: map[string]any{"routes": map[string]any{"running": []any{map[string]any{"destination": "0.0.0.0/0", "table-id": int64(254)}}}},
					MetaInfo: nmpolicy.MetaInfo{Version: "0", Time: renderNow}},
				"none": {MetaInfo: nmpolicy.MetaInfo{Version: "0", Time: renderNow}},
			}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				got, err := capturedFromStatus(tt.cache)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("capturedFromStatus (-want +got):\n%s", diff)
				}
				back, err := capturedToStatus(got)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.cache, back); diff != "" {
					t.Errorf("capturedToStatus of it (-cache +back):\n%s", diff)
				}
			})
		}
	})
}
