package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/api/shared"
)

func state(t *testing.T, doc string) shared.State {
	t.Helper()
	s, err := shared.NewState([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// nodeState is a current state as a handler reports it: a bridge with a
// static address and route, DHCP on eth0, IPv6 autoconf routes.
const nodeState = `
interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: true, dhcp: true}
- name: eth1
  type: ethernet
  state: up
- name: br1
  type: linux-bridge
  state: up
  bridge: {port: [{name: eth1}]}
- name: lo
  type: loopback
- name: mystery
  state: up
routes:
  config:
  - destination: 192.168.200.0/24
    next-hop-address: 192.168.100.254
    next-hop-interface: br1
  running:
  - destination: 0.0.0.0/0
    next-hop-address: 10.0.0.1
    next-hop-interface: eth0
  - destination: 192.168.200.0/24
    next-hop-address: 192.168.100.254
    next-hop-interface: br1
  - destination: 10.0.0.0/24
    next-hop-interface: eth0
  - destination: fd00::/64
    next-hop-interface: eth0
  - destination: ::/0
    next-hop-address: fe80::1
    next-hop-interface: eth0
dns-resolver: {running: {server: [10.0.0.1]}}
`

func TestNetworkInterfacesAndRoutes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		doc        string
		interfaces []Sample
		routes     []Sample
	}{
		{"no state", "", nil, nil},
		{"no routes", "interfaces: [{name: eth0, type: ethernet}]", []Sample{s(1, "ethernet", "n1")}, nil},
		{
			"by type; routes by stack, static when configured",
			nodeState,
			[]Sample{s(2, "ethernet", "n1"), s(1, "linux-bridge", "n1"), s(1, "loopback", "n1")},
			[]Sample{s(2, "n1", "ipv4", "dynamic"), s(1, "n1", "ipv4", "static"), s(2, "n1", "ipv6", "dynamic")},
		},
		{
			"a static IPv6 route",
			"routes: {config: [{destination: 'fd01::/64'}], running: [{destination: 'fd01::/64'}, {destination: 'fd01::/64', table-id: 200}]}",
			nil,
			[]Sample{s(2, "n1", "ipv6", "static")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full, err := Summarize(state(t, tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			// The controller's cache holds reduced states: same result.
			reduced, err := Summarize(ReduceState(state(t, tc.doc)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(full, reduced); diff != "" {
				t.Errorf("summary of the reduced state differs (-full +reduced):\n%s", diff)
			}
			if diff := cmp.Diff(tc.interfaces, NetworkInterfacesSamples("n1", full)); diff != "" {
				t.Errorf("interfaces (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.routes, NetworkRoutesSamples("n1", full)); diff != "" {
				t.Errorf("routes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReduceState(t *testing.T) {
	got := ReduceState(state(t, nodeState))
	want := `{"interfaces":[{"name":"eth0","type":"ethernet"},{"name":"eth1","type":"ethernet"},{"name":"br1","type":"linux-bridge"},{"name":"lo","type":"loopback"},{"name":"mystery"}],` +
		`"routes":{"config":[{"destination":"192.168.200.0/24"}],"running":[{"destination":"0.0.0.0/0"},{"destination":"192.168.200.0/24"},{"destination":"10.0.0.0/24"},{"destination":"fd00::/64"},{"destination":"::/0"}]}}`
	if diff := cmp.Diff(want, got.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !ReduceState(shared.State{}).IsZero() {
		t.Error("no state reduced to a state")
	}
	bad := shared.State{Raw: []byte(`{"interfaces": 5}`)}
	if got := ReduceState(bad); string(got.Raw) != string(bad.Raw) {
		t.Errorf("undecodable state reduced to %s, want it unchanged", got)
	}
	if _, err := Summarize(bad); err == nil {
		t.Error("Summarize of an undecodable state: no error")
	}
}
