package extension

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRenderNode(t *testing.T) {
	node := NodeValues{Name: "node02", Labels: map[string]string{"kubernetes.io/hostname": "node02", "rack": "r7"}, Annotations: map[string]string{"example.com/vlan": "102"}}
	doc := map[string]any{"interfaces": []any{
		map[string]any{"name": "br-{{ node.labels.rack }}", "description": "{{node.name}}", "mtu": 1500},
		map[string]any{"name": "{{ capture.nic.interfaces.0.name }}", "vlan": map[string]any{"id": "{{ node.annotations.example.com/vlan }}"}},
	}}
	got, problems := RenderNode(doc, node)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	want := map[string]any{"interfaces": []any{
		map[string]any{"name": "br-r7", "description": "node02", "mtu": 1500},
		map[string]any{"name": "{{ capture.nic.interfaces.0.name }}", "vlan": map[string]any{"id": "102"}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RenderNode (-want +got):\n%s", diff)
	}
	if doc["interfaces"].([]any)[0].(map[string]any)["name"] != "br-{{ node.labels.rack }}" {
		t.Error("RenderNode modified its input")
	}
}

func TestNodeProblems(t *testing.T) {
	doc := map[string]any{"interfaces": []any{
		map[string]any{"name": "{{ node.labels.zone }}"},
		map[string]any{"name": "{{ node.uid }}", "description": "{{ node.name }} {{ node.name }}"},
	}}
	_, problems := RenderNode(doc, NodeValues{Name: "node01"})
	var got []string
	for _, p := range problems {
		got = append(got, p.Error())
	}
	want := []string{
		`interfaces[0].name: "{{ node.labels.zone }}": node node01 has no label "zone"`,
		`interfaces[1].description: "{{ node.name }} {{ node.name }}": only one reference per string is allowed`,
		`interfaces[1].name: "{{ node.uid }}": expected {{ node.name }}, {{ node.labels.KEY }} or {{ node.annotations.KEY }}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	stripped, problems := CheckNodeTemplates(doc)
	if len(problems) != 2 {
		t.Errorf("CheckNodeTemplates: %v, want the two malformed ones (a missing label is the node's to report)", problems)
	}
	if n := stripped.(map[string]any)["interfaces"].([]any)[0].(map[string]any)["name"]; n != "" {
		t.Errorf("node template left for the capture checks: %v", n)
	}
}
