package nmstate_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// pipelineDesired is the benchmark's desired state: n/2 VLANs on eth1,
// each the only port of its own linux bridge with a static address
// (n interfaces), and routes static routes spread over the bridges.
func pipelineDesired(n, routes int) string {
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
	return b.String()
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

func yamlToJSON(b *testing.B, y string) []byte {
	s, err := nmstate.Decode([]byte(y))
	if err != nil {
		b.Fatal(err)
	}
	j, err := json.Marshal(s)
	if err != nil {
		b.Fatal(err)
	}
	return j
}

// BenchmarkPipeline1000: decode + validate + merge + plan of 1,000
// interfaces (500 VLANs, each the port of its own linux bridge) and 1,000
// routes against a current state holding the base NICs (validation runs
// inside Merge).
func BenchmarkPipeline1000(b *testing.B) {
	y := pipelineDesired(1000, 1000)
	inputs := []struct {
		name string
		data []byte
	}{{"yaml", []byte(y)}, {"json", yamlToJSON(b, y)}}
	cur := pipelineCurrent()
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			for b.Loop() {
				benchPipeline(b, in.data, cur)
			}
		})
	}
}

// benchPipeline is what an apply computes before touching the node:
// Decode, then Merge, which validates the desired state against the
// current one first (Validate(desired, current)) and fails on any error,
// then PlanChanges. Validate is not called separately: it would run twice.
func benchPipeline(b *testing.B, data []byte, cur *nmstate.State) {
	d, err := nmstate.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	m, err := nmstate.Merge(d, cur)
	if err != nil {
		b.Fatal(err)
	}
	p, err := nmstate.PlanChanges(m)
	if err != nil {
		b.Fatal(err)
	}
	if len(p.Ops) < 4000 {
		b.Fatalf("plan has %d ops, want at least 4000", len(p.Ops))
	}
}

// TestPipelineBenchInput keeps the benchmark honest: its input plans to
// the expected operations.
func TestPipelineBenchInput(t *testing.T) {
	d, err := nmstate.Decode([]byte(pipelineDesired(4, 3)))
	if err != nil {
		t.Fatal(err)
	}
	cur := pipelineCurrent()
	if errs := nmstate.Validate(d, cur); len(errs) > 0 {
		t.Fatal(errs)
	}
	m, err := nmstate.Merge(d, cur)
	if err != nil {
		t.Fatal(err)
	}
	p, err := nmstate.PlanChanges(m)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"link add br1 type linux-bridge options.stp.enabled false",
		"link add br2 type linux-bridge options.stp.enabled false",
		"link add eth1.1 link eth1 type vlan id 1",
		"link set eth1.1 master br1",
		"link add eth1.2 link eth1 type vlan id 2",
		"link set eth1.2 master br2",
		"sysctl set net.ipv6.conf.eth1.1.disable_ipv6 1",
		"sysctl set net.ipv6.conf.eth1.2.disable_ipv6 1",
		"link set br1 up",
		"link set br2 up",
		"link set eth1.1 up",
		"link set eth1.2 up",
		"addr add 10.0.0.1/24 dev br1",
		"addr add 10.0.1.1/24 dev br2",
		"route replace 198.18.0.0/24 via 10.0.0.254 dev br1 metric 150 table 254 proto static",
		"route replace 198.18.1.0/24 via 10.0.1.254 dev br2 metric 150 table 254 proto static",
		"route replace 198.18.2.0/24 via 10.0.0.254 dev br1 metric 150 table 254 proto static",
	}
	if diff := cmp.Diff(want, planLines(p)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

// BenchmarkPipeline1000Stages times each stage of BenchmarkPipeline1000
// alone, to show where the time goes.
func BenchmarkPipeline1000Stages(b *testing.B) {
	y := []byte(pipelineDesired(1000, 1000))
	j := yamlToJSON(b, string(y))
	cur := pipelineCurrent()
	d, err := nmstate.Decode(y)
	if err != nil {
		b.Fatal(err)
	}
	m, err := nmstate.Merge(d, cur)
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct {
		name string
		data []byte
	}{{"decode-yaml", y}, {"decode-json", j}} {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := nmstate.Decode(in.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if errs := nmstate.Validate(d, cur); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("merge", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := nmstate.Merge(d, cur); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := nmstate.PlanChanges(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPipelineMergeValidates backs benchPipeline's shortcut: Merge rejects
// what Validate rejects, so the pipeline does not call Validate itself.
func TestPipelineMergeValidates(t *testing.T) {
	d, err := nmstate.Decode([]byte("interfaces:\n- {name: v1, type: vlan, vlan: {base-iface: eth1, id: 5000}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cur := pipelineCurrent()
	if errs := nmstate.Validate(d, cur); len(errs) == 0 {
		t.Fatal("Validate accepts the faulty state; the test needs another one")
	}
	if _, err := nmstate.Merge(d, cur); err == nil {
		t.Error("Merge accepted a state Validate rejects: benchPipeline must call Validate")
	}
}
