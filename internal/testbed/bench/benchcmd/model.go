package benchcmd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// pipelineDesired is model.pipeline1000's desired state, the same shape
// as pkg/nmstate's BenchmarkPipeline1000: n/2 VLANs on eth1, each the
// only port of its own linux bridge with a static address (n interfaces),
// and routes static routes spread over the bridges.
func pipelineDesired(n, routes int) []byte {
	var b strings.Builder
	b.WriteString("interfaces:\n")
	for i := 0; i < n/2; i++ {
		fmt.Fprintf(&b, "- name: eth1.%d\n  type: vlan\n  state: up\n  vlan:\n    base-iface: eth1\n    id: %d\n", i+1, i+1)
		fmt.Fprintf(&b, "- name: br%d\n  type: linux-bridge\n  state: up\n  bridge:\n    options:\n      stp:\n        enabled: false\n    port:\n    - name: eth1.%d\n", i+1, i+1)
		fmt.Fprintf(&b, "  ipv4:\n    enabled: true\n    dhcp: false\n    address:\n    - ip: 10.%d.%d.1\n      prefix-length: 24\n", (i/256)%256, i%256)
	}
	b.WriteString("routes:\n  config:\n")
	for r := 0; r < routes; r++ {
		i := r % (n / 2)
		fmt.Fprintf(&b, "  - destination: 198.%d.%d.0/24\n    next-hop-address: 10.%d.%d.254\n    next-hop-interface: br%d\n    metric: 150\n",
			18+(r/256)%2, r%256, (i/256)%256, i%256, i+1)
	}
	return []byte(b.String())
}

// pipelineCurrent is the node before the apply: lo, eth0 with the node
// address and default route, eth1 bare.
func pipelineCurrent() *nmstate.State {
	return st.State(
		st.Interfaces(
			st.Loopback(st.MTU(65536), st.IPv4("127.0.0.1/8"), st.IPv6("::1/128")),
			st.Ethernet("eth0", st.MTU(1500), st.MAC("02:00:00:00:00:10"), st.IPv4("192.0.2.10/24"), st.IPv6Disabled()),
			st.Ethernet("eth1", st.MTU(1500), st.MAC("02:00:00:00:00:11"), st.IPv4Disabled(), st.IPv6Disabled()),
		),
		st.Routes(st.Route("0.0.0.0/0", "eth0", "192.0.2.1")),
	)
}

// pipelineOnce is what an apply computes before touching the node:
// decode, merge (which validates the desired state against the current
// one first and fails on any error), plan. It returns the plan's length.
func pipelineOnce(data []byte, cur *nmstate.State) (int, error) {
	d, err := nmstate.Decode(data)
	if err != nil {
		return 0, fmt.Errorf("decode: %w", err)
	}
	m, err := nmstate.Merge(d, cur)
	if err != nil {
		return 0, fmt.Errorf("merge: %w", err)
	}
	p, err := nmstate.PlanChanges(m)
	if err != nil {
		return 0, fmt.Errorf("plan: %w", err)
	}
	return len(p.Ops), nil
}

// modelPipeline is model.pipeline1000: the median wall time of the pure
// pipeline over 1,000 interfaces and 1,000 routes.
func modelPipeline(ctx context.Context, env Env) ([]Result, error) {
	data, cur := pipelineDesired(1000, 1000), pipelineCurrent()
	// One untimed run warms the allocator and checks the input.
	ops, err := pipelineOnce(data, cur)
	if err != nil {
		return nil, err
	}
	var times []time.Duration
	for range env.runs(11) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		if _, err := pipelineOnce(data, cur); err != nil {
			return nil, err
		}
		times = append(times, time.Since(start))
	}
	return []Result{{
		Name: "model.pipeline1000", Value: num(float64(medianDuration(times).Nanoseconds())), Unit: "ns",
		Target: "-",
		Note:   fmt.Sprintf("decode+validate+merge+plan, YAML input, %d ops; median of %d", ops, len(times)),
	}}, nil
}

func medianDuration(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
