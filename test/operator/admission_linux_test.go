//go:build kubelet

package operator

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/internal/testbed/suite"
)

func policyDoc(name, spec string) string {
	return "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// testAdmission: what the engine cannot read is refused at admission with
// the path and the reason; every example is admitted; with the webhook
// down, failurePolicy Fail refuses with a message that says so.
func testAdmission(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"vlan id", "  desiredState:\n    interfaces:\n    - {name: eth1.5000, type: vlan, state: up, vlan: {base-iface: eth1, id: 5000}}\n",
			"spec.desiredState.interfaces[0].vlan.id: 5000 is out of range 0..4094"},
		{"unknown field", "  desiredState:\n    interfaces:\n    - {name: eth1, type: ethernet, state: up, foo: bar}\n",
			"spec.desiredState.interfaces[0].foo: unknown field"},
		{"undefined capture", "  capture:\n    gw: routes.running.destination==\"0.0.0.0/0\"\n  desiredState:\n    interfaces:\n    - {name: \"{{ capture.nope.interfaces.0.name }}\", type: ethernet, state: up}\n",
			`refers to capture "nope", which spec.capture does not define`},
		{"capture syntax", "  capture:\n    uplink: interfaces.name = \"eth1\"\n  desiredState:\n    interfaces:\n    - {name: eth1, type: ethernet, state: up}\n",
			`spec.capture.uplink: lexical error at position 16`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.kubectl.Try(t, policyDoc("invalid-"+strings.ReplaceAll(tc.name, " ", "-"), tc.spec), "apply", "-f", "-")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), " is invalid: ") {
				t.Errorf("kubectl apply of an invalid policy: %v, want refused as invalid with %q", err, tc.want)
			}
		})
	}
	examples, err := filepath.Glob(filepath.Join(s.root, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range examples {
		if _, err := s.kubectl.Try(t, "", "apply", "--dry-run=server", "-f", f); err != nil {
			t.Errorf("an example refused: %v", err)
		}
	}
	// The webhook down: the operator paused (it would scale it back).
	s.kubectl.Must(t, "-n", "nmstate", "scale", "deploy/knmstate-operator", "--replicas=0")
	s.kubectl.Must(t, "-n", "nmstate", "scale", "deploy/knmstate-webhook", "--replicas=0")
	defer func() {
		s.kubectl.Must(t, "-n", "nmstate", "scale", "deploy/knmstate-operator", "--replicas=1")
		suite.Eventually(t, 3*time.Minute, "the webhook back", func() error {
			out, _ := s.kubectl.Try(t, "", "-n", "nmstate", "get", "deploy", "knmstate-webhook", "-o", "jsonpath={.status.availableReplicas}")
			if out != "2" {
				return errors.New("available " + out)
			}
			return nil
		})
		s.kubectl.Must(t, "wait", "--for=condition=Available", "nmstate/nmstate", "--timeout=3m")
	}()
	suite.Eventually(t, 2*time.Minute, "no webhook pod left", func() error {
		out := s.kubectl.Must(t, "-n", "nmstate", "get", "pods", "-l", "app.kubernetes.io/component=webhook", "-o", "name")
		if left := strings.TrimSpace(out); left != "" {
			return errors.New(left)
		}
		return nil
	})
	_, err = s.kubectl.Try(t, policyDoc("while-webhook-down", "  desiredState:\n    interfaces:\n    - {name: eth2, type: ethernet, state: up}\n"), "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "nodenetworkconfigurationpolicies-validate.nmstate.io"`) {
		t.Errorf("a policy with the webhook down: %v, want refused, naming the webhook", err)
	} else {
		t.Logf("with the webhook down: %s", strings.TrimSpace(err.Error()))
	}
}

// testRotation: with rotation intervals of seconds, policies created
// every 200 ms (server dry runs: they pass both webhooks and change
// nothing) through at least two CA and two serving-certificate rotations
// all succeed.
func testRotation(t *testing.T) {
	s.kubectl.Must(t, "patch", "nmstate", "nmstate", "--type=merge", "-p",
		`{"spec":{"selfSignConfiguration":{"caRotateInterval":"40s","caOverlapInterval":"20s","certRotateInterval":"20s","certOverlapInterval":"10s"}}}`)
	defer s.kubectl.Must(t, "patch", "nmstate", "nmstate", "--type=json", "-p", `[{"op":"remove","path":"/spec/selfSignConfiguration"}]`)
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubectl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	secretHash := func(name string) string {
		sec, err := kube.CoreV1().Secrets("nmstate").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return fmt.Sprintf("%x", sha256.Sum256(sec.Data["tls.crt"]))
	}
	gvr := schema.GroupVersionResource{Group: "nmstate.io", Version: "v1", Resource: "nodenetworkconfigurationpolicies"}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(policyDoc("rotation-probe", "  desiredState:\n    interfaces:\n    - {name: eth2, type: ethernet, state: up}\n")), &obj); err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]bool{"ca": {}, "serving": {}}
	creates, failures := 0, 0
	var firstFailures []string
	end := time.Now().Add(70 * time.Second)
	for time.Now().Before(end) {
		for kind, name := range map[string]string{"ca": "knmstate-webhook-ca", "serving": "knmstate-webhook-serving-cert"} {
			if h := secretHash(name); h != "" {
				seen[kind][h] = true
			}
		}
		_, err := dyn.Resource(gvr).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		creates++
		if err != nil {
			failures++
			if len(firstFailures) < 3 {
				firstFailures = append(firstFailures, err.Error())
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("FIGURE rotation: %d policy creates, %d failed, %d CA certificates and %d serving certificates seen in 70 s", creates, failures, len(seen["ca"]), len(seen["serving"]))
	if failures > 0 {
		t.Errorf("%d of %d creates failed during rotations: %v", failures, creates, firstFailures)
	}
	if len(seen["ca"]) < 3 || len(seen["serving"]) < 3 {
		t.Errorf("rotations seen: %d CAs, %d serving certificates; want at least two rotations of each", len(seen["ca"]), len(seen["serving"]))
	}
}
