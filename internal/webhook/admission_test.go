package webhook_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/api/shared"
	nmv1 "github.com/knmstate/knmstate/api/v1"
	nmv1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/certs"
	"github.com/knmstate/knmstate/internal/webhook"
)

const denied = `admission webhook "nodenetworkconfigurationpolicies-validate.nmstate.io" denied the request: `

// The acceptance cases of the issue, through the real API server: what
// `kubectl apply` of such a policy gets back.
func TestAdmission(t *testing.T) {
	f := start(t, "admission", certs.Config{})
	v1beta1 := func(name string, opts ...policyOpt) client.Object {
		p := &nmv1beta1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, o := range opts {
			o(&p.Spec)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		obj  client.Object
		want string // "" for admitted
	}{
		{"invalid VLAN id", policy("bad-vlan", state(`{"interfaces":[{"name":"eth1.5000","type":"vlan","vlan":{"base-iface":"eth1","id":5000}}]}`)),
			"spec.desiredState.interfaces[0].vlan.id: 5000 is out of range 0..4094"},
		{"unknown field", policy("bad-field", state(`{"interfaces":[{"name":"eth1","type":"ethernet","foo":"bar"}]}`)),
			"spec.desiredState.interfaces[0].foo: unknown field"},
		{"undefined capture", policy("bad-capture-ref", capture("nic", `interfaces.name == "eth1"`),
			state(`{"interfaces":[{"name":"eth1","type":"ethernet"},{"name":"eth2","type":"ethernet","ipv4":{"enabled":true,"address":[{"ip":"{{ capture.nope.x }}","prefix-length":24}]}}]}`)),
			`spec.desiredState.interfaces[1].ipv4.address[0].ip: "{{ capture.nope.x }}" refers to capture "nope", which spec.capture does not define`},
		{"capture syntax error", policy("bad-capture", capture("uplink", `interfaces.name = "eth1"`), ethernet("eth1")),
			"spec.capture.uplink: lexical error at position 16: \"=\" must be part of \"==\", \"!=\" or \":=\"\n| interfaces.name = \"eth1\"\n| ................^"},
		{"v1beta1 too", v1beta1("bad-beta", state(`{"interfaces":[{"name":"eth1","type":"ethernet","mtu":70000000000}]}`)),
			"spec.desiredState.interfaces[0].mtu: 70000000000 is out of range 0..65536"},
		{"a template where a number goes", policy("templated-mtu", capture("nic", `interfaces.name == "eth1"`),
			state(`{"interfaces":[{"name":"eth1.10","type":"vlan","mtu":"{{ capture.nic.interfaces.0.mtu }}","vlan":{"base-iface":"{{ capture.nic.interfaces.0.name }}","id":10}}]}`)), ""},
		{"valid v1beta1", v1beta1("good-beta", ethernet("eth1")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.admin.Create(t.Context(), tc.obj)
			if err == nil {
				t.Cleanup(func() { _ = f.admin.Delete(context.Background(), tc.obj) })
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("admitted")
			}
			if !apierrors.IsInvalid(err) {
				t.Errorf("reason %v, want Invalid", apierrors.ReasonForError(err))
			}
			if !strings.Contains(err.Error(), denied+tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, denied+tc.want)
			}
		})
	}
}

// Every example of the project and of kubernetes-nmstate is admitted by
// the real API server with the webhook in place (dry run: the examples
// share names).
func TestExamplesAdmitted(t *testing.T) {
	f := start(t, "examples", certs.Config{})
	var files []string
	for _, pattern := range []string{"../../examples/*.yaml", "../../pkg/nmstate/testdata/knmstate-examples/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil || len(m) == 0 {
			t.Fatalf("no examples for %s: %v", pattern, err)
		}
		files = append(files, m...)
	}
	n := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if u.GetKind() != "NodeNetworkConfigurationPolicy" {
			continue
		}
		n++
		if err := f.admin.Create(t.Context(), u, client.DryRunAll); err != nil {
			t.Errorf("%s refused: %v", file, err)
		}
	}
	t.Logf("%d example policies admitted", n)
}

// Upstream's mutations, as the API server applies them.
func TestMutationsThroughTheAPI(t *testing.T) {
	f := start(t, "mutations", certs.Config{})
	ctx := t.Context()
	p := policy("mutated", ethernet("eth1"))
	if err := f.admin.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.admin.Delete(context.Background(), p) })
	created := stampOf(t, p)

	// A status written without conditions gets all four, Unknown.
	p.Status = shared.NodeNetworkConfigurationPolicyStatus{}
	if err := f.admin.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	// The timestamp mutation answers status writes too (as upstream's
	// does), but the API server's status strategy drops metadata changes
	// of a status write: the annotation stays the create's.
	if got := stampOf(t, p); got != created {
		t.Errorf("timestamp after a status write %d, want the create's %d (the API server ignores metadata on /status)", got, created)
	}
	var got []string
	for _, c := range p.Status.Conditions {
		got = append(got, string(c.Type)+"="+string(c.Status))
	}
	if want := "Available=Unknown Degraded=Unknown Progressing=Unknown Ignored=Unknown"; strings.Join(got, " ") != want {
		t.Errorf("conditions after a status write without any: %v, want %s", got, want)
	}

	// A status with conditions is kept; a spec update clears them (the
	// status subresource ignores the main resource's status, so the
	// clearing shows only in what the update sends) and is stamped anew.
	p.Status.Conditions.SetAt(time.Now(), shared.NodeNetworkConfigurationPolicyConditionAvailable, corev1.ConditionTrue, "SuccessfullyConfigured", "")
	if err := f.admin.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if c := p.Status.Conditions.Find(shared.NodeNetworkConfigurationPolicyConditionAvailable); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("status conditions not kept: %+v", p.Status.Conditions)
	}
	p.Labels = map[string]string{"changed": "yes"}
	if err := f.admin.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if updated := stampOf(t, p); updated <= created {
		t.Errorf("timestamp after the update %d, not after the creation's %d", updated, created)
	}
}

