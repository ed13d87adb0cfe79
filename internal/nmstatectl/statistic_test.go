package nmstatectl

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

func stTD(name string) string { return filepath.Join("testdata", "statistic", name) }

// TestStatisticFiles runs `nmstatectl st` against a current-state file:
// one desired file, several folded in order, and the alias.
func TestStatisticFiles(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // YAML, compared as a document
	}{
		{
			name: "one file",
			args: []string{"statistic", stTD("bridge.yaml"), "-c", stTD("current.yaml")},
			want: `
topology:
- static_ip4 -> ethernet
- static_ip4 -> vlan -> linux-bridge -> bond -> ethernet
features: [sriov, static-dns-name-server, static-route]
`,
		},
		{
			name: "a later file removes the bridge and the VLAN on it and adds a hostname",
			args: []string{"st", stTD("bridge.yaml"), stTD("remove-bridge.yaml"), "--current", stTD("current.yaml")},
			want: `
topology: [bond -> ethernet, static_ip4 -> ethernet]
features: [sriov, static-dns-name-server, static-hostname, static-route]
`,
		},
		{
			name: "a state using nothing prints empty lists",
			args: []string{"st", stTD("current.yaml"), "-c", stTD("current.yaml")},
			want: "topology: [ethernet]\nfeatures: []\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, out)
			}
			if diff := cmp.Diff(yamlDoc(t, []byte(tc.want)), yamlDoc(t, []byte(out))); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(out, "topology:") {
				t.Errorf("output %q does not start with topology, as upstream prints it", out)
			}
		})
	}
}

func TestStatisticJSONFromStdin(t *testing.T) {
	root := NewCommand()
	var out bytes.Buffer
	root.SetIn(strings.NewReader(`hostname: {config: node-a}
interfaces: [{name: bond1, type: bond, link-aggregation: {mode: active-backup, port: [eth1]}}]
`))
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"st", "-", "-c", stTD("current.yaml"), "--json"})
	if err := root.Execute(); err != nil {
		t.Fatalf("st --json: %v\n%s", err, out.String())
	}
	var got nmstate.Statistics
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	want := nmstate.Statistics{Topology: []string{"bond -> ethernet"}, Features: []string{"static-hostname"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statistic (-want +got):\n%s", diff)
	}
	if !strings.Contains(out.String(), `"bond -> ethernet"`) {
		t.Errorf("JSON output escapes the arrow:\n%s", out.String())
	}
}

// TestStatisticErrors: bad input is reported with its path, exit status 1.
func TestStatisticErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeStatFile(t, dir, "bad.yaml", "interfaces:\n- name: eth1\n  type: ethernet\n  mtu: lots\n")
	missingNIC := writeStatFile(t, dir, "missing.yaml", "interfaces:\n- name: eth9\n  type: ethernet\n  mtu: 1400\n")
	tests := []struct {
		name string
		args []string
		want string // in the output
	}{
		{name: "undecodable desired file", args: []string{"st", bad, "-c", stTD("current.yaml")}, want: "interfaces[0].mtu"},
		{name: "undecodable current file", args: []string{"st", stTD("bridge.yaml"), "-c", bad}, want: "interfaces[0].mtu"},
		{name: "state the merge rejects", args: []string{"st", missingNIC, "-c", stTD("current.yaml")}, want: "eth9"},
		{name: "missing file", args: []string{"st", filepath.Join(dir, "nope.yaml"), "-c", stTD("current.yaml")}, want: "nope.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if err == nil {
				t.Fatalf("%v succeeded:\n%s", tc.args, out)
			}
			var ee *ExitError
			if msg := out + err.Error(); !strings.Contains(msg, tc.want) {
				t.Errorf("error output %q, want it to name %q", msg, tc.want)
			} else if !errors.As(err, &ee) && !strings.Contains(err.Error(), "reading state") {
				t.Errorf("error %v: want an exit status or a read error", err)
			}
		})
	}
}

func writeStatFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
