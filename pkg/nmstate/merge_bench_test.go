package nmstate_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// mtBigState builds n linux bridges, each over its own VLAN on eth1 with
// an address, and n routes through them.
func mtBigState(n int) *nmstate.State {
	s := st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000))))
	for i := 0; i < n; i++ {
		vlan, br := fmt.Sprintf("eth1.%d", i+1), fmt.Sprintf("br%d", i+1)
		a := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1})
		s.Interfaces = append(s.Interfaces,
			st.VLAN(vlan, "eth1", uint16(i+1)),
			st.LinuxBridge(br, st.Ports(vlan), st.IPv4(netip.PrefixFrom(a, 24).String())))
		dst := netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 16 + byte(i>>8), byte(i), 0}), 24)
		st.Routes(st.Route(dst.String(), br, netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 2}).String()))(s)
	}
	return s
}

// BenchmarkMerge merges a 1,000-bridge, 1,000-route desired state into an
// empty current state (everything new) and into itself simulated (nothing
// to do).
func BenchmarkMerge(b *testing.B) {
	desired := mtBigState(1000)
	empty := st.State(st.Interfaces(st.Ethernet("eth1", st.MTU(9000))))
	m, err := nmstate.Merge(desired, empty)
	if err != nil {
		b.Fatal(err)
	}
	applied := nmstate.Simulate(empty, m)
	for _, bc := range []struct {
		name string
		cur  *nmstate.State
	}{{"create", empty}, {"noop", applied}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := nmstate.Merge(desired, bc.cur); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
