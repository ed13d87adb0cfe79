package nmpolicy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLLDPExample checks the kubernetes-nmstate lldp example (copied into
// testdata/lldp) against a node with three ethernets, two of them up: LLDP
// is enabled on exactly the up ones, and nothing else is rendered.
func TestLLDPExample(t *testing.T) {
	policy := readPolicy(t, "testdata/lldp")
	current := readDoc(t, "testdata/lldp/current.yaml")
	gen, err := GenerateState(policy, current, nil, testNow)
	if err != nil {
		t.Fatal(err)
	}
	ifaces := gen.DesiredState.(map[string]any)["interfaces"].([]any)
	lldp := map[string]any{}
	for _, i := range ifaces {
		m := i.(map[string]any)
		if m["type"] != "ethernet" || m["state"] != "up" {
			t.Errorf("rendered a non-up or non-ethernet interface: %v", m)
		}
		lldp[m["name"].(string)] = m["lldp"]
	}
	want := map[string]any{"eth0": map[string]any{"enabled": true}, "eth2": map[string]any{"enabled": true}}
	if diff := cmp.Diff(want, lldp); diff != "" {
		t.Errorf("lldp per interface (-want +got):\n%s", diff)
	}
	if len(gen.CapturedStates) != 3 {
		t.Errorf("captured %d states, want 3", len(gen.CapturedStates))
	}
}

func TestGenerateStateEmptyInputs(t *testing.T) {
	policy := Policy{Capture: map[string]string{"x": "interfaces.name == nope"}, DesiredState: map[string]any{"a": "{{ capture.x.b }}"}}
	for name, tc := range map[string]struct {
		policy  Policy
		current any
	}{
		"empty current":        {policy, map[string]any{}},
		"nil current":          {policy, nil},
		"empty desired":        {Policy{Capture: policy.Capture, DesiredState: map[string]any{}}, mustDoc(t, langState)},
		"nil desired":          {Policy{Capture: policy.Capture}, mustDoc(t, langState)},
		"both empty, no error": {Policy{}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			gen, err := GenerateState(tc.policy, tc.current, nil, testNow)
			if err != nil || gen.DesiredState != nil || gen.CapturedStates != nil {
				t.Errorf("GenerateState = %+v, %v; want empty result, nil error", gen, err)
			}
		})
	}
}

func TestGenerateStateDoesNotAliasInputs(t *testing.T) {
	current := mustDoc(t, langState)
	before := mustDoc(t, langState)
	policy := Policy{
		Capture:      map[string]string{"x": "interfaces.name == eth0", "y": "capture.x | interfaces.mtu := 1"},
		DesiredState: mustDoc(t, `{a: "{{ capture.x.interfaces.0.ipv4 }}", b: "{{ capture.y.interfaces }}"}`),
	}
	gen, err := GenerateState(policy, current, nil, testNow)
	if err != nil {
		t.Fatal(err)
	}
	capturedBefore := gen.CapturedStates.DeepCopy()
	// Mutate the rendered state everywhere; neither the input nor the
	// captured states may change.
	var scribble func(v any)
	scribble = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				scribble(e)
				t[k+"-x"] = "scribbled"
			}
		case []any:
			for i, e := range t {
				scribble(e)
				t[i] = "scribbled"
			}
		}
	}
	scribble(gen.DesiredState)
	if diff := cmp.Diff(before, current); diff != "" {
		t.Errorf("current state changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(capturedBefore, gen.CapturedStates); diff != "" {
		t.Errorf("captured states changed (-before +after):\n%s", diff)
	}
	// DeepCopy really copies.
	copied := gen.CapturedStates.DeepCopy()
	scribble(copied["x"].State)
	if diff := cmp.Diff(before, current); diff != "" {
		t.Errorf("DeepCopy shares memory with the current state (-before +after):\n%s", diff)
	}
}

