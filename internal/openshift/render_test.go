package openshift

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ign "github.com/coreos/ignition/v2/config/v3_2"
	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestRenderGolden renders each testdata/<case>/install-config.yaml into
// testdata/<case>/out and checks what the nodes would get: Ignition's own
// parser accepts every config, each host's file is there, in every role's
// MachineConfig, and decodes to the state the install-config gave.
func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts RenderOptions
	}{
		{"bond-shared", RenderOptions{EphemeralNetworkManager: true}},
		{"static", RenderOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", tc.name)
			in, err := os.ReadFile(filepath.Join(dir, "install-config.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			ic, err := ParseInstallConfig(in)
			if err != nil {
				t.Fatalf("ParseInstallConfig: %v", err)
			}
			got, err := Render(ic, tc.opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			outDir := filepath.Join(dir, "out")
			// What the nodes get, decoded, next to the manifests (whose
			// files are base64) so a reviewer reads it in the diff.
			got = maps.Clone(got)
			got["node-files.txt"] = decodedFiles(t, got)
			if *update {
				if err := os.RemoveAll(outDir); err != nil {
					t.Fatal(err)
				}
				if err := WriteManifests(outDir, got); err != nil {
					t.Fatal(err)
				}
			}
			entries, err := os.ReadDir(outDir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			var gotNames []string
			for n := range got {
				gotNames = append(gotNames, n)
			}
			slices.Sort(gotNames)
			if diff := cmp.Diff(names, gotNames); diff != "" {
				t.Errorf("manifest files (-golden +got):\n%s", diff)
			}
			for _, n := range names {
				want, err := os.ReadFile(filepath.Join(outDir, n))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), string(got[n])); diff != "" {
					t.Errorf("%s (-golden +got; go test -update rewrites):\n%s", n, diff)
				}
			}
			delete(got, "node-files.txt")
			for _, role := range Roles {
				files := nodeFiles(t, got["10-knmstate-nmstate-"+role+".yaml"], role)
				for _, h := range ic.Hosts {
					data, ok := files[filepath.Join(SourceDir, h.Name+".yml")]
					if !ok {
						t.Errorf("role %s: no file for host %s", role, h.Name)
						continue
					}
					st, err := nmstate.Decode(data)
					if err != nil {
						t.Errorf("role %s host %s: the node's file does not decode: %v", role, h.Name, err)
						continue
					}
					want, err := nmstate.EncodeYAML(h.State)
					if err != nil {
						t.Fatal(err)
					}
					gotState, err := nmstate.EncodeYAML(st)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(string(want), string(gotState)); diff != "" {
						t.Errorf("role %s host %s: the node's file is not the install-config's state (-want +got):\n%s", role, h.Name, diff)
					}
					if strings.Contains(string(data), "*") || strings.Contains(string(data), "&") {
						t.Errorf("role %s host %s: anchors left in the node's file:\n%s", role, h.Name, data)
					}
				}
			}
		})
	}
}

// decodedFiles lists every manifest's node files and units, decoded.
func decodedFiles(t *testing.T, manifests map[string][]byte) []byte {
	t.Helper()
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(manifests)) {
		var mc mcfgv1.MachineConfig
		if err := yaml.Unmarshal(manifests[name], &mc); err != nil {
			t.Fatal(err)
		}
		files := nodeFiles(t, manifests[name], mc.Labels[roleLabel])
		for _, p := range slices.Sorted(maps.Keys(files)) {
			fmt.Fprintf(&b, "=== %s: file %s\n%s", name, p, files[p])
		}
		cfg, _, err := ign.Parse(mc.Spec.Config.Raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range cfg.Systemd.Units {
			fmt.Fprintf(&b, "=== %s: unit %s (enabled %v)\n%s", name, u.Name, u.Enabled != nil && *u.Enabled, *u.Contents)
		}
	}
	return []byte(b.String())
}

// nodeFiles parses a MachineConfig manifest as the MCO would (role label,
// Ignition through Ignition's parser) and returns the files it writes.
func nodeFiles(t *testing.T, manifest []byte, role string) map[string][]byte {
	t.Helper()
	var mc mcfgv1.MachineConfig
	if err := yaml.UnmarshalStrict(manifest, &mc); err != nil {
		t.Fatalf("role %s: MachineConfig: %v", role, err)
	}
	if mc.Labels[roleLabel] != role || mc.Kind != "MachineConfig" || mc.APIVersion != "machineconfiguration.openshift.io/v1" {
		t.Fatalf("role %s: MachineConfig %s has kind %s/%s and labels %v", role, mc.Name, mc.APIVersion, mc.Kind, mc.Labels)
	}
	cfg, rpt, err := ign.Parse(mc.Spec.Config.Raw)
	if err != nil {
		t.Fatalf("role %s: Ignition refuses the config: %v %s", role, err, rpt.String())
	}
	if len(rpt.Entries) > 0 {
		t.Errorf("role %s: Ignition reports: %s", role, rpt.String())
	}
	out := map[string][]byte{}
	for _, f := range cfg.Storage.Files {
		src := *f.Contents.Source
		const prefix = "data:text/plain;charset=utf-8;base64,"
		if !strings.HasPrefix(src, prefix) {
			t.Fatalf("role %s: %s: source %q", role, f.Path, src)
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(src, prefix))
		if err != nil {
			t.Fatal(err)
		}
		out[f.Path] = b
	}
	if strings.HasPrefix(mc.Name, "10-") {
		var units []string
		for _, u := range cfg.Systemd.Units {
			units = append(units, u.Name)
		}
		if !slices.Contains(units, FirstBootUnit) {
			t.Errorf("role %s: units %v lack %s", role, units, FirstBootUnit)
		}
	}
	return out
}

