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
