package admission

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/pkg/nmpolicy"
)

// templatedCorpus is every valid desired state: the valid policies' and
// the engine's merge cases' (those valid on their own).
func templatedCorpus(t *testing.T) []policyFile {
	t.Helper()
	var out []policyFile
	for _, p := range validPolicies(t) {
		if !p.spec.DesiredState.IsZero() {
			out = append(out, p)
		}
	}
	files, err := filepath.Glob(filepath.Join(repo, "pkg", "nmstate", "testdata", "cases", "*", "desired.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no engine cases: %v", err)
	}
	for _, f := range files {
		s := stateSpec(t, read(t, f))
		if len(ValidatePolicy(s)) > 0 {
			continue // a case about an invalid document
		}
		out = append(out, policyFile{name: rel(f), spec: s})
	}
	return out
}

// site is one value of a generic document and how to replace it.
type site struct {
	loc   string
	value any
	set   func(any)
}

// sites lists every value below the root of doc, depth first.
func sites(doc any) []site {
	var out []site
	var walk func(v any, loc string)
	walk = func(v any, loc string) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				l := loc + "." + k
				out = append(out, site{l, t[k], func(x any) { t[k] = x }})
				walk(t[k], l)
			}
		case []any:
			for i := range t {
				l := fmt.Sprintf("%s[%d]", loc, i)
				out = append(out, site{l, t[i], func(x any) { t[i] = x }})
				walk(t[i], l)
			}
		}
	}
	walk(doc, "")
	return out
}

// templated returns spec with desiredState doc and a capture "c" that the
// templates refer to.
func templated(t *testing.T, base shared.NodeNetworkConfigurationPolicySpec, doc any) shared.NodeNetworkConfigurationPolicySpec {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := base
	s.Capture = maps.Clone(base.Capture)
	if s.Capture == nil {
		s.Capture = map[string]string{}
	}
	s.Capture["c"] = "interfaces"
	s.DesiredState = shared.State{Raw: raw}
	return s
}

func decodeDoc(t *testing.T, s shared.NodeNetworkConfigurationPolicySpec) any {
	t.Helper()
	doc, err := nmpolicy.DecodeDocument(s.DesiredState.Raw)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// A template may resolve to the value it replaces, so replacing any value
// of a valid policy, any subtree, or every value at once by a template must
// keep the policy valid: the validator must never refuse a policy for what
// a template might turn out to be.
func TestTemplatesNeverMakeAValidPolicyInvalid(t *testing.T) {
	checked := 0
	for _, p := range templatedCorpus(t) {
		t.Run(p.name, func(t *testing.T) {
			n := len(sites(decodeDoc(t, p.spec)))
			for i := 0; i < n; i++ {
				for _, embedded := range []bool{false, true} {
					doc := decodeDoc(t, p.spec)
					s := sites(doc)[i]
					tmpl := "{{ capture.c.interfaces.0.name }}"
					if embedded {
						str, ok := s.value.(string)
						if !ok || len(str) < 2 || nmpolicy.IsTemplate(str) {
							continue
						}
						tmpl = str[:1] + tmpl
					}
					s.set(tmpl)
					checked++
					if errs := ValidatePolicy(templated(t, p.spec, doc)); len(errs) > 0 {
						t.Errorf("with %s = %q: refused:\n%v", s.loc, tmpl, errs)
					}
				}
			}
			// Every scalar at once, one template per distinct value (a
			// capture resolving to the original document).
			doc := decodeDoc(t, p.spec)
			names := map[string]string{}
			for _, s := range sites(doc) {
				switch s.value.(type) {
				case map[string]any, []any:
					continue
				}
				key := fmt.Sprintf("%T:%v", s.value, s.value)
				if _, ok := names[key]; !ok {
					names[key] = fmt.Sprintf("{{ capture.c.v%d.x }}", len(names))
				}
				s.set(names[key])
			}
			checked++
			if errs := ValidatePolicy(templated(t, p.spec, doc)); len(errs) > 0 {
				t.Errorf("with every value templated: refused:\n%v", errs)
			}
		})
	}
	t.Logf("%d templated variants accepted", checked)
}

// Templates defer only their own values: the rest of the document is still
// decoded strictly and validated.
func TestTemplatesKeepTheRestStrict(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want ErrorList
	}{{
		name: "out of range next to a templated base-iface",
		spec: `
capture:
  nic: interfaces.name == "eth1"
desiredState:
  interfaces:
  - name: vlan5000
    type: vlan
    vlan:
      base-iface: "{{ capture.nic.interfaces.0.name }}"
      id: 5000
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].vlan.id", "5000 is out of range 0..4094"}},
	}, {
		name: "unknown field in an interface with a templated mtu",
		spec: `
capture:
  nic: interfaces.name == "eth1"
desiredState:
  interfaces:
  - name: eth1
    type: ethernet
    mtu: "{{ capture.nic.interfaces.0.mtu }}"
    foo: bar
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].foo", "unknown field"}},
	}, {
		name: "bad enum beside a templated type is still decoded",
		spec: `
capture:
  nic: interfaces.name == "eth1"
desiredState:
  interfaces:
  - name: eth1
    type: "{{ capture.nic.interfaces.0.type }}"
    state: sideways
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].state", `"sideways" is not one of up, down, absent, ignore, unknown`}},
	}, {
		name: "a real cross-reference problem survives the search",
		spec: `
capture:
  nic: interfaces.name == "eth1"
desiredState:
  interfaces:
  - name: bond0
    type: bond
    link-aggregation:
      mode: active-backup
      port: [eth1]
  - name: eth1
    type: ethernet
    controller: br0
    mtu: "{{ capture.nic.interfaces.0.mtu }}"
`,
		want: ErrorList{
			{"spec.desiredState.interfaces[1].controller", "is br0 but bond0 lists eth1 as a port"},
		},
	}, {
		name: "a templated type accepts the sections of every type",
		spec: `
capture:
  nic: interfaces.name == "eth1"
desiredState:
  interfaces:
  - name: br1
    type: "{{ capture.nic.interfaces.0.type }}"
    bridge:
      allow-extra-patch-ports: true
      port: [{name: eth1}]
  - name: br2
    type: "{{ capture.nic.interfaces.0.type }}"
    bridge:
      options: {stp: {enabled: false}}
      port: [{name: eth2}]
    vlan: {base-iface: eth1, id: 10}
`,
	}, {
		name: "a templated type still refuses a section no type has",
		spec: `
capture:
  nic: interfaces.name == "eth1"
desiredState:
  interfaces:
  - name: br1
    type: "{{ capture.nic.interfaces.0.type }}"
    bridge:
      no-such-option: true
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].bridge.no-such-option", "unknown field"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := ValidatePolicy(spec(t, tc.spec))
			diffErrors(t, tc.want, got)
		})
	}
}
