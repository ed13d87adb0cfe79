package nmstatectl

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// runCLI runs nmstatectl in-process with args and returns stdout and the
// error.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := NewCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func td(name string) string { return filepath.Join("testdata", "policy", name) }

func yamlDoc(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("parsing %q: %v", data, err)
	}
	return v
}

func readYAMLFile(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return yamlDoc(t, data)
}

// TestPolicyRoundTrip is spec example 8: render with --current and
// --output-captured, then re-render against a changed node with the same
// file as --captured and --output-captured: the captures stick and keep
// their metaInfo.
func TestPolicyRoundTrip(t *testing.T) {
	captured := filepath.Join(t.TempDir(), "captured.yml")
	want := readYAMLFile(t, td("generated.yaml"))

	out, err := runCLI(t, "policy", td("policy.yaml"), "--current", td("current.yaml"), "--output-captured", captured)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, yamlDoc(t, []byte(out))); diff != "" {
		t.Errorf("first render (-want +got):\n%s", diff)
	}
	first, err := os.ReadFile(captured)
	if err != nil {
		t.Fatal(err)
	}
	doc := yamlDoc(t, first).(map[string]any)
	for _, name := range []string{"gw4", "uplink"} {
		meta := doc[name].(map[string]any)["metaInfo"].(map[string]any)
		if meta["version"] != "0" {
			t.Errorf("%s version = %v, want \"0\"", name, meta["version"])
		}
		if _, err := time.Parse(time.RFC3339, meta["time"].(string)); err != nil {
			t.Errorf("%s time: %v", name, err)
		}
	}
	gw4 := doc["gw4"].(map[string]any)["state"]
	wantGW4 := yamlDoc(t, []byte(`
routes:
  running:
  - {destination: 0.0.0.0/0, metric: 100, next-hop-address: 198.51.100.1, next-hop-interface: enp1s0, table-id: 254}`))
	if diff := cmp.Diff(wantGW4, gw4); diff != "" {
		t.Errorf("captured gw4 (-want +got):\n%s", diff)
	}

	// Later the default route moves to enp2s0; short flags this time.
	out, err = runCLI(t, "p", td("policy.yaml"), "-c", td("current-later.yaml"), "-a", captured, "-o", captured)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, yamlDoc(t, []byte(out))); diff != "" {
		t.Errorf("render from cache (-want +got):\n%s", diff)
	}
	second, err := os.ReadFile(captured)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(first), string(second)); diff != "" {
		t.Errorf("captured file changed although every capture came from the cache (-first +second):\n%s", diff)
	}

	// Without the cache the later state gives enp2s0 (the cache mattered).
	out, err = runCLI(t, "policy", td("policy.yaml"), "--current", td("current-later.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "base-iface: enp2s0") {
		t.Errorf("render without cache = %s, want base-iface enp2s0", out)
	}
}

// TestPolicyPartialCache: a cache holding only gw4 makes uplink be evaluated
// against the later state with the cached gw4.
func TestPolicyPartialCache(t *testing.T) {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache.yaml")
	if err := os.WriteFile(cache, []byte(`gw4:
  metaInfo: {time: "2025-03-04T10:15:00Z", version: "0"}
  state:
    routes:
      running:
      - {destination: 0.0.0.0/0, next-hop-interface: enp1s0}
stale:
  metaInfo: {time: "2025-03-04T10:15:00Z", version: "0"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	outCache := filepath.Join(dir, "out.json")
	out, err := runCLI(t, "policy", td("policy.yaml"), "--current", td("current-later.yaml"), "--captured", cache, "--output-captured", outCache, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if diff := cmp.Diff(readYAMLFile(t, td("generated.yaml")), got); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(outCache)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]struct {
		MetaInfo struct{ Time, Version string }
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("output-captured is not JSON: %v", err)
	}
	if len(c) != 2 || c["gw4"].MetaInfo.Time != "2025-03-04T10:15:00Z" || c["uplink"].MetaInfo.Time == "2025-03-04T10:15:00Z" {
		t.Errorf("output-captured = %s; want gw4 with its cached time, a newly stamped uplink, no stale entry", data)
	}
}

func TestPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty.yaml", "")
	badCapture := write("bad.yaml", "capture:\n  a: 1\n")

	out, err := runCLI(t, "policy", empty)
	if err != nil || out != "\n" {
		t.Errorf("empty policy: out=%q err=%v, want an empty line", out, err)
	}

	_, err = runCLI(t, "policy", td("policy.yaml"), "--netns", filepath.Join(dir, "no-such-netns"))
	if err == nil || !strings.Contains(err.Error(), "opening the node") {
		t.Errorf("without --current, missing namespace: %v", err)
	}

	_, err = runCLI(t, "policy", badCapture, "-c", td("current.yaml"))
	if err == nil || !strings.Contains(err.Error(), "capture.a: expecting a string") {
		t.Errorf("non-string capture: %v", err)
	}

	_, err = runCLI(t, "policy", td("policy.yaml"), "-c", td("current.yaml"), "-a", filepath.Join(dir, "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "captured states") {
		t.Errorf("missing captured file: %v", err)
	}

	// A template error still writes the captured states.
	captured := filepath.Join(dir, "captured.yaml")
	_, err = runCLI(t, "policy", td("policy-bad-template.yaml"), "-c", td("current.yaml"), "-o", captured)
	wantErr := `desiredState.interfaces[0].vlan.base-iface: unknown capture: unknown capture "uplnk" (the policy defines gw4, uplink)
| {{ capture.uplnk.interfaces.0.name }}
| ...........^`
	if err == nil || err.Error() != wantErr {
		t.Errorf("template error:\n%v\nwant:\n%s", err, wantErr)
	}
	doc := readYAMLFile(t, captured).(map[string]any)
	if _, ok := doc["uplink"]; !ok || len(doc) != 2 {
		t.Errorf("captured states after a template error = %v, want gw4 and uplink", doc)
	}

	// A policy file may carry its current state (key "current").
	embedded := write("embedded.yaml", `capture:
  up: interfaces.state == up
desired:
  interfaces: "{{ capture.up.interfaces }}"
current:
  interfaces:
  - {name: a, state: up}
  - {name: b, state: down}
`)
	out, err = runCLI(t, "policy", embedded, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"interfaces": []any{map[string]any{"name": "a", "state": "up"}}}, got); diff != "" {
		t.Errorf("embedded current (-want +got):\n%s", diff)
	}

	if _, err := runCLI(t, "policy"); err == nil {
		t.Errorf("no policy file: no error")
	}
}
