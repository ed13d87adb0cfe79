package shared

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestNewState(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want, wantErr string
	}{
		{name: "yaml object", doc: "interfaces:\n- name: eth1\n  state: up\n", want: `{"interfaces":[{"name":"eth1","state":"up"}]}`},
		{name: "json object", doc: `{"dns-resolver":{"config":{}}}`, want: `{"dns-resolver":{"config":{}}}`},
		{name: "empty", doc: "  \n", want: ""},
		{name: "null", doc: "null", want: ""},
		{name: "list", doc: "- a\n", wantErr: "state: must be an object"},
		{name: "scalar", doc: "up", wantErr: "state: must be an object"},
		{name: "bad yaml", doc: "a: [", wantErr: "state: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewState([]byte(tc.doc))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewState(%q) error = %v, want %q", tc.doc, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.String()); diff != "" {
				t.Errorf("NewState(%q) (-want +got):\n%s", tc.doc, diff)
			}
		})
	}
}

func TestStateJSONRoundTrip(t *testing.T) {
	type holder struct {
		State State `json:"state,omitempty"`
	}
	in := `{"state":{"interfaces":[{"name":"br1","type":"linux-bridge","bridge":{"port":[{"name":"eth1"}]}}]}}`
	var h holder
	if err := json.Unmarshal([]byte(in), &h); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, string(out)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	y, err := h.State.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "  name: br1\n") {
		t.Errorf("YAML() = %s, want the interface list", y)
	}

	// No document is written as null, which the API server drops.
	out, err = json.Marshal(holder{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), `{"state":null}`; got != want {
		t.Errorf("empty state marshals to %s, want %s", got, want)
	}
	var empty holder
	if err := json.Unmarshal([]byte(`{"state":null}`), &empty); err != nil || !empty.State.IsZero() {
		t.Errorf("null state: %v, zero=%v", err, empty.State.IsZero())
	}

	// Raw bytes that are not JSON (someone stored YAML) fail loudly.
	if _, err := json.Marshal(State{Raw: []byte("a: b")}); err == nil {
		t.Error("marshal of non-JSON raw state succeeded, want an error")
	}
}

func TestStateDeepCopyIsIndependent(t *testing.T) {
	s := State{Raw: []byte(`{"a":1}`)}
	c := s.DeepCopy()
	c.Raw[5] = '2'
	if s.String() != `{"a":1}` {
		t.Errorf("deep copy shares bytes: original now %s", s.String())
	}
}

func TestEnactmentName(t *testing.T) {
	if got, want := EnactmentName("node01", "br1-policy"), "node01.br1-policy"; got != want {
		t.Errorf("EnactmentName = %q, want %q", got, want)
	}
}

// Controllers convert objects to and from unstructured maps (server-side
// apply, dynamic clients); State must survive that as a nested object.
func TestStateUnstructuredRoundTrip(t *testing.T) {
	in := NodeNetworkConfigurationPolicySpec{DesiredState: State{Raw: []byte(`{"interfaces":[{"name":"eth1","mtu":1500}]}`)}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"interfaces": []any{map[string]any{"name": "eth1", "mtu": int64(1500)}}}
	if diff := cmp.Diff(want, u["desiredState"]); diff != "" {
		t.Errorf("unstructured desiredState (-want +got):\n%s", diff)
	}
	var out NodeNetworkConfigurationPolicySpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &out); err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal(out.DesiredState.Raw, &got); err != nil {
		t.Fatal(err)
	}
	want2 := map[string]any{"interfaces": []any{map[string]any{"name": "eth1", "mtu": float64(1500)}}}
	if diff := cmp.Diff(want2, got); diff != "" {
		t.Errorf("state after unstructured round trip (-want +got):\n%s", diff)
	}
}