// TestRenderedIgnitionIsCanonical guards the raw config against fields
// Ignition would reject when MCO reads it back (unknown keys are an error
// in its strict parser, which the golden check alone would not catch if
// both were rewritten).
func TestRenderedIgnitionIsCanonical(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "static", "install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ic, err := ParseInstallConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Render(ic, RenderOptions{EphemeralNetworkManager: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range got {
		var mc mcfgv1.MachineConfig
		if err := yaml.Unmarshal(m, &mc); err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(mc.Spec.Config.Raw, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v["ignition"].(map[string]any)["version"] != "3.2.0" {
			t.Errorf("%s: ignition version %v", name, v["ignition"])
		}
	}
}

func TestParseInstallConfigErrors(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "static", "install-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(string) string
		// want are substrings of the error, each naming host and path.
		want []string
	}{
		{
			name: "no br-ex bridge",
			edit: func(s string) string {
				return strings.Replace(s, "        type: ovs-bridge", "        type: linux-bridge", 1)
			},
			want: []string{"host master-0: networking.hostConfig[0].networkConfig"},
		},
		{
			name: "bad field",
			edit: func(s string) string {
				return strings.Replace(s, "          - ip: 192.168.111.21", "          - ip: 192.168.111.21\n            prefix-lenght: 24", 1)
			},
			want: []string{"host master-1: networking.hostConfig[1].networkConfig.interfaces[2].ipv4.address[0].prefix-lenght"},
		},
		{
			name: "bad value",
			edit: func(s string) string {
				return strings.Replace(s, "192.168.111.20", "192.168.111.300", 1)
			},
			want: []string{"host master-0: networking.hostConfig[0].networkConfig.interfaces[2].ipv4.address[0].ip"},
		},
		{
			name: "duplicate host",
			edit: func(s string) string { return strings.Replace(s, "name: master-1", "name: master-0", 1) },
			want: []string{"host master-0: networking.hostConfig[1].name: host name already used by networking.hostConfig[0]"},
		},
		{
			name: "host name with a dot",
			edit: func(s string) string { return strings.Replace(s, "name: master-1", "name: master-1.example.com", 1) },
			want: []string{`host master-1.example.com: networking.hostConfig[1].name: "master-1.example.com": not a short host name`},
		},
		{
			name: "br-ex without an uplink",
			edit: func(s string) string { return strings.Replace(s, "          - name: eth0\n", "", 1) },
			want: []string{"host master-0: networking.hostConfig[0].networkConfig: interfaces[1].bridge.port: br-ex has no uplink port"},
		},
		{
			name: "both hosts wrong, both reported",
			edit: func(s string) string { return strings.ReplaceAll(s, "type: ovs-interface", "type: linux-bridge") },
			want: []string{
				"host master-0: networking.hostConfig[0].networkConfig: interfaces: no ovs-interface named br-ex",
				"host master-1: networking.hostConfig[1].networkConfig: interfaces: no ovs-interface named br-ex",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.edit(string(base))
			if in == string(base) {
				t.Fatal("the edit changed nothing")
			}
			_, err := ParseInstallConfig([]byte(in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestNoBrExNeededWithoutOVN: other network types take any valid state.
func TestNoBrExNeededWithoutOVN(t *testing.T) {
	in := `networking:
  networkType: OtherCNI
  hostConfig:
  - name: worker-0
    networkConfig:
      interfaces:
      - name: eth0
        type: ethernet
        ipv4: {enabled: true, dhcp: true}
`
	ic, err := ParseInstallConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ic.Hosts) != 1 || ic.Hosts[0].Name != "worker-0" {
		t.Fatalf("hosts %+v", ic.Hosts)
	}
	if _, err := ParseInstallConfig([]byte(strings.Replace(in, "  networkType: OtherCNI\n", "", 1))); err == nil {
		t.Error("unset networkType (OVNKubernetes) accepted a host without br-ex")
	}
}
