package nmstate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// mtCaseDirs lists the golden case directories testdata/cases/<case>, each
// with current.yaml and desired.yaml (merged.yaml and revert.yaml are this
// file's outputs; plan.txt belongs to the plan tests).
func mtCaseDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("testdata/cases/*/desired.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 25 {
		t.Fatalf("want at least 25 golden cases, got %d", len(dirs))
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

func mtDecodeFile(t *testing.T, path string) *nmstate.State {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := nmstate.Decode(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// mtMergedDoc renders a Merged as a state document: the change set as
// interfaces, and the target routes, rules, DNS, hostname and Open_vSwitch
// maps when changed.
func mtMergedDoc(m *nmstate.Merged) *nmstate.State {
	s := &nmstate.State{Interfaces: m.Interfaces, Hostname: m.Hostname}
	if len(s.Interfaces) == 0 {
		s.Interfaces = nil
	}
	if m.Routes != nil {
		s.Routes = &nmstate.Routes{Config: m.Routes}
	}
	if m.RouteRules != nil {
		s.RouteRules = &nmstate.RouteRules{Config: m.RouteRules}
	}
	if m.DNS != nil {
		s.DNSResolver = &nmstate.DNSResolver{Config: m.DNS}
	}
	if m.OVSDB != nil {
		s.OVSDB = &nmstate.OVSDB{ExternalIDs: map[string]*string{}, OtherConfig: map[string]*string{}}
		for k, v := range m.OVSDB.ExternalIDs {
			s.OVSDB.ExternalIDs[k] = &v
		}
		for k, v := range m.OVSDB.OtherConfig {
			s.OVSDB.OtherConfig[k] = &v
		}
	}
	return s
}

// mtGoldenFile compares got with path, or rewrites path with -update.
func mtGoldenFile(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func mtEncodeYAML(t *testing.T, s *nmstate.State) []byte {
	t.Helper()
	b, err := nmstate.EncodeYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mtCanonical is the comparable form of a reported state for the model
// property tests. It leaves out what a desired state cannot control and
// the model does not simulate (the documented noise):
//   - interface, route and rule order (sorted);
//   - query-only `running` sections of routes and DNS;
//   - dynamic (DHCP/RA) and IPv6 link-local addresses;
//   - valid/preferred lifetimes "forever" (equal to none);
//   - empty DNS lists (equal to unset);
//   - state ignore, reported as up (a revert gives an interface the
//     apply started to manage back as managed: nothing can hand it back
//     to its previous owner).
func mtCanonical(t *testing.T, s *nmstate.State) any {
	t.Helper()
	c := s.Clone()
	sort.SliceStable(c.Interfaces, func(i, j int) bool {
		a, b := c.Interfaces[i], c.Interfaces[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Type < b.Type
	})
	for i := range c.Interfaces {
		if c.Interfaces[i].State == nmstate.StateIgnore {
			c.Interfaces[i].State = nmstate.StateUp
		}
		for _, ip := range []*nmstate.IPConfig{c.Interfaces[i].IPv4, c.Interfaces[i].IPv6} {
			if ip == nil || ip.Address == nil {
				continue
			}
			kept := []nmstate.Address{}
			for _, a := range ip.Address {
				if a.IsDynamic() || (a.IP.Is6() && a.IP.IsLinkLocalUnicast()) {
					continue
				}
				a.ValidLifetime, a.PreferredLifetime = nil, nil
				kept = append(kept, a)
			}
			ip.Address = kept
		}
	}
	if c.Routes != nil {
		c.Routes.Running = nil
		mtSortByText(t, c.Routes.Config)
		if len(c.Routes.Config) == 0 {
			c.Routes = nil
		}
	}
	if c.RouteRules != nil {
		mtSortByText(t, c.RouteRules.Config)
		if len(c.RouteRules.Config) == 0 {
			c.RouteRules = nil
		}
	}
	if c.DNSResolver != nil {
		c.DNSResolver.Running = nil
		if cfg := c.DNSResolver.Config; cfg != nil {
			if len(cfg.Server) == 0 {
				cfg.Server = nil
			}
			if len(cfg.Search) == 0 {
				cfg.Search = nil
			}
			if len(cfg.Options) == 0 {
				cfg.Options = nil
			}
		}
		if cfg := c.DNSResolver.Config; cfg == nil || (cfg.Server == nil && cfg.Search == nil && cfg.Options == nil) {
			c.DNSResolver = nil
		}
	}
	tree, err := nmstate.Tree(c)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// mtSortByText sorts schema values by their mtCanonical tree text.
func mtSortByText[T any](t *testing.T, l []T) {
	t.Helper()
	key := make(map[int]string, len(l))
	idx := make([]int, len(l))
	for i := range l {
		tr, err := nmstate.Tree(&l[i])
		if err != nil {
			t.Fatal(err)
		}
		key[i] = fmt.Sprint(tr)
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return key[idx[a]] < key[idx[b]] })
	out := make([]T, len(l))
	for i, j := range idx {
		out[i] = l[j]
	}
	copy(l, out)
}

// TestGoldenCases runs Merge and Revert on every case directory, compares
// merged.yaml and revert.yaml, and checks the model properties:
//   - revert: applying the revert state to the simulated result gives back
//     the state before (mtCanonical form);
//   - idempotence: merging the desired state again against the simulated
//     result changes nothing.
func TestMergeGoldenCases(t *testing.T) {
	for _, dir := range mtCaseDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			before := mtDecodeFile(t, filepath.Join(dir, "current.yaml"))
			desired := mtDecodeFile(t, filepath.Join(dir, "desired.yaml"))
			m, err := nmstate.Merge(desired, before)
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			mtGoldenFile(t, filepath.Join(dir, "merged.yaml"), mtEncodeYAML(t, mtMergedDoc(m)))
			rev, err := nmstate.Revert(before, desired)
			if err != nil {
				t.Fatalf("Revert: %v", err)
			}
			mtGoldenFile(t, filepath.Join(dir, "revert.yaml"), mtEncodeYAML(t, rev))

			after := nmstate.Simulate(before, m)
			again, err := nmstate.Merge(desired, after)
			if err != nil {
				t.Fatalf("Merge against the simulated result: %v", err)
			}
			if diff := cmp.Diff("{}\n", string(mtEncodeYAML(t, mtMergedDoc(again)))); diff != "" {
				t.Errorf("merging desired again is not a no-op (-want +got):\n%s", diff)
			}
			back, err := nmstate.Merge(rev, after)
			if err != nil {
				t.Fatalf("Merge(revert, after): %v", err)
			}
			restored := nmstate.Simulate(after, back)
			if diff := cmp.Diff(mtCanonical(t, before), mtCanonical(t, restored)); diff != "" {
				t.Errorf("revert does not restore the state before (-before +restored):\n%s", diff)
			}
		})
	}
}
