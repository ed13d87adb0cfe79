package admission

import "testing"

func TestSpecChanged(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		want     bool
	}{
		{"metadata only", `{"metadata":{"finalizers":["x"]},"spec":{"desiredState":{"interfaces":[]}}}`, `{"metadata":{},"spec":{"desiredState":{"interfaces":[]}}}`, false},
		{"status only", `{"spec":{"capture":{"a":"interfaces"}},"status":{}}`, `{"spec":{"capture":{"a":"interfaces"}},"status":{"conditions":[]}}`, false},
		{"key order does not matter", `{"spec":{"desiredState":{"a":1,"b":2}}}`, `{"spec":{"desiredState":{"b":2,"a":1}}}`, false},
		{"desired state", `{"spec":{"desiredState":{"a":1}}}`, `{"spec":{"desiredState":{"a":2}}}`, true},
		{"capture added", `{"spec":{}}`, `{"spec":{"capture":{"a":"interfaces"}}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SpecChanged([]byte(tc.old), []byte(tc.new))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("SpecChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPolicySpec(t *testing.T) {
	s, err := PolicySpec([]byte(`{"apiVersion":"nmstate.io/v1beta1","spec":{"capture":{"a":"interfaces"},"desiredState":{"interfaces":[]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Capture["a"] != "interfaces" || string(s.DesiredState.Raw) != `{"interfaces":[]}` {
		t.Errorf("spec = %+v (desiredState %s)", s, s.DesiredState.Raw)
	}
}
