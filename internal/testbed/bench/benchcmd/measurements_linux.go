package benchcmd

import (
	"time"

	"github.com/knmstate/knmstate/internal/testbed/bench"
)

// Measurements lists the issue's measurements in the order `knmstate
// bench` runs them, each with a timeout that bounds set-up, measuring and
// clean-up.
func Measurements() []Measurement {
	engine := map[string]bench.Named{}
	for _, c := range bench.Comparisons() {
		engine[c.Name] = c
	}
	return []Measurement{
		{Name: "engine.apply50", Timeout: 3 * time.Minute,
			Run: cpuMeasurement(engine["engine.apply50"], 21, "<= 1.2", "<= 1.3", "iproute2", "")},
		{Name: "engine.show1000", Timeout: 3 * time.Minute,
			Run: engineMeasurement(engine["engine.show1000"], 5, "<= 1.0", "")},
		{Name: "engine.bridges1000", Timeout: 8 * time.Minute,
			Run: engineMeasurement(engine["engine.bridges1000"], 3, "<= 1.0", "upstream nmstate with NetworkManager: 513s for 1,000 bridges over 1,000 VLANs")},
		{Name: "ovs.apply50", Timeout: 4 * time.Minute,
			Run: baselineMeasurement(engine["ovs.apply50"], 9, "<= 1.2", "one ovs-vsctl transaction + ip -batch", "")},
		{Name: "ovs.show50", Timeout: 2 * time.Minute,
			Run: baselineMeasurement(engine["ovs.show50"], 11, "<= 1.0", "ovs-vsctl show + ip -j addr show", "")},
		{Name: "model.pipeline1000", Timeout: time.Minute, Run: modelPipeline},
		{Name: "policy.available3", Timeout: 5 * time.Minute, Run: policyAvailable3},
		{Name: "policy.rollout50", Timeout: 5 * time.Minute, Run: policyRollout50},
		{Name: "policy.rollout1000", Timeout: 5 * time.Minute, Run: policyRollout1000},
		{Name: "nns.idle", Timeout: 4 * time.Minute, Run: nnsIdle},
		{Name: "nns.scale", Timeout: 5 * time.Minute, Run: nnsScale},
		{Name: "handler.rss", Timeout: 2 * time.Minute, Run: handlerRSS},
		{Name: "handler.workingset", Timeout: 4 * time.Minute, Run: handlerWorkingSet},
	}
}
