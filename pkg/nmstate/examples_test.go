package nmstate_test

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// cmpOpts compares netip values by value (they have unexported fields).
var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
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

// checkRoundTrip encodes s as YAML and JSON, decodes both and requires the
// same value back, and requires the canonical text to be a fixed point.
func checkRoundTrip(t *testing.T, s *nmstate.State) (yml, jsn []byte) {
	t.Helper()
	yml, err := nmstate.EncodeYAML(s)
	if err != nil {
		t.Fatalf("EncodeYAML: %v", err)
	}
	jsn, err = nmstate.EncodeJSON(s)
	if err != nil {
		t.Fatalf("EncodeJSON: %v", err)
	}
	for _, text := range [][]byte{yml, jsn} {
		back, err := nmstate.Decode(text)
		if err != nil {
			t.Fatalf("decoding canonical output: %v\n%s", err, text)
		}
		if diff := cmp.Diff(s, back, cmpOpts); diff != "" {
			t.Errorf("round trip changed the value (-want +got):\n%s", diff)
		}
		again, err := nmstate.EncodeYAML(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, yml) {
			t.Errorf("canonical YAML is not a fixed point:\n%s\nthen\n%s", yml, again)
		}
	}
	return yml, jsn
}

// labCurrent is the host the examples assume (conformance/README.md): NICs
// eth1 and eth2, plus the InfiniBand parent of the IPoIB example.
func labCurrent(t *testing.T) *nmstate.State {
	t.Helper()
	s, err := nmstate.Decode([]byte(`
interfaces:
- {name: lo, type: loopback, state: up, mtu: 65536}
- {name: eth1, type: ethernet, state: up, mtu: 1500, min-mtu: 68, max-mtu: 65535}
- {name: eth2, type: ethernet, state: up, mtu: 1500, min-mtu: 68, max-mtu: 65535}
- {name: mlx5_ib0, type: infiniband, state: up}
`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNmstateExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/nmstate-examples/*.yml")
	if err != nil || len(files) != 47 {
		t.Fatalf("want the 47 nmstate examples, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yml")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s, err := nmstate.Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if errs := nmstate.Validate(s, nil); len(errs) > 0 {
				t.Fatalf("Validate: %v", errs)
			}
			if errs := nmstate.Validate(s, labCurrent(t)); len(errs) > 0 {
				t.Fatalf("Validate against the lab state: %v", errs)
			}
			yml, jsn := checkRoundTrip(t, s)
			golden(t, "nmstate-examples/"+name+".yml", yml)
			golden(t, "nmstate-examples/"+name+".json", jsn)
		})
	}
}

// desiredState extracts spec.desiredState from a kubernetes-nmstate
// manifest, or nil when it has none (the NMState CR).
func desiredState(t *testing.T, b []byte) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	get := func(m *yaml.Node, key string) *yaml.Node {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	return get(get(doc.Content[0], "spec"), "desiredState")
}

// lldpCapture is what `{{ capture.ethernets-lldp.interfaces }}` in lldp.yaml
// expands to on a node with one up ethernet (capture resolution belongs to
// pkg/nmpolicy; here only the resulting state is checked).
const lldpCapture = `
- name: eth1
  type: ethernet
  state: up
  lldp:
    enabled: true
`

// substituteTemplates replaces capture template strings with lldpCapture.
func substituteTemplates(t *testing.T, n *yaml.Node) int {
	count := 0
	for i, c := range n.Content {
		if c.Kind == yaml.ScalarNode && strings.Contains(c.Value, "{{") {
			var repl yaml.Node
			if err := yaml.Unmarshal([]byte(lldpCapture), &repl); err != nil {
				t.Fatal(err)
			}
			n.Content[i] = repl.Content[0]
			count++
			continue
		}
		count += substituteTemplates(t, c)
	}
	return count
}

func TestKnmstateExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/knmstate-examples/*.yaml")
	if err != nil || len(files) != 20 {
		t.Fatalf("want the 20 kubernetes-nmstate examples, got %d (%v)", len(files), err)
	}
	decoded := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ds := desiredState(t, b)
			if ds == nil {
				if name != "nmstate.io_v1_nmstate_cr" {
					t.Fatalf("no spec.desiredState")
				}
				return
			}
			if n := substituteTemplates(t, ds); (n > 0) != (name == "lldp") {
				t.Fatalf("substituted %d templates", n)
			}
			s, err := nmstate.DecodeNode(ds)
			if err != nil {
				t.Fatalf("DecodeNode: %v", err)
			}
			if errs := nmstate.Validate(s, nil); len(errs) > 0 {
				t.Fatalf("Validate: %v", errs)
			}
			if errs := nmstate.Validate(s, labCurrent(t)); len(errs) > 0 {
				t.Fatalf("Validate against the lab state: %v", errs)
			}
			yml, _ := checkRoundTrip(t, s)
			golden(t, "knmstate-examples/"+name+".yml", yml)
			decoded++
		})
	}
	if !t.Failed() && decoded != 19 {
		t.Errorf("decoded %d desired states, want 19", decoded)
	}
}
