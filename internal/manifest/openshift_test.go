package manifest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/deploy"
)

// The payload follows the Cluster Version Operator's rules: run-level file
// names, every manifest annotated for its profiles and capability (the
// CVO refuses a manifest without annotations), the ClusterOperator after
// the Deployment, every image named in image-references.
func TestOpenShiftPayload(t *testing.T) {
	files, refs, err := OpenShiftPayload(Params{})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	runLevel := regexp.MustCompile(`^0000_[0-9]{2}_[a-z0-9-]+_[0-9]{2}_[a-z0-9_-]+\.yaml$`)
	var deployment, clusterOperator int = -1, -1
	var images []string
	for i, n := range names {
		if !runLevel.MatchString(n) {
			t.Errorf("%s does not follow 0000_<runlevel>_<component>_<nn>_<name>.yaml", n)
		}
		for _, o := range files[n] {
			a := o.GetAnnotations()
			for _, prof := range profiles {
				if a["include.release.openshift.io/"+prof] != "true" {
					t.Errorf("%s: %s %s lacks include.release.openshift.io/%s", n, kindOf(o), o.GetName(), prof)
				}
			}
			if a["capability.openshift.io/name"] != Capability {
				t.Errorf("%s: %s %s lacks the capability annotation", n, kindOf(o), o.GetName())
			}
			switch x := o.(type) {
			case *appsv1.Deployment:
				deployment = i
				if x.Namespace != OpenShiftNamespace {
					t.Errorf("operator Deployment in %q", x.Namespace)
				}
				for _, c := range x.Spec.Template.Spec.Containers {
					images = append(images, c.Image)
					if !slices.Contains(c.Args, "--openshift=true") || !slices.Contains(c.Args, "--enabled-platforms="+DefaultEnabledPlatforms) {
						t.Errorf("operator args %v: want --openshift=true and --enabled-platforms", c.Args)
					}
					if !slices.Contains(c.Env, corev1.EnvVar{Name: "RELEASE_VERSION", Value: ReleaseVersionPlaceholder}) {
						t.Errorf("operator env %v lacks RELEASE_VERSION", c.Env)
					}
				}
				if x.Spec.Template.Annotations["openshift.io/required-scc"] != nonRootSCC {
					t.Errorf("operator pod's SCC %q: its fixed non-root UID needs %s", x.Spec.Template.Annotations["openshift.io/required-scc"], nonRootSCC)
				}
			case *unstructured.Unstructured:
				if x.GetKind() == "ClusterOperator" {
					clusterOperator = i
					versions, _, _ := unstructured.NestedSlice(x.Object, "status", "versions")
					if len(versions) == 0 || versions[0].(map[string]any)["name"] != "operator" {
						t.Errorf("ClusterOperator versions %v: want operator first", versions)
					}
					related, _, _ := unstructured.NestedSlice(x.Object, "status", "relatedObjects")
					var ns, other bool
					for _, r := range related {
						m := r.(map[string]any)
						if m["resource"] == "namespaces" && m["name"] == OpenShiftNamespace {
							ns = true
						} else {
							other = true
						}
					}
					if !ns || !other {
						t.Errorf("relatedObjects %v: want the namespace and more", related)
					}
				}
			}
		}
	}
	if deployment < 0 || clusterOperator < 0 || clusterOperator < deployment {
		t.Errorf("ClusterOperator file (%d) must sort after the Deployment's (%d): %v", clusterOperator, deployment, names)
	}
	var stream struct {
		Kind, APIVersion string
		Spec             struct {
			Tags []struct {
				Name string
				From struct{ Kind, Name string }
			}
		}
	}
	if err := yaml.UnmarshalStrict(refs, &stream); err != nil {
		t.Fatalf("image-references: %v", err)
	}
	known := map[string]bool{}
	for _, tag := range stream.Spec.Tags {
		known[tag.From.Name] = true
	}
	for _, img := range images {
		if !known[img] {
			t.Errorf("image %s is not in image-references", img)
		}
	}
}

