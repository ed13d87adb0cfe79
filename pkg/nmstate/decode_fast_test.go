package nmstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// nodeDiff describes the first difference between two node trees in every
// attribute the decoder reads (kind, tag, value, line, column, children).
func nodeDiff(path string, a, b *dnode) string {
	if a == nil || b == nil {
		if a != b {
			return fmt.Sprintf("%s: one tree is nil (%v, %v)", path, a, b)
		}
		return ""
	}
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value ||
		a.Line != b.Line || a.Column != b.Column || len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: kind %v/%v tag %q/%q value %q/%q at %d:%d/%d:%d, %d/%d children",
			path, a.Kind, b.Kind, a.Tag, b.Tag, a.Value, b.Value,
			a.Line, a.Column, b.Line, b.Column, len(a.Content), len(b.Content))
	}
	for i := range a.Content {
		if d := nodeDiff(fmt.Sprintf("%s[%d]", path, i), a.Content[i], b.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

// fastParseCorpus is every example document of the package, as given and
// (for JSON) re-encoded compact, indented, and with commas leading lines.
func fastParseCorpus(t testing.TB) (yamlDocs, jsonDocs []string) {
	var files []string
	for _, pat := range []string{"testdata/nmstate-examples/*.yml", "testdata/knmstate-examples/*.yaml",
		"testdata/golden/*/*.yml", "testdata/cases/*/*.yaml"} {
		f, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		yamlDocs = append(yamlDocs, string(b))
		s, err := Decode(b)
		if err != nil {
			continue
		}
		j, err := EncodeJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		var compact, indented bytes.Buffer
		if err := json.Compact(&compact, j); err != nil {
			t.Fatal(err)
		}
		if err := json.Indent(&indented, j, "", "  "); err != nil {
			t.Fatal(err)
		}
		lead := strings.ReplaceAll(indented.String(), ",\n", "\n  ,")
		jsonDocs = append(jsonDocs, string(j), compact.String(), indented.String(), lead, "\n\n  "+indented.String()+"\n")
	}
	jsonDocs = append(jsonDocs,
		`{"a": "x\"y\\z\u00e9\ud83d\ude00", "b": [1, -2, 3.5, 1e3, -0.5E-2, true, false, null, [], {}],
		  "c"
		  :
		  {"d": "é", "e": ""}}`,
		"[\n1\n,\n2\n]",
		`{"interfaces": [{"name": "eth1", "type": "ethernet", "state": "up", "mtu": 1500}]}`,
	)
	return yamlDocs, jsonDocs
}

func TestFastJSONMatchesParseJSON(t *testing.T) {
	_, docs := fastParseCorpus(t)
	for i, doc := range docs {
		want, err := parseJSON(doc)
		if err != nil {
			t.Fatalf("doc %d: parseJSON: %v", i, err)
		}
		got, ok := parseJSONFast(doc)
		if !ok {
			t.Errorf("doc %d: fast parser gave up on valid JSON:\n%s", i, doc)
			continue
		}
		if d := nodeDiff("$", fromYAML(want), got); d != "" {
			t.Errorf("doc %d: parseJSON/fast differ: %s\n%s", i, d, doc)
		}
	}
}

func TestFastJSONGivesUpOnInvalidJSON(t *testing.T) {
	for _, doc := range []string{
		`{"a": 1,}`, `[1,]`, `{"a" 1}`, `{"a": 01}`, `{"a": tru}`, `{"a": 1} x`, `{"a": "x`,
		`{"a": -}`, `{"a": 1.}`, `{"a": 1e}`, `{a: 1}`, `{"a": "b` + "\n" + `"}`, `[1 2]`, `{"a": nullx}`,
		`{"a": "\x"}`, `{"a": 1}}`, `{"a": [}`, `{"a": 'x'}`,
	} {
		if _, ok := parseJSONFast(doc); ok {
			t.Errorf("fast parser accepted invalid JSON %q", doc)
		}
		if _, err := parseJSON(doc); err == nil {
			t.Errorf("parseJSON accepted %q: the test input is not invalid", doc)
		}
	}
}

// FuzzFastJSON: whenever the fast parser accepts a document, encoding/json
// accepts it too and builds the same tree.
func FuzzFastJSON(f *testing.F) {
	_, docs := fastParseCorpus(f)
	for _, d := range docs {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		got, ok := parseJSONFast(doc)
		if !ok {
			return
		}
		want, err := parseJSON(doc)
		if err != nil {
			t.Fatalf("fast parser accepted what encoding/json rejects (%v): %q", err, doc)
		}
		if d := nodeDiff("$", fromYAML(want), got); d != "" {
			t.Fatalf("trees differ: %s\n%q", d, doc)
		}
	})
}

// yamlDocsExtra exercise the fast YAML parser's subset and its edges.
var yamlDocsExtra = []string{
	"a: 1\nb: [x, 'y', \"z\", {c: d, e: [1, 2]}]\nc: {}\nd: []\n",
	"---\ninterfaces:\n- name: eth1\n  type: ethernet\n  ipv4:\n    address:\n    - ip: 192.0.2.1\n      prefix-length: 24\n",
	"# head\ninterfaces: # list\n  - name: eth1   # c\n    state: up\n\n  -   name: eth2\n      mtu: 0x10\n  -\n    name: eth3\n",
	"a:\n  - - x\n    - y\n  - z\nb: 'it''s'\nc: \"tab\\tq\\\"\\u00e9\\x41\"\n",
	"a: yes\nb: ~\nc: null\nd: -1\ne: 1.5\nf: .inf\ng: 2001:db8::1\nh: 02:00:00:00:00:01\ni: http://x\nj: a#b\nk: -x\n",
	"- a\n- b: c\n  d: e\n- [1, 2]\n- {x: y}\n",
	"key  : v\nother:   spaced   \n",
}

// yamlDocsFallback must make the fast parser give up.
var yamlDocsFallback = []string{
	"a: &x 1\nb: *x\n", "a: !!str 1\n", "a: |\n  x\n", "a: >\n  x\n", "a:\nb: 1\n", "a: b\n  c\n",
	"a: 'x\n  y'\n", "a:\n\tb: 1\n", "a: é\n", "a: 1\n---\nb: 2\n", "a: b: c\n", "- a\n  b\n", "a: [1,\n 2]\n",
	"<<: {a: 1}\n", "a: 2001-01-01\n", "? a\n: b\n", "a: {b}\n", "a: [b: c]\n", "a: 1\r\n", "  a: 1\n",
	"a: 1\n b: 2\n", "a:\n- 1\n - 2\n", "a: [1, 2,]\n", "a: \"x\\q\"\n", "\"a\": 1\n", "a: 1 # x\n  b: 2\n",
	"a:\n", "a: -\n", "a: 'x' y\n", "a: [x] y\n", "a: {b: c} #x\n  d: 1\n",
}

func TestFastYAMLMatchesYAMLv3(t *testing.T) {
	docs, _ := fastParseCorpus(t)
	docs = append(docs, yamlDocsExtra...)
	gaveUp := 0
	for i, doc := range docs {
		want, err := parseYAML(doc)
		if err != nil {
			t.Fatalf("doc %d: yaml.v3: %v\n%s", i, err, doc)
		}
		got, ok := parseYAMLFast(doc)
		if !ok {
			gaveUp++
			if i >= len(docs)-len(yamlDocsExtra) {
				t.Errorf("extra doc %d: fast parser gave up:\n%s", i, doc)
			}
			continue
		}
		if d := nodeDiff("$", fromYAML(want), got); d != "" {
			t.Errorf("doc %d: yaml.v3/fast differ: %s\n%s", i, d, doc)
		}
	}
	t.Logf("fast parser gave up on %d of %d documents", gaveUp, len(docs))
	// Most real documents are in the subset; the rest fall back.
	if gaveUp > len(docs)/4 {
		t.Errorf("fast parser gave up on %d of %d documents", gaveUp, len(docs))
	}
}

func TestFastYAMLGivesUpOutsideItsSubset(t *testing.T) {
	for _, doc := range yamlDocsFallback {
		if n, ok := parseYAMLFast(doc); ok {
			want, err := parseYAML(doc)
			d := ""
			if err == nil {
				d = nodeDiff("$", fromYAML(want), n)
			}
			t.Errorf("fast parser accepted %q (yaml.v3 error %v, diff %q)", doc, err, d)
		}
	}
}

// FuzzFastYAML: whenever the fast parser accepts a document, yaml.v3
// accepts it too and builds the same tree.
func FuzzFastYAML(f *testing.F) {
	docs, _ := fastParseCorpus(f)
	for _, d := range append(append(docs, yamlDocsExtra...), yamlDocsFallback...) {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		got, ok := parseYAMLFast(doc)
		if !ok {
			return
		}
		want, err := parseYAML(doc)
		if err != nil {
			t.Fatalf("fast parser accepted what yaml.v3 rejects (%v): %q", err, doc)
		}
		if d := nodeDiff("$", fromYAML(want), got); d != "" {
			t.Fatalf("trees differ: %s\n%q", d, doc)
		}
	})
}

