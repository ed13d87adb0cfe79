package nm

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestMarkPortsWithoutIP: NetworkManager's bond and bridge ports show IPv6
// off unless they hold a global address; other interfaces are untouched.
func TestMarkPortsWithoutIP(t *testing.T) {
	on, off := true, false
	ctl := "br0"
	ll := nmstate.Address{IP: netip.MustParseAddr("fe80::1"), PrefixLength: 64}
	global := nmstate.Address{IP: netip.MustParseAddr("2001:db8::1"), PrefixLength: 64}
	s := &nmstate.State{Interfaces: []nmstate.Interface{
		{Name: "eth1", Controller: &ctl, IPv6: &nmstate.IPConfig{Enabled: &on, Address: []nmstate.Address{ll}}},
		{Name: "eth2", Controller: &ctl, IPv6: &nmstate.IPConfig{Enabled: &on, Address: []nmstate.Address{ll, global}}},
		{Name: "eth3", IPv6: &nmstate.IPConfig{Enabled: &on}},
		{Name: "eth4", Controller: &ctl, IPv6: &nmstate.IPConfig{Enabled: &on}},
	}}
	markPortsWithoutIP(s, map[string]bool{"eth1": true, "eth2": true, "eth3": true})
	got := map[string]bool{}
	for _, i := range s.Interfaces {
		got[i.Name] = *i.IPv6.Enabled
	}
	if diff := cmp.Diff(map[string]bool{"eth1": off, "eth2": on, "eth3": on, "eth4": on}, got); diff != "" {
		t.Errorf("ipv6 enabled (-want +got):\n%s", diff)
	}
}
