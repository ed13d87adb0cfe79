package api

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/api/shared"
	nmv1 "github.com/knmstate/knmstate/api/v1"
	nmv1beta1 "github.com/knmstate/knmstate/api/v1beta1"
)

const bridgeState = `
interfaces:
- name: br1
  type: linux-bridge
  state: up
  ipv4: {dhcp: true, enabled: true}
  bridge:
    options: {stp: {enabled: false}}
    port:
    - name: eth1
`

// stateOpt compares States by their JSON meaning, not their bytes: the API
// server re-encodes what it stores.
var stateOpt = cmp.Transformer("state", func(s shared.State) map[string]any {
	var m map[string]any
	_ = yaml.Unmarshal(s.Raw, &m)
	return m
})

func TestPolicyVersionsRoundTrip(t *testing.T) {
	c, warns := newClient(t)
	ctx := t.Context()
	opts := []policyOpt{
		nodeSelector("kubernetes.io/hostname", "node01"),
		capture("default-gw", `routes.running.destination=="0.0.0.0/0"`),
		desired(t, bridgeState),
		maxUnavailable(intstr.FromString("25%")),
	}

	t.Run("v1beta1 written, v1 read", func(t *testing.T) {
		in := policyV1beta1("roundtrip-beta", opts...)
		create(t, c, in)
		got := &nmv1.NodeNetworkConfigurationPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: in.Name}, got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in.Spec, got.Spec, stateOpt); diff != "" {
			t.Errorf("v1 read of a v1beta1 policy (-want +got):\n%s", diff)
		}
		if !slices.ContainsFunc(warns.list(), func(w string) bool { return strings.Contains(w, "deprecated") }) {
			t.Errorf("writing v1beta1 gave warnings %q, want a deprecation warning", warns.list())
		}
	})
	t.Run("v1 written, v1beta1 read", func(t *testing.T) {
		in := policy("roundtrip-v1", opts...)
		create(t, c, in)
		got := &nmv1beta1.NodeNetworkConfigurationPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: in.Name}, got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in.Spec, got.Spec, stateOpt); diff != "" {
			t.Errorf("v1beta1 read of a v1 policy (-want +got):\n%s", diff)
		}
	})
	t.Run("maxUnavailable as a number", func(t *testing.T) {
		in := policy("roundtrip-int", maxUnavailable(intstr.FromInt32(3)))
		create(t, c, in)
		got := &nmv1.NodeNetworkConfigurationPolicy{}
		if err := c.Get(ctx, client.ObjectKey{Name: in.Name}, got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(in.Spec, got.Spec, stateOpt); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestNMStateDefaultsAndVersions(t *testing.T) {
	c, warns := newClient(t)
	ctx := t.Context()

	in := &nmv1beta1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate"}}
	create(t, c, in)
	if !slices.Contains(warns.list(), "nmstate/v1beta1 deprecated, use nmstate/v1 instead") {
		t.Errorf("warnings = %q, want the NMState v1beta1 deprecation text", warns.list())
	}
	got := &nmv1.NMState{}
	if err := c.Get(ctx, client.ObjectKey{Name: in.Name}, got); err != nil {
		t.Fatal(err)
	}
	want := nmv1.NMStateSpec{
		ProbeConfiguration:   shared.NMStateProbeConfiguration{DNS: shared.NMStateDNSProbeConfiguration{Host: "root-servers.net"}},
		MetricsConfiguration: nmv1.NMStateMetricsConfiguration{BindAddress: ":8089"},
		LogLevel:             shared.LogLevelInfo,
	}
	if diff := cmp.Diff(want, got.Spec, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("defaulted NMState spec read as v1 (-want +got):\n%s", diff)
	}

	bad := &nmv1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "bad-level"}, Spec: nmv1.NMStateSpec{LogLevel: "trace"}}
	err := c.Create(ctx, bad)
	if err == nil {
		_ = c.Delete(ctx, bad)
	}
	if err == nil || !strings.Contains(err.Error(), `spec.logLevel: Unsupported value: "trace"`) {
		t.Errorf("create with logLevel trace: err = %v, want an enum error", err)
	}
}

func TestNodeSelectorSchema(t *testing.T) {
	c, _ := newClient(t)
	ctx := t.Context()
	many := make([]string, 0, 2*257)
	for i := range 257 {
		many = append(many, "key"+strings.Repeat("x", i%10)+"-"+itoa(i), "v")
	}
	for _, tc := range []struct {
		name    string
		p       *nmv1.NodeNetworkConfigurationPolicy
		wantErr string
	}{
		{"prefixed key", policy("sel-prefixed", nodeSelector("node-role.kubernetes.io/worker", "")), ""},
		{"key with a space", policy("sel-space", nodeSelector("bad key", "x")), "nodeSelector keys must be valid qualified names"},
		{"key with two slashes", policy("sel-slashes", nodeSelector("a/b/c", "x")), "nodeSelector keys must be valid qualified names"},
		{"key too long", policy("sel-long", nodeSelector(strings.Repeat("k", 64), "x")), "nodeSelector keys must be valid qualified names"},
		{"257 entries", policy("sel-many", nodeSelector(many...)), "must have at most 256 items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(ctx, tc.p)
			if err == nil {
				t.Cleanup(func() { _ = c.Delete(ctx, tc.p) })
			}
			checkErr(t, err, tc.wantErr)
		})
	}
}

// checkErr fails unless err matches want ("" = no error, else a substring).
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("err = %v, want none", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("err = %v, want one containing %q", err, want)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// The scheme must know every kind under both versions, since clients such
// as kubectl and controllers pick a version.
func TestSchemeKinds(t *testing.T) {
	s := runtime.NewScheme()
	if err := nmv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := nmv1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	var got []string
	for gvk, typ := range s.AllKnownTypes() {
		if gvk.Group == "nmstate.io" && strings.HasPrefix(typ.PkgPath(), "github.com/knmstate/knmstate/api/") && !strings.HasSuffix(gvk.Kind, "List") {
			got = append(got, gvk.Version+"/"+gvk.Kind)
		}
	}
	slices.Sort(got)
	want := []string{
		"v1/NMState", "v1/NodeNetworkConfigurationPolicy",
		"v1beta1/NMState", "v1beta1/NodeNetworkConfigurationEnactment",
		"v1beta1/NodeNetworkConfigurationPolicy", "v1beta1/NodeNetworkState",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nmstate.io kinds (-want +got):\n%s", diff)
	}
}
