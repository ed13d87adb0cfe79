package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestValidPoliciesAreAccepted(t *testing.T) {
	for _, p := range validPolicies(t) {
		t.Run(p.name, func(t *testing.T) {
			if errs := ValidatePolicy(p.spec); len(errs) > 0 {
				t.Errorf("refused:\n%v", errs)
			}
		})
	}
}

func diffErrors(t *testing.T, want, got ErrorList) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestValidatePolicyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want ErrorList
	}{{
		name: "vlan id out of range",
		spec: `
desiredState:
  interfaces:
  - {name: eth1.5000, type: vlan, vlan: {base-iface: eth1, id: 5000}}
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].vlan.id", "5000 is out of range 0..4094"}},
	}, {
		name: "integer beyond its type",
		spec: `
desiredState:
  interfaces:
  - {name: eth1.5, type: vlan, vlan: {base-iface: eth1, id: 70000}}
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].vlan.id", "70000 is out of range 0..65535"}},
	}, {
		name: "unknown field",
		spec: `
desiredState:
  interfaces:
  - {name: eth1, type: ethernet, foo: 1}
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].foo", "unknown field"}},
	}, {
		name: "unknown top-level key",
		spec: `
desiredState:
  interface: []
`,
		want: ErrorList{{"spec.desiredState.interface", "unknown field"}},
	}, {
		name: "every decoding problem at once",
		spec: `
desiredState:
  interfaces:
  - {name: eth1, type: ethernet, state: sideways}
  - {name: eth2, type: ethernet, mtu: big}
`,
		want: ErrorList{
			{"spec.desiredState.interfaces[0].state", `"sideways" is not one of up, down, absent, ignore, unknown`},
			{"spec.desiredState.interfaces[1].mtu", `"big" is not an integer`},
		},
	}, {
		name: "undefined capture",
		spec: `
capture:
  nic: interfaces.name == "eth1"
desiredState:
  interfaces:
  - name: eth1
    type: ethernet
  - name: eth2
    type: ethernet
    ipv4:
      enabled: true
      address:
      - ip: "{{ capture.nope.x }}"
        prefix-length: 24
`,
		want: ErrorList{{"spec.desiredState.interfaces[1].ipv4.address[0].ip",
			`"{{ capture.nope.x }}" refers to capture "nope", which spec.capture does not define`}},
	}, {
		name: "template without captures",
		spec: `
desiredState:
  interfaces:
  - {name: eth1, type: ethernet, mtu: "{{ capture.nic.interfaces.0.mtu }}"}
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].mtu",
			`"{{ capture.nic.interfaces.0.mtu }}" refers to capture "nic", which spec.capture does not define`}},
	}, {
		name: "capture syntax error",
		spec: `
capture:
  uplink: interfaces.name = "enp1s0"
desiredState:
  interfaces:
  - {name: eth1, type: ethernet}
`,
		want: ErrorList{{"spec.capture.uplink", `lexical error at position 16: "=" must be part of "==", "!=" or ":="` +
			"\n| interfaces.name = \"enp1s0\"\n| ................^"}},
	}, {
		name: "capture referring to an undefined capture",
		spec: `
capture:
  up: capture.ethernets | interfaces.state == "up"
`,
		want: ErrorList{{"spec.capture.up", `unknown capture at position 8: unknown capture "ethernets" (the policy defines up)` +
			"\n| capture.ethernets | interfaces.state == \"up\"\n| ........^"}},
	}, {
		name: "capture cycle",
		spec: `
capture:
  a: capture.b | interfaces.state == "up"
  b: capture.a | interfaces.type == "ethernet"
`,
		want: ErrorList{{"spec.capture.b", "dependency cycle at position 8: a → b → a" +
			"\n| capture.a | interfaces.type == \"ethernet\"\n| ........^"}},
	}, {
		name: "capture name that reads as an index",
		spec: `
capture:
  "12": interfaces
`,
		want: ErrorList{{"spec.capture.12", "invalid input: invalid capture name: use letters, digits, '-' and '_' (not only digits)"}},
	}, {
		name: "malformed template",
		spec: `
capture:
  uplink: interfaces.name == "eth1"
desiredState:
  interfaces:
  - name: eth1
    type: ethernet
    description: "{{ capture.uplink.interfaces.0.name }}, {{ capture.uplink.interfaces.0.mtu }}"
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].description", "template error at position 40: only one reference per string is allowed" +
			"\n| {{ capture.uplink.interfaces.0.name }}, {{ capture.uplink.interfaces.0.mtu }}\n| ........................................^"}},
	}, {
		name: "whole capture referenced",
		spec: `
capture:
  uplink: interfaces.name == "eth1"
desiredState:
  interfaces: "{{ capture.uplink }}"
`,
		want: ErrorList{{"spec.desiredState.interfaces", "template error at position 17: a reference needs a path after capture.NAME (a whole capture cannot be referenced)" +
			"\n| {{ capture.uplink }}\n| .................^"}},
	}, {
		name: "cross-reference problem",
		spec: `
desiredState:
  interfaces:
  - {name: bond0, type: bond, link-aggregation: {mode: active-backup, port: [eth1]}}
  - {name: eth1, type: ethernet, controller: br0}
`,
		want: ErrorList{{"spec.desiredState.interfaces[1].controller", "is br0 but bond0 lists eth1 as a port"}},
	}, {
		name: "problems of captures, templates and state together",
		spec: `
capture:
  uplink: interfaces.name = "eth1"
desiredState:
  interfaces:
  - {name: eth1, type: ethernet, mtu: "{{ capture.other.interfaces.0.mtu }}"}
  - {name: eth1.5000, type: vlan, vlan: {base-iface: eth1, id: 5000}}
`,
		want: ErrorList{
			{"spec.capture.uplink", `lexical error at position 16: "=" must be part of "==", "!=" or ":="` +
				"\n| interfaces.name = \"eth1\"\n| ................^"},
			{"spec.desiredState.interfaces[0].mtu", `"{{ capture.other.interfaces.0.mtu }}" refers to capture "other", which spec.capture does not define`},
			{"spec.desiredState.interfaces[1].vlan.id", "5000 is out of range 0..4094"},
		},
	}, {
		name: "empty policy",
		spec: `{}`,
	}, {
		name: "empty desired state",
		spec: `
desiredState: {}
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			diffErrors(t, tc.want, ValidatePolicy(spec(t, tc.spec)))
		})
	}
}
