package nmstate_test

import (
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

func TestSimulate(t *testing.T) {
	for _, tc := range []struct {
		name             string
		current, desired *nmstate.State
		want             *nmstate.State
	}{
		{
			name:    "absent interface disappears",
			current: st.State(st.Interfaces(st.Dummy("d0"), st.Dummy("d1"))),
			desired: st.State(st.Interfaces(st.Dummy("d0", st.Absent()))),
			want:    st.State(st.Interfaces(st.Dummy("d1"))),
		},
		{
			name:    "virtual down interface disappears",
			current: st.State(st.Interfaces(st.Dummy("d0"))),
			desired: st.State(st.Interfaces(st.Dummy("d0", st.Down()))),
			want:    &nmstate.State{Interfaces: []nmstate.Interface{}},
		},
		{
			name:    "absent physical interface stays down without ip or controller",
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500), st.IPv4("192.0.2.1/24")))),
			desired: st.State(st.Interfaces(st.Ethernet("eth1", st.Absent()))),
			want:    st.State(st.Interfaces(st.Ethernet("eth1", st.Down(), st.MTU(1500), st.IPv4Disabled(), st.IPv6Disabled()))),
		},
		{
			name:    "new interface appended, changed one replaced in place",
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)), st.Ethernet("eth2"))),
			desired: st.State(st.Interfaces(st.Dummy("d0"), st.Ethernet("eth1", st.MTU(9000)))),
			want:    st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)), st.Ethernet("eth2"), st.Dummy("d0"))),
		},
		{
			name:    "created veth shows its peer",
			current: &nmstate.State{},
			desired: st.State(st.Interfaces(st.Veth("v0", "v0p"))),
			want:    st.State(st.Interfaces(st.Veth("v0", "v0p"), st.Veth("v0p", "v0"))),
		},
		{
			name: "detached port has no controller key and vanished ports leave lists",
			current: st.State(st.Interfaces(
				st.LinuxBridge("br0", st.Ports("eth1", "d0")),
				st.Ethernet("eth1", st.Controller("br0"), st.IPv4Disabled(), st.IPv6Disabled()),
				st.Dummy("d0", st.Controller("br0"), st.IPv4Disabled(), st.IPv6Disabled()),
			)),
			desired: st.State(st.Interfaces(st.Dummy("d0", st.Absent()), st.Ethernet("eth1", st.Controller("")))),
			want: st.State(st.Interfaces(
				st.LinuxBridge("br0", st.Ports()),
				st.Ethernet("eth1", st.IPv4Disabled(), st.IPv6Disabled()),
			)),
		},
		{
			name:    "routes, dns and hostname replaced",
			current: st.State(st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24"))), st.Routes(st.Route("0.0.0.0/0", "eth1", "192.0.2.254"))),
			desired: &nmstate.State{
				Hostname: &nmstate.Hostname{Config: st.Ptr("h1")},
				Routes:   &nmstate.Routes{Config: []nmstate.Route{st.AbsentRoute()}},
			},
			want: &nmstate.State{
				Hostname:   &nmstate.Hostname{Running: st.Ptr("h1"), Config: st.Ptr("h1")},
				Routes:     &nmstate.Routes{Config: []nmstate.Route{}},
				Interfaces: []nmstate.Interface{st.Ethernet("eth1", st.IPv4("192.0.2.1/24"))},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := nmstate.Merge(tc.desired, tc.current)
			if err != nil {
				t.Fatal(err)
			}
			got := nmstate.Simulate(tc.current, m)
			mtDiff(t, "simulated state", tc.want, got)
		})
	}
}

func TestSimulateNil(t *testing.T) {
	got := nmstate.Simulate(nil, nil)
	mtDiff(t, "state", &nmstate.State{}, got)
}