// On OpenShift the operands get the service CA's certificate, the TLS
// profile, the SCCs they need and a namespace open to every node.
func TestOpenShiftOperands(t *testing.T) {
	tlsArgs := []string{"--tls-min-version=VersionTLS12"}
	p := Params{Namespace: OpenShiftNamespace, OpenShift: &OpenShiftParams{TLSArgs: tlsArgs}}
	objs := append(Operands(p), Namespace(p))
	OpenShiftify(p, objs[len(objs)-1:])
	var sawSCC, sawService, sawTLS, sawNS bool
	for _, o := range objs {
		switch x := o.(type) {
		case *rbacv1.ClusterRole:
			if x.Name == HandlerName {
				for _, r := range x.Rules {
					if slices.Contains(r.Resources, "securitycontextconstraints") && slices.Equal(r.ResourceNames, []string{"privileged"}) && slices.Equal(r.Verbs, []string{"use"}) {
						sawSCC = true
					}
				}
			}
		case *corev1.Service:
			if x.Name == WebhookName && x.Annotations[ServingCertAnnotation] == WebhookServingSecret {
				sawService = true
			}
		case *appsv1.Deployment:
			if x.Name == WebhookName && slices.Contains(x.Spec.Template.Spec.Containers[0].Args, tlsArgs[0]) {
				sawTLS = true
			}
			if x.Spec.Template.Annotations["openshift.io/required-scc"] != nonRootSCC {
				t.Errorf("Deployment %s: required-scc %q", x.Name, x.Spec.Template.Annotations["openshift.io/required-scc"])
			}
		case *appsv1.DaemonSet:
			if x.Spec.Template.Annotations["openshift.io/required-scc"] != "privileged" {
				t.Errorf("DaemonSet %s: required-scc %q", x.Name, x.Spec.Template.Annotations["openshift.io/required-scc"])
			}
		case *corev1.Namespace:
			_, open := x.Annotations["openshift.io/node-selector"]
			sawNS = open && x.Labels["openshift.io/cluster-monitoring"] == "true"
		}
	}
	for what, ok := range map[string]bool{"handler SCC rule": sawSCC, "webhook Service serving-cert annotation": sawService, "webhook TLS args": sawTLS, "namespace node-selector and monitoring": sawNS} {
		if !ok {
			t.Errorf("missing: %s", what)
		}
	}
	// Elsewhere nothing of it.
	for _, o := range Operands(Params{}) {
		for k := range o.GetAnnotations() {
			if strings.Contains(k, "openshift") {
				t.Errorf("%s %s has %s outside OpenShift", kindOf(o), o.GetName(), k)
			}
		}
	}
}

func kindOf(o any) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	return fmt.Sprintf("%T", o)
}

// The payload's CRDs are deploy/crds' (what controller-gen wrote), only
// annotated: encoding them must not drop what an empty value means
// (subresources.status: {} turns the status subresource on).
func TestOpenShiftPayloadCRDs(t *testing.T) {
	files, _, err := OpenShiftPayload(Params{})
	if err != nil {
		t.Fatal(err)
	}
	var crdFile []client.Object
	for n, objs := range files {
		if strings.HasSuffix(n, "_crds.yaml") {
			crdFile = objs
		}
	}
	y, err := EncodeYAML(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, doc := range strings.Split(string(y), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		md := m["metadata"].(map[string]any)
		delete(md, "annotations")
		got = append(got, m)
	}
	orig, err := deploy.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(orig) != len(got) {
		t.Fatalf("%d CRDs in the payload, %d in deploy/crds", len(got), len(orig))
	}
	for i, doc := range orig {
		var want map[string]any
		if err := yaml.Unmarshal(doc, &want); err != nil {
			t.Fatal(err)
		}
		if md, ok := want["metadata"].(map[string]any); ok {
			delete(md, "annotations")
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got[i])
		if string(wb) != string(gb) {
			t.Errorf("payload CRD %d differs from deploy/crds:\n%s\n---- vs ----\n%s", i, gb, wb)
		}
	}
}
