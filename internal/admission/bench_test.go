package admission

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkValidatePolicy measures admission's cost per policy: an
// example without templates, one with templates (the capture language's
// VLAN example), and a large policy (100 VLANs over a bond, each with an
// address).
func BenchmarkValidatePolicy(b *testing.B) {
	var large strings.Builder
	large.WriteString("desiredState:\n  interfaces:\n  - {name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1, eth2]}}\n")
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&large, "  - {name: bond0.%d, type: vlan, vlan: {base-iface: bond0, id: %d}, ipv4: {enabled: true, address: [{ip: 10.%d.0.1, prefix-length: 24}]}}\n", i, i, i)
	}
	for _, bc := range []struct{ name, file, doc string }{
		{name: "bond-vlan", file: "examples/bond-vlan.yaml"},
		{name: "templates", file: "pkg/nmpolicy/testdata/ex1-vlan-on-default-route-nic/policy.yaml"},
		{name: "100-vlans", doc: large.String()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := spec(b, bc.doc)
			if bc.file != "" {
				for _, p := range validPolicies(b) {
					if p.name == bc.file {
						s = p.spec
					}
				}
				if s.DesiredState.IsZero() {
					b.Fatalf("%s not found", bc.file)
				}
			}
			if errs := ValidatePolicy(s); len(errs) > 0 {
				b.Fatal(errs)
			}
			b.ReportAllocs()
			for b.Loop() {
				ValidatePolicy(s)
			}
		})
	}
}
