package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/deploy/rbac"
)

// Every directory's kustomization lists exactly its manifests, so
// `kubectl apply -k` installs what the programs embed.
func TestKustomizationsListEveryManifest(t *testing.T) {
	for _, dir := range []string{"crds", "admission", "rbac"} {
		t.Run(dir, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, f := range files {
				if b := filepath.Base(f); b != "kustomization.yaml" {
					want = append(want, b)
				}
			}
			var k struct {
				APIVersion string   `json:"apiVersion"`
				Kind       string   `json:"kind"`
				Resources  []string `json:"resources"`
			}
			b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(b, &k); err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(k.Resources)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s/kustomization.yaml lists %v, the directory holds %v", dir, got, want)
			}
		})
	}
}

// The workloads decode strictly into their types and name the
// ServiceAccounts RBAC grants.
func TestWorkloads(t *testing.T) {
	docs, err := Workloads()
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 3 {
		t.Fatalf("Workloads() = %d documents, want namespace, handler, controller", len(docs))
	}
	var ns corev1.Namespace
	var ds appsv1.DaemonSet
	var dep appsv1.Deployment
	for i, obj := range []any{&ns, &ds, &dep} {
		if err := yaml.UnmarshalStrict(docs[i], obj); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
	}
	if ns.Name != rbac.Namespace || ds.Namespace != rbac.Namespace || dep.Namespace != rbac.Namespace {
		t.Errorf("namespaces %q, %q, %q; want all %q", ns.Name, ds.Namespace, dep.Namespace, rbac.Namespace)
	}
	if sa := ds.Spec.Template.Spec.ServiceAccountName; sa != rbac.HandlerServiceAccount {
		t.Errorf("handler ServiceAccount %q, want %q", sa, rbac.HandlerServiceAccount)
	}
	if sa := dep.Spec.Template.Spec.ServiceAccountName; sa != rbac.ControllerServiceAccount {
		t.Errorf("controller ServiceAccount %q, want %q", sa, rbac.ControllerServiceAccount)
	}
	for _, c := range append(ds.Spec.Template.Spec.Containers, dep.Spec.Template.Spec.Containers...) {
		if c.Image != Image {
			t.Errorf("container %s: image %q, want the placeholder %q", c.Name, c.Image, Image)
		}
	}
	if !ds.Spec.Template.Spec.HostNetwork {
		t.Error("the handler must run on the host network")
	}
}

// kubectl's own kustomize renders the bundle (when kubectl is installed:
// make setup installs it).
func TestKubectlKustomize(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl: %v (make setup installs it)", err)
	}
	out, err := exec.Command(kubectl, "kustomize", "knmstate").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/knmstate: %v\n%s", err, out)
	}
	kinds := map[string]int{}
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var m struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		kinds[m.Kind]++
	}
	for kind, want := range map[string]int{"CustomResourceDefinition": 4, "DaemonSet": 1, "Deployment": 1, "Namespace": 1, "ServiceAccount": 2} {
		if kinds[kind] != want {
			t.Errorf("%d %s objects rendered, want %d (all: %v)", kinds[kind], kind, want, kinds)
		}
	}
	if !strings.Contains(string(out), "image: knmstate:latest") {
		t.Errorf("the rendered workloads do not use the kustomization's image")
	}
}
