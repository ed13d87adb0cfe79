package nmstate_test

import (
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

func TestShows(t *testing.T) {
	current := st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500), st.IPv4("192.0.2.1/24"))))
	for _, tc := range []struct {
		name    string
		desired *nmstate.State
		want    bool
	}{
		{"subset in place", st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(1500)))), true},
		{"nothing asked", &nmstate.State{}, true},
		{"other mtu", st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000)))), false},
		{"missing interface", st.State(st.Interfaces(st.LinuxBridge("br0"))), false},
		// A port of a bridge that does not exist does not merge.
		{"does not merge", st.State(st.Interfaces(st.Ethernet("eth1", st.Controller("br9")))), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nmstate.Shows(current, tc.desired); got != tc.want {
				t.Errorf("Shows = %v, want %v", got, tc.want)
			}
		})
	}
}