func TestCacheReuse(t *testing.T) {
	current := mustDoc(t, langState)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	cache := CapturedStates{
		"x":     {State: map[string]any{"fixed": int64(1)}, MetaInfo: MetaInfo{Version: "7", Time: old}},
		"stale": {State: map[string]any{"gone": true}, MetaInfo: MetaInfo{Version: "0", Time: old}},
		// Empty cached state: a capture is still "cached" with no content.
		"e": {MetaInfo: MetaInfo{Version: "0", Time: old}},
	}
	capture := map[string]string{
		"x": `cached, so never parsed`, // cached: not evaluated
		"y": `capture.x | fixed := 2`,  // evaluated on the cached x
		"e": `interfaces.name == nothing-matches`,
	}
	got, err := EvaluateCaptures(capture, current, cache, testNow)
	if err != nil {
		t.Fatal(err)
	}
	want := CapturedStates{
		"x": {State: map[string]any{"fixed": int64(1)}, MetaInfo: MetaInfo{Version: "7", Time: old}},
		"y": {State: map[string]any{"fixed": int64(2)}, MetaInfo: MetaInfo{Version: "0", Time: testNow}},
		"e": {State: map[string]any{}, MetaInfo: MetaInfo{Version: "0", Time: old}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("captured states (-want +got):\n%s", diff)
	}
}

// TestCapturedStatesJSON round-trips the NNCE status form and checks that
// integers survive as integers.
func TestCapturedStatesJSON(t *testing.T) {
	in := `{"gw4":{"state":{"routes":{"running":[{"metric":100,"weight":1.5,"destination":"0.0.0.0/0"}]}},"metaInfo":{"version":"0","time":"2025-03-04T10:15:00Z"}},"empty":{"metaInfo":{"version":"0","time":"2025-03-04T10:15:00Z"}}}`
	var c CapturedStates
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	route := c["gw4"].State["routes"].(map[string]any)["running"].([]any)[0].(map[string]any)
	if _, ok := route["metric"].(int64); !ok {
		t.Errorf("metric decoded as %T, want int64", route["metric"])
	}
	if _, ok := route["weight"].(float64); !ok {
		t.Errorf("weight decoded as %T, want float64", route["weight"])
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal([]byte(in), &a)
	json.Unmarshal(out, &b)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("round trip (-in +out):\n%s", diff)
	}
	// The generic form (YAML files) says the same.
	parsed, err := ParseCapturedStates(mustDoc(t, in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, parsed, cmpEmpty); diff != "" {
		t.Errorf("ParseCapturedStates vs JSON (-json +generic):\n%s", diff)
	}
}

func TestParseCapturedStatesErrors(t *testing.T) {
	tests := map[string]string{
		"no metaInfo":     `{a: {state: {}}}`,
		"no time":         `{a: {state: {}, metaInfo: {version: "0"}}}`,
		"bad time":        `{a: {state: {}, metaInfo: {version: "0", time: yesterday}}}`,
		"no version":      `{a: {state: {}, metaInfo: {time: "2025-03-04T10:15:00Z"}}}`,
		"state not a map": `{a: {state: [1], metaInfo: {version: "0", time: "2025-03-04T10:15:00Z"}}}`,
		"unknown key":     `{a: {State: {}, metaInfo: {version: "0", time: "2025-03-04T10:15:00Z"}}}`,
		"not a map":       `[a]`,
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseCapturedStates(mustDoc(t, doc)); err == nil {
				t.Errorf("no error for %s", doc)
			}
		})
	}
}

func TestParsePolicyFile(t *testing.T) {
	pf, err := ParsePolicyFile([]byte(`{"capture": {"a": "interfaces"}, "desired": {"x": 1}, "current": {"y": 2}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := PolicyFile{Policy: Policy{Capture: map[string]string{"a": "interfaces"}, DesiredState: map[string]any{"x": int64(1)}}, Current: map[string]any{"y": int64(2)}}
	if diff := cmp.Diff(want, pf); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for doc, msg := range map[string]string{
		"capture: {a: 1}\n":               "capture.a: expecting a string",
		"desiredState: {}\ndesired: {}\n": "aliases",
		"spec: {}\n":                      "spec: unknown key",
		"- a\n":                           "must be a map",
		"capture: [a]\n":                  "capture: must be a map",
		"desiredState: {a: [}\n":          "decoding",
	} {
		if _, err := ParsePolicyFile([]byte(doc)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParsePolicyFile(%q) error = %v, want it to contain %q", doc, err, msg)
		}
	}
	if pf, err := ParsePolicyFile(nil); err != nil || pf.Capture != nil || pf.DesiredState != nil {
		t.Errorf("empty file: %+v, %v", pf, err)
	}
}

func TestDecodeDocumentTypes(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want any
	}{
		"json integers":  {`{"a": 1500, "b": 1.5, "c": 18446744073709551615}`, map[string]any{"a": int64(1500), "b": 1.5, "c": uint64(18446744073709551615)}},
		"yaml integers":  {"a: 1500\nb: 1.5\nc: true\nd: null\ne: '1500'\n", map[string]any{"a": int64(1500), "b": 1.5, "c": true, "d": nil, "e": "1500"}},
		"yaml int keys":  {"1: a\n", map[string]any{"1": "a"}},
		"yaml timestamp": {"t: 2025-03-04T10:15:00Z\n", map[string]any{"t": "2025-03-04T10:15:00Z"}},
		"empty":          {"  \n", nil},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeDocument([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidCaptureName(t *testing.T) {
	_, err := EvaluateCaptures(map[string]string{"a.b": "interfaces"}, nil, nil, testNow)
	if err == nil || !strings.Contains(err.Error(), `capture "a.b": invalid input: invalid capture name`) {
		t.Errorf("error = %v", err)
	}
}