func stampOf(t *testing.T, p *nmv1.NodeNetworkConfigurationPolicy) int64 {
	t.Helper()
	v, err := strconv.ParseInt(p.Annotations[shared.WebhookMutatingTimestampAnnotation], 10, 64)
	if err != nil {
		t.Fatalf("timestamp annotation: %v (annotations %v)", err, p.Annotations)
	}
	if d := time.Since(time.Unix(0, v)); d < 0 || d > time.Minute {
		t.Errorf("timestamp %d is %v ago", v, d)
	}
	return v
}

// A policy admitted before the validation existed (or by an older engine)
// must stay manageable: metadata-only updates and deletion pass; only a
// spec change is validated.
func TestOldInvalidPolicyStaysManageable(t *testing.T) {
	c, err := client.New(env.Config, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	old := policy("old-invalid", state(`{"interfaces":[{"name":"eth1","type":"ethernet","foo":1}]}`))
	old.Finalizers = []string{"example.com/keep"}
	if err := c.Create(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	// Settled, as the controller leaves it (the admission policy refuses
	// spec changes of a policy in progress).
	old.Status.Conditions.SetAt(time.Now(), shared.NodeNetworkConfigurationPolicyConditionAvailable, corev1.ConditionTrue,
		shared.NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured, "")
	if err := c.Status().Update(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	f := start(t, "old", certs.Config{})
	ctx := t.Context()
	old.Labels = map[string]string{"touched": "yes"}
	if err := f.admin.Update(ctx, old); err != nil {
		t.Errorf("metadata update refused: %v", err)
	}
	changed := old.DeepCopy()
	changed.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"eth1","type":"ethernet","foo":2}]}`)}
	if err := f.admin.Update(ctx, changed); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), denied+"spec.desiredState.interfaces[0].foo: unknown field") {
		t.Errorf("spec change to another invalid spec: %v, want refused by the webhook", err)
	}
	if err := f.admin.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := f.admin.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
		t.Fatal(err)
	}
	old.Finalizers = nil
	if err := f.admin.Update(ctx, old); err != nil {
		t.Errorf("removing the finalizer of a deleted policy refused: %v", err)
	}
}

// With failurePolicy Fail, a webhook that cannot be reached refuses
// policies with a message that says so.
func TestWebhookDownRefuses(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(env.Config)
	cfg := webhook.ValidatingConfiguration(webhook.Endpoint{URL: "https://127.0.0.1:1"})
	cfg.Name = "down"
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), "down", metav1.DeleteOptions{})
	})
	c, err := client.New(env.Config, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The configuration reaches the API server's admission shortly after
	// its creation.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err = c.Create(t.Context(), policy("while-down", ethernet("eth1")), client.DryRunAll)
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := `failed calling webhook "nodenetworkconfigurationpolicies-validate.nmstate.io": failed to call webhook: Post "https://127.0.0.1:1/nodenetworkconfigurationpolicies-validate?timeout=10s"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("create with the webhook down: %v, want an error containing %s", err, want)
	}
	t.Logf("refused: %v", err)
}

// What a user sees: the real kubectl prints each path and reason.
func TestKubectlShowsThePathAndReason(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl (make setup installs it): %v", err)
	}
	start(t, "kubectl", certs.Config{})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	const bad = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: kubectl-bad
spec:
  capture:
    uplink: interfaces.name == "eth1"
  desiredState:
    interfaces:
    - name: eth1.5000
      type: vlan
      vlan:
        base-iface: "{{ capture.uplink.interfaces.0.name }}"
        id: 5000
    - name: eth2
      type: ethernet
      foo: bar
      mtu: "{{ capture.nope.interfaces.0.mtu }}"
`
	cmd := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(bad)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kubectl apply of an invalid policy succeeded:\n%s", out)
	}
	want := `The NodeNetworkConfigurationPolicy "kubectl-bad" is invalid: 
* spec.desiredState.interfaces[1].mtu: "{{ capture.nope.interfaces.0.mtu }}" refers to capture "nope", which spec.capture does not define
* spec.desiredState.interfaces[1].foo: unknown field
`
	if string(out) != want {
		t.Errorf("kubectl apply printed:\n%s\nwant:\n%s", out, want)
	}

	fixed := strings.Replace(strings.Replace(bad, "      foo: bar\n", "", 1), "capture.nope", "capture.uplink", 1)
	cmd = exec.CommandContext(t.Context(), kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(fixed)
	out, _ = cmd.CombinedOutput()
	want = `The NodeNetworkConfigurationPolicy "kubectl-bad" is invalid: spec.desiredState.interfaces[0].vlan.id: 5000 is out of range 0..4094` + "\n"
	if string(out) != want {
		t.Errorf("kubectl apply of the decodable policy printed:\n%s\nwant:\n%s", out, want)
	}
}