// TestQuickTagAgreesWithYAMLv3 checks the shortcut against yaml.v3's own
// resolution on every kind of plain scalar it answers for.
func TestQuickTagAgreesWithYAMLv3(t *testing.T) {
	words := []string{"eth1", "up", "linux-bridge", "a", "Z9", "b.c", "eth1.101", "x:y", "e1e3", "E5",
		"0", "1", "24", "1500", "123456789012345678", "007", "1234567890123456789", "-1", "+1", "1_000",
		"true", "false", "null", "yes", "no", "on", "off", "y", "n", "True", "NULL", "~", "TRUE", "False", "FALSE",
		"Null", "nULL", "tRUE", "name", "type", "options", "next-hop-address", "Yes", "ON", "Off", "o", "nan", "inf", "NaN", ".inf", "1.5",
		"10.0.0.1", "10.0.0.0/24", "1/2", "1.5/2", "1.2.3", "1..2", "1.2e3.4", "12.34.56.78/33x", "2001:db8::1", "02:00:00:00:00:01", "0x10", "0o7", "1e3", "2001-01-01", "<<"}
	for _, w := range words {
		got := quickTag(w)
		if got == "" {
			continue
		}
		if want := (&yaml.Node{Kind: yaml.ScalarNode, Value: w}).ShortTag(); got != want {
			t.Errorf("quickTag(%q) = %s, yaml.v3 says %s", w, got, want)
		}
	}
}

