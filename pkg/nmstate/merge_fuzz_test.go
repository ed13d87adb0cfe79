package nmstate_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// FuzzMerge decodes the input as a desired state and merges it into a fixed
// current state (bonds, bridges, a VLAN, routes, rules, DNS). Nothing may
// panic; every failure must be a non-empty ErrorList whose entries have a
// kind and a detail; a successful merge must simulate, re-merge and revert
// without panicking, and its change set must encode.
func FuzzMerge(f *testing.F) {
	for _, pattern := range []string{"testdata/cases/*/desired.yaml", "testdata/nmstate-examples/*.yml", "testdata/fuzz-merge-seeds/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	var currents []*nmstate.State
	for _, c := range []string{"bond_linuxbridge_vlan_absent", "eth1_del_all_routes", "change_route_rule", "dns_remove", "veth1_absent"} {
		b, err := os.ReadFile(filepath.Join("testdata", "cases", c, "current.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		s, err := nmstate.Decode(b)
		if err != nil {
			f.Fatal(err)
		}
		currents = append(currents, s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		desired, err := nmstate.Decode(data)
		if err != nil {
			return
		}
		for _, cur := range append(currents, nil) {
			m, err := nmstate.Merge(desired, cur)
			if err != nil {
				var l nmstate.ErrorList
				if !errors.As(err, &l) || len(l) == 0 {
					t.Fatalf("merge error is not a non-empty ErrorList: %v", err)
				}
				for _, e := range l {
					if e.Kind == 0 || e.Detail == "" {
						t.Fatalf("merge error without kind or detail: %#v", e)
					}
				}
				continue
			}
			doc := &nmstate.State{Interfaces: m.Interfaces}
			if m.Routes != nil {
				doc.Routes = &nmstate.Routes{Config: m.Routes}
			}
			if m.RouteRules != nil {
				doc.RouteRules = &nmstate.RouteRules{Config: m.RouteRules}
			}
			if _, err := nmstate.EncodeYAML(doc); err != nil {
				t.Fatalf("encoding the change set: %v", err)
			}
			after := nmstate.Simulate(cur, m)
			_, _ = nmstate.Merge(desired, after)
			if cur != nil {
				if rev, err := nmstate.Revert(cur, desired); err == nil {
					_, _ = nmstate.Merge(rev, after)
				}
			}
		}
	})
}

// FuzzMergeIdempotent checks the model's fixed point on fuzzed desired
// states: once a perfect backend applied a merge (Simulate), merging the
// same desired state again succeeds and changes nothing.
func FuzzMergeIdempotent(f *testing.F) {
	files, err := filepath.Glob("testdata/cases/*/desired.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "cases", "bond_linuxbridge_vlan_absent", "current.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	cur, err := nmstate.Decode(b)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		desired, err := nmstate.Decode(data)
		if err != nil {
			return
		}
		m, err := nmstate.Merge(desired, cur)
		if err != nil {
			return
		}
		after := nmstate.Simulate(cur, m)
		again, err := nmstate.Merge(desired, after)
		if err != nil {
			t.Fatalf("desired state rejected against its own result: %v", err)
		}
		doc := &nmstate.State{Interfaces: again.Interfaces, Hostname: again.Hostname}
		if again.Routes != nil {
			doc.Routes = &nmstate.Routes{Config: again.Routes}
		}
		if again.RouteRules != nil {
			doc.RouteRules = &nmstate.RouteRules{Config: again.RouteRules}
		}
		if again.DNS != nil {
			doc.DNSResolver = &nmstate.DNSResolver{Config: again.DNS}
		}
		if len(again.Interfaces) > 0 || again.Routes != nil || again.RouteRules != nil || again.DNS != nil || again.Hostname != nil {
			out, _ := nmstate.EncodeYAML(doc)
			t.Fatalf("merging again changes:\n%s", out)
		}
	})
}
