package admission

import "testing"

// knmstate's {{ node... }} templates: well-formed ones are admitted (with
// captures around them, and in typed fields, which are each node's to
// fill); malformed ones are refused at their path.
func TestNodeTemplates(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want ErrorList
	}{{
		name: "name, label and annotation",
		spec: `
capture:
  nic: interfaces.name == "eth1"
desiredState:
  interfaces:
  - name: br-{{ node.labels.rack }}
    type: linux-bridge
    description: "{{ node.name }}"
    bridge: {port: [{name: "{{ capture.nic.interfaces.0.name }}"}]}
  - name: eth2.100
    type: vlan
    vlan: {base-iface: eth2, id: "{{ node.annotations.example.com/vlan }}"}
`,
	}, {
		name: "unknown node field",
		spec: `
desiredState:
  interfaces:
  - {name: "{{ node.uid }}", type: linux-bridge}
`,
		want: ErrorList{{"spec.desiredState.interfaces[0].name", `"{{ node.uid }}": expected {{ node.name }}, {{ node.labels.KEY }} or {{ node.annotations.KEY }}`}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			diffErrors(t, tc.want, ValidatePolicy(spec(t, tc.spec)))
		})
	}
}
