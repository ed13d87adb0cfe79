package nmstate

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// AppendCompactJSON writes what the yaml.Node tree of the canonical
// encoding (Node, which EncodeYAML prints) says, and EncodeJSON is the same
// document indented, for every nmstate example and every state-model case
// (and for text that needs escaping).
func TestAppendCompactJSONIsTheNodeTree(t *testing.T) {
	files, err := filepath.Glob("testdata/nmstate-examples/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := filepath.Glob("testdata/cases/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, cases...)
	if len(files) < 10 {
		t.Fatalf("only %d input files found", len(files))
	}
	desc := "a \"quoted\" <tag> & \\ tab\t é \x01 \xff"
	states := map[string]*State{
		"escaping": {Interfaces: []Interface{{Name: "eth0", Description: &desc}}},
		"empty":    {},
		// Opaque values (LLDP neighbors, as decoded from YAML or JSON).
		"opaque": {Interfaces: []Interface{{Name: "eth0", LLDP: &LLDP{Enabled: ptrTo(true), Neighbors: []any{
			[]any{map[string]any{"type": json.Number("1"), "_description": "Chassis ID", "chassis-id": "00:11:22:33:44:55"}},
			[]any{map[string]any{"ttl": json.Number("120"), "ratio": json.Number("0.5e1"), "bad": json.Number("1x"), "on": false, "nothing": nil}},
		}}}}},
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Decode(data)
		if err != nil {
			continue // invalid on purpose (cases of rejected input)
		}
		states[f] = s
	}
	for name, s := range states {
		n, err := Node(s)
		if err != nil {
			t.Fatalf("%s: Node: %v", name, err)
		}
		want := "x" + string(appendNodeJSON(nil, n))
		got, err := AppendCompactJSON([]byte("x"), s)
		if err != nil {
			t.Fatalf("%s: AppendCompactJSON: %v", name, err)
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s: AppendCompactJSON (-want +got):\n%s", name, diff)
		}
		full, err := EncodeJSON(s)
		if err != nil {
			t.Fatalf("%s: EncodeJSON: %v", name, err)
		}
		var compacted bytes.Buffer
		if err := json.Compact(&compacted, full); err != nil {
			t.Fatalf("%s: compacting: %v", name, err)
		}
		if diff := cmp.Diff(want, "x"+compacted.String()); diff != "" {
			t.Errorf("%s: EncodeJSON compacted (-want +got):\n%s", name, diff)
		}
		// The canonical form is the compact one through generic values
		// and encoding/json, as an API server stores it.
		dec := json.NewDecoder(bytes.NewReader(got[1:]))
		dec.UseNumber()
		var generic any
		if err := dec.Decode(&generic); err != nil {
			t.Fatalf("%s: decoding: %v", name, err)
		}
		wantCanon, err := json.Marshal(generic)
		if err != nil {
			t.Fatal(err)
		}
		canon, err := AppendCanonicalJSON([]byte("x"), s)
		if err != nil {
			t.Fatalf("%s: AppendCanonicalJSON: %v", name, err)
		}
		if diff := cmp.Diff("x"+string(wantCanon), string(canon)); diff != "" {
			t.Errorf("%s: AppendCanonicalJSON (-want +got):\n%s", name, diff)
		}
	}
}

// AppendRouteCanonicalJSON writes a route as AppendCanonicalJSON writes
// it inside a state.
func TestAppendRouteCanonicalJSON(t *testing.T) {
	r := Route{Destination: ptrTo(netip.MustParsePrefix("198.51.100.0/24")), NextHopInterface: ptrTo("eth1"),
		NextHopAddress: ptrTo(netip.MustParseAddr("192.0.2.1")), Metric: ptrTo(int64(100)), TableID: ptrTo(uint32(254))}
	got, err := AppendRouteCanonicalJSON(nil, &r)
	if err != nil {
		t.Fatal(err)
	}
	st, err := AppendCanonicalJSON(nil, &State{Routes: &Routes{Config: []Route{r}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"routes":{"config":[` + string(got) + `]}}`; want != string(st) {
		t.Errorf("route %s, state %s", got, st)
	}
}

// appendNodeJSON writes Node's tree as JSON: decimal numbers and
// true/false as they are, everything else a string. It is how EncodeJSON
// rendered states before AppendCompactJSON wrote them straight from the
// values, kept as the reference the direct encoder must match.
func appendNodeJSON(dst []byte, n *yaml.Node) []byte {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return append(dst, "null"...)
		}
		return appendNodeJSON(dst, n.Content[0])
	case yaml.AliasNode:
		return appendNodeJSON(dst, n.Alias)
	case yaml.MappingNode:
		dst = append(dst, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, n.Content[i].Value)
			dst = append(dst, ':')
			dst = appendNodeJSON(dst, n.Content[i+1])
		}
		return append(dst, '}')
	case yaml.SequenceNode:
		dst = append(dst, '[')
		for i, c := range n.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendNodeJSON(dst, c)
		}
		return append(dst, ']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return append(dst, "null"...)
		case "!!bool", "!!int", "!!float":
			if json.Valid([]byte(n.Value)) {
				return append(dst, n.Value...)
			}
		}
		return appendJSONString(dst, n.Value)
	}
	return dst
}