// TestFastParsersKeepErrorPositions: documents with schema errors report
// the same errors (kind, path, detail, line, column) through the fast
// parsers as through yaml.v3 and encoding/json.
func TestFastParsersKeepErrorPositions(t *testing.T) {
	docs := []string{
		"interfaces:\n- name: eth1\n  type: ethernet\n  mtu: big\n  ipv4:\n    enabld: true\n    address:\n    - ip: 300.1.1.1\n      prefix-length: 24\n",
		"interfaces:\n  - name: bond0\n    type: bond\n    link-aggregation:\n      mode: balance-xx\n      port: [eth1, 7]\n  - {name: v1, type: vlan, vlan: {id: 5000, base-iface: eth1}}\nroutes:\n  config:\n  - destination: nope\n    metric: x\n",
		"interfaces:\n- name: eth1\n  type: ethernet\n  state: sideways\n  bridge: {}\n  name: again\n",
		"{\"interfaces\": [{\"name\": \"eth1\", \"type\": \"ethernet\", \"mtu\": \"big\",\n  \"ipv4\": {\"enabld\": true}},\n  {\"name\": \"v1\", \"type\": \"vlan\",\n   \"vlan\": {\"id\": 5000}}],\n \"routes\": {\"config\": [{\"destination\": \"nope\"}]}}",
	}
	for i, doc := range docs {
		var slow *yaml.Node
		var err error
		if strings.HasPrefix(doc, "{") {
			slow, err = parseJSON(doc)
			if _, ok := parseJSONFast(doc); !ok {
				t.Errorf("doc %d: fast JSON parser gave up", i)
			}
		} else {
			slow, err = parseYAML(doc)
			if _, ok := parseYAMLFast(doc); !ok {
				t.Errorf("doc %d: fast YAML parser gave up", i)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		_, wantErr := DecodeNode(slow)
		_, gotErr := Decode([]byte(doc))
		want, _ := wantErr.(ErrorList)
		got, _ := gotErr.(ErrorList)
		if len(want) == 0 {
			t.Fatalf("doc %d: no errors; the test needs a faulty document", i)
		}
		if len(want) != len(got) {
			t.Fatalf("doc %d: %d errors through yaml.v3/encoding/json, %d through the fast parser:\n%v\n%v", i, len(want), len(got), want, got)
		}
		for j := range want {
			if *want[j] != *got[j] {
				t.Errorf("doc %d error %d: slow %+v, fast %+v", i, j, *want[j], *got[j])
			}
		}
	}
}

// FuzzQuickTag: the shortcut never disagrees with yaml.v3.
func FuzzQuickTag(f *testing.F) {
	for _, w := range []string{"eth1", "true", "Null", "10.0.0.1", "10.0.0.0/8", "1500", "007", "1e3", "n"} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w string) {
		got := quickTag(w)
		if got == "" {
			return
		}
		if want := (&yaml.Node{Kind: yaml.ScalarNode, Value: w}).ShortTag(); got != want {
			t.Fatalf("quickTag(%q) = %s, yaml.v3 says %s", w, got, want)
		}
	})
}
