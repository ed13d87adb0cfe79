package handler

import (
	"context"
	"fmt"
	"testing"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// BenchmarkPolicyPermitToAvailable measures, for a static-address policy,
// the time from the permit annotation to the enactment's Available (read
// back through the API, polled every 20 ms): render, checkpoint, apply,
// verify, commit, two status writes. Probes off; the log of
// TestPolicyBrokenRouteInOtherTableKept shows a run with all four probes.
func BenchmarkPolicyPermitToAvailable(b *testing.B) {
	ns := nstest.New(b)
	peer := nstest.New(b)
	nstest.Veth(b, ns, "eth1", peer, "eth1p")
	n := newPolNode(b, "pol-bench", ns.Path, map[string]string{"pol-bench": "yes"})
	n.start(b, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("pol-bench-%d", i)
		p := n.createPolicy(b, name, staticAddr("eth1", fmt.Sprintf("198.51.100.%d/24", 1+i%250)), map[string]string{"pol-bench": "yes"}, nil)
		n.waitEnactment(b, name, "Pending", phaseIs(1, phasePending))
		b.StartTimer()
		n.grant(b, name, 1)
		n.waitEnactment(b, name, "Available", phaseIs(1, phaseAvailable))
		b.StopTimer()
		if err := n.c.Delete(context.Background(), p); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
