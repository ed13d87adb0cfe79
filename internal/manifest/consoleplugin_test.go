package manifest

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The console plugin's objects fit together: the ConsolePlugin names the
// Service and its port, the Service asks the service CA for the Secret the
// pod mounts, the network policy opens the port the container listens on,
// the pod runs as the ServiceAccount its Role lets use its SCC, and the
// name is the plugin build's (web/plugin/package.json).
func TestConsolePluginObjects(t *testing.T) {
	p := Params{Namespace: OpenShiftNamespace, OpenShift: &OpenShiftParams{TLSArgs: []string{"--tls-min-version=VersionTLS13"}}}
	objs := ConsolePlugin(p, "registry.example/knmstate-console-plugin@sha256:0")
	var (
		dep  *appsv1.Deployment
		svc  *corev1.Service
		np   *networkingv1.NetworkPolicy
		role *rbacv1.Role
		cp   *unstructured.Unstructured
	)
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			dep = v
		case *corev1.Service:
			svc = v
		case *networkingv1.NetworkPolicy:
			np = v
		case *rbacv1.Role:
			role = v
		case *unstructured.Unstructured:
			cp = v
		}
		if ns := o.GetNamespace(); o.GetName() != ConsolePluginName && o.GetName() != "knmstate-allow-ingress-console-plugin" || (ns != "" && ns != OpenShiftNamespace) {
			t.Errorf("%T %s/%s: not the plugin's name or namespace", o, ns, o.GetName())
		}
	}
	if dep == nil || svc == nil || np == nil || role == nil || cp == nil {
		t.Fatalf("missing objects: %v", objs)
	}
	backend, _, _ := unstructured.NestedMap(cp.Object, "spec", "backend", "service")
	if backend["name"] != svc.Name || backend["namespace"] != svc.Namespace || backend["port"] != int64(svc.Spec.Ports[0].Port) {
		t.Errorf("ConsolePlugin backend %v, Service %s/%s port %d", backend, svc.Namespace, svc.Name, svc.Spec.Ports[0].Port)
	}
	pod := dep.Spec.Template.Spec
	ctr := pod.Containers[0]
	if got := svc.Annotations[ServingCertAnnotation]; got != ConsolePluginServingSecret || pod.Volumes[0].Secret.SecretName != got {
		t.Errorf("Service asks for %q, the pod mounts %q", got, pod.Volumes[0].Secret.SecretName)
	}
	if svc.Spec.Ports[0].TargetPort.StrVal != ctr.Ports[0].Name || np.Spec.Ingress[0].Ports[0].Port.IntVal != ctr.Ports[0].ContainerPort {
		t.Errorf("Service targets %v, policy opens %v, container listens on %v", svc.Spec.Ports[0].TargetPort, np.Spec.Ingress[0].Ports[0].Port, ctr.Ports[0])
	}
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("network policy selects %s=%s, the pod has %q", k, v, dep.Spec.Template.Labels[k])
		}
	}
	if !slices.Contains(ctr.Args, "--tls-min-version=VersionTLS13") || !slices.Contains(ctr.Args, "--cert-dir="+ctr.VolumeMounts[0].MountPath) {
		t.Errorf("args %v: want the TLS profile and the mounted certificate", ctr.Args)
	}
	if pod.ServiceAccountName != ConsolePluginName || dep.Spec.Template.Annotations["openshift.io/required-scc"] != nonRootSCC || role.Rules[0].ResourceNames[0] != nonRootSCC {
		t.Errorf("pod as %s with SCC %q; its Role allows %v", pod.ServiceAccountName, dep.Spec.Template.Annotations["openshift.io/required-scc"], role.Rules)
	}
	b, err := os.ReadFile("../../web/plugin/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		ConsolePlugin struct{ Name string } `json:"consolePlugin"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.ConsolePlugin.Name != ConsolePluginName {
		t.Errorf("web/plugin/package.json names the plugin %q, the manifests %q", pkg.ConsolePlugin.Name, ConsolePluginName)
	}
}
