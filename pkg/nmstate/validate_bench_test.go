package nmstate_test

import (
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// BenchmarkValidate validates the 1,000-bridge desired state (2,001
// interfaces, 1,000 routes) against an empty node (everything new) and
// against the node after applying it (every interface exists): the second
// shows whether existence checks scale with the current state's size.
func BenchmarkValidate(b *testing.B) {
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
				if errs := nmstate.Validate(desired, bc.cur); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}
