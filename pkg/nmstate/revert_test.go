package nmstate_test

import (
	"net/netip"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

func TestRevert(t *testing.T) {
	for _, tc := range []struct {
		name            string
		before, desired *nmstate.State
		want            *nmstate.State
	}{
		{
			name:    "no_op reverts with the empty state",
			before:  mtLabState(),
			desired: st.State(st.Interfaces(mtLabState().Interfaces[0])),
			want:    &nmstate.State{},
		},
		{
			name:    "add_new_dummy reverts to absent",
			before:  mtLabState(),
			desired: st.State(st.Interfaces(st.Dummy("d0"))),
			want:    st.State(st.Interfaces(st.Dummy("d0", st.Absent()))),
		},
		{
			name:    "change_mtu reverts to the old mtu without query-only keys",
			before:  mtLabState(),
			desired: st.State(st.Interfaces(st.Ethernet("eth2", st.MTU(9000)))),
			want: st.State(st.Interfaces(st.Ethernet("eth2", st.MTU(1500), st.MAC("02:00:00:00:00:02"), st.IPv4Disabled(), st.IPv6Disabled(),
				st.With(func(i *nmstate.Interface) { i.MinMTU = nil })))),
		},
		{
			name:    "add_route reverts to an exact absent route",
			before:  mtLabState(),
			desired: st.State(st.Routes(st.Route("198.51.100.0/24", "eth1", "", st.Metric(5)))),
			want: st.State(st.Routes(st.AbsentRoute(func(r *nmstate.Route) {
				*r = st.Route("198.51.100.0/24", "eth1", "", st.Metric(5))
				r.State = st.Ptr(nmstate.RouteState("absent"))
				r.NextHopAddress = &netip.Addr{}
				r.Source = &netip.Addr{}
			}))),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nmstate.Revert(tc.before, tc.desired)
			if err != nil {
				t.Fatal(err)
			}
			mtDiff(t, "revert", tc.want, got)
		})
	}
}

func TestRevertInvalidDesired(t *testing.T) {
	_, err := nmstate.Revert(mtLabState(), st.State(st.Interfaces(st.VLAN("v", "eth1", 5000))))
	if nmstate.KindOf(err) != nmstate.InvalidArgument {
		t.Fatalf("want an InvalidArgument error, got %v", err)
	}
}

// TestRevertOVSInternalInterface: undoing the removal of br-ex gives its
// internal interface br-ex back with controller br-ex (its own name, as
// shown), and that revert state merges into the state after the removal.
func TestRevertOVSInternalInterface(t *testing.T) {
	before, err := nmstate.Decode([]byte(`
interfaces:
- name: br-ex
  type: ovs-bridge
  state: up
  bridge:
    port: [{name: br-ex}, {name: eth1}]
- name: br-ex
  type: ovs-interface
  state: up
  controller: br-ex
  ipv4: {enabled: true, dhcp: true}
- name: eth1
  type: ethernet
  state: up
  controller: br-ex
`))
	if err != nil {
		t.Fatal(err)
	}
	desired, err := nmstate.Decode([]byte(`
interfaces:
- {name: br-ex, type: ovs-bridge, state: absent}
- {name: br-ex, type: ovs-interface, state: absent}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: true, dhcp: true}}
`))
	if err != nil {
		t.Fatal(err)
	}
	revert, err := nmstate.Revert(before, desired)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nmstate.Merge(desired, before)
	if err != nil {
		t.Fatal(err)
	}
	after := nmstate.Simulate(before, m)
	if _, err := nmstate.Merge(revert, after); err != nil {
		t.Fatalf("merging the revert state into the state after: %v", err)
	}
	var ctrl string
	for _, ifc := range revert.Interfaces {
		if ifc.Type == nmstate.TypeOVSInterface && ifc.Controller != nil {
			ctrl = *ifc.Controller
		}
	}
	if ctrl != "br-ex" {
		t.Errorf("revert gives ovs-interface br-ex controller %q, want br-ex", ctrl)
	}
}
