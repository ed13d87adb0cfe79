package manifest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// helmTemplate renders the chart with the real Helm CLI (bin/helm, built
// by make setup) and the given --set/--values arguments.
func helmTemplate(t *testing.T, args ...string) []byte {
	t.Helper()
	root, err := testenv.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%v (make setup builds bin/helm)", err)
	}
	cmd := exec.Command(helm, append([]string{"template", "knmstate", filepath.Join(root, ChartDir), "--include-crds"}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	return out.Bytes()
}

// canonical is a set of objects as one YAML text per object, sorted, for
// comparing renderings without caring about order or comments.
func canonical(t *testing.T, objs []client.Object) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		y, err := EncodeYAML([]client.Object{o})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(y))
	}
	slices.Sort(out)
	return out
}

// `helm template` with the default values renders the same objects as the
// plain bundle (deploy/operator: CRDs, namespace, operator).
func TestHelmDefaultsRenderThePlainBundle(t *testing.T) {
	rendered, err := DecodeYAML(helmTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := OperatorBundle(Params{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(canonical(t, bundle), canonical(t, rendered)); diff != "" {
		t.Errorf("helm template with defaults differs from the plain bundle (-bundle +helm):\n%s", diff)
	}
}

// The values reach the objects: namespace, image, placement, resources,
// and an NMState when asked for.
func TestHelmValues(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`namespace: openshift-nmstate
image: registry.example/knmstate:v1
imagePullPolicy: Always
nodeSelector: {infra: "yes"}
tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
resources: {requests: {cpu: 50m}, limits: {memory: 100Mi}}
createNamespace: false
createNMState: true
nmstate: {logLevel: debug}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	var nm *nmstatev1.NMState
	for _, doc := range bytes.Split(helmTemplate(t, "--values", values), []byte("\n---\n")) {
		if bytes.Contains(doc, []byte("\nkind: NMState\n")) {
			doc = bytes.TrimPrefix(doc, []byte("---\n"))
			nm = &nmstatev1.NMState{}
			if err := yaml.UnmarshalStrict(doc, nm); err != nil {
				t.Fatal(err)
			}
			continue
		}
		docs = append(docs, doc)
	}
	rendered, err := DecodeYAML(bytes.Join(docs, []byte("\n---\n")))
	if err != nil {
		t.Fatal(err)
	}
	if nm == nil || nm.Name != "nmstate" || nm.Spec.LogLevel != "debug" {
		t.Errorf("createNMState: NMState %+v, want nmstate with logLevel debug", nm)
	}
	p := Params{Namespace: "openshift-nmstate", Image: "registry.example/knmstate:v1", ImagePullPolicy: corev1.PullAlways}
	// Helm merges maps of the values with the chart's defaults.
	p.Spec.InfraNodeSelector = map[string]string{"infra": "yes", "kubernetes.io/os": "linux"}
	p.Spec.InfraTolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
	res := corev1.ResourceRequirements{}
	res.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("40Mi")}
	res.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}
	p.OperatorResources = &res
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	want := append(crds, OperatorRBAC(p)...)
	want = append(want, OperatorDeployment(p))
	rest := rendered
	if diff := cmp.Diff(canonical(t, want), canonical(t, rest)); diff != "" {
		t.Errorf("helm template with values differs from the objects built with them (-want +helm):\n%s", diff)
	}
}
