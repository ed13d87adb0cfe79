package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The OpenShift console plugin: the web views served by `knmstate
// console-plugin` from its own image, registered with the console by a
// ConsolePlugin (docs/openshift.md).
const (
	// ConsolePluginName names the ConsolePlugin (the name the console's
	// spec.plugins lists, and the plugin manifest's, web/plugin/package.json),
	// its Deployment, Service and ServiceAccount.
	ConsolePluginName = "knmstate-console-plugin"
	// ConsolePluginServingSecret is where the service CA writes the
	// plugin Service's serving certificate.
	ConsolePluginServingSecret = ConsolePluginName + "-cert"
	// OpenShiftConsolePluginImage is the payload's pull spec for the
	// plugin's image (image-references tag OpenShiftConsolePluginImageTag).
	OpenShiftConsolePluginImage    = "registry.ci.openshift.org/openshift:knmstate-console-plugin"
	OpenShiftConsolePluginImageTag = "knmstate-console-plugin"
	// ComponentConsolePlugin is the plugin's LabelComponent.
	ComponentConsolePlugin = "console-plugin"
	// ConsoleCapability is the cluster capability without which OpenShift
	// runs no console, and the operator deploys no plugin.
	ConsoleCapability = "Console"
	// ConsoleName is the console operator's configuration
	// (consoles.operator.openshift.io), whose spec.plugins enables plugins.
	ConsoleName = "cluster"
	// ClusterVersionName is the ClusterVersion whose status lists the
	// enabled capabilities.
	ClusterVersionName = "version"

	consolePluginPort = 9443
	consolePluginCert = "/var/serving-cert"
)

// ConsolePlugin is the console plugin for an NMState on OpenShift: its
// identity (allowed the nonroot-v2 SCC), the Deployment serving the
// plugin over TLS with the service CA's certificate, the Service the
// console's bridge proxies /api/plugins/knmstate-console-plugin/ to, the
// network policy letting it in, and the ConsolePlugin registering it.
// image is the plugin's image.
func ConsolePlugin(p Params, image string) []client.Object {
	p = p.withDefaults()
	sa := &corev1.ServiceAccount{ObjectMeta: p.meta(ConsolePluginName, ComponentConsolePlugin)}
	role := &rbacv1.Role{
		ObjectMeta: p.meta(ConsolePluginName, ComponentConsolePlugin),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"security.openshift.io"}, Resources: []string{"securitycontextconstraints"}, ResourceNames: []string{nonRootSCC}, Verbs: []string{"use"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: p.meta(ConsolePluginName, ComponentConsolePlugin),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ConsolePluginName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ConsolePluginName, Namespace: p.Namespace}},
	}
	sel, tol, aff := p.infraPlacement()
	probe := func(delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/plugin-manifest.json", Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS,
			}},
			InitialDelaySeconds: delay, PeriodSeconds: 10,
		}
	}
	dep := &appsv1.Deployment{
		ObjectMeta: p.meta(ConsolePluginName, ComponentConsolePlugin),
		Spec: appsv1.DeploymentSpec{
			// One replica: the console fetches the plugin when a page
			// loads, and a rollout starts the new pod first.
			Replicas: ptr(int32(1)),
			Selector: selector(ComponentConsolePlugin),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.labels(ComponentConsolePlugin)},
				Spec: corev1.PodSpec{
					ServiceAccountName:           ConsolePluginName,
					AutomountServiceAccountToken: ptr(false),
					SecurityContext:              nonRootPod(),
					NodeSelector:                 sel,
					Tolerations:                  tol,
					Affinity:                     aff,
					Containers: []corev1.Container{{
						Name:            "console-plugin",
						Image:           image,
						ImagePullPolicy: p.ImagePullPolicy,
						Command:         []string{"/usr/bin/knmstate", "console-plugin"},
						Args:            []string{"--cert-dir=" + consolePluginCert, "--listen=:" + itoa(consolePluginPort)},
						SecurityContext: restrictedContainer(),
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("5m"),
							corev1.ResourceMemory: resource.MustParse("20Mi"),
						}},
						Ports:          []corev1.ContainerPort{{Name: "https", ContainerPort: consolePluginPort}},
						ReadinessProbe: probe(0),
						LivenessProbe:  probe(15),
						VolumeMounts:   []corev1.VolumeMount{{Name: "serving-cert", MountPath: consolePluginCert, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "serving-cert", VolumeSource: corev1.VolumeSource{
						Secret: &corev1.SecretVolumeSource{SecretName: ConsolePluginServingSecret},
					}}},
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: p.meta(ConsolePluginName, ComponentConsolePlugin),
		Spec: corev1.ServiceSpec{
			Selector: selector(ComponentConsolePlugin).MatchLabels,
			Ports:    []corev1.ServicePort{{Name: "https", Port: consolePluginPort, TargetPort: intstr.FromString("https")}},
		},
	}
	// The namespace denies ingress to knmstate's pods by default
	// (NetworkPolicies): the console's bridge must reach this port.
	tcp := corev1.ProtocolTCP
	port := intstr.FromInt32(consolePluginPort)
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: p.meta("knmstate-allow-ingress-console-plugin", "network-policy"),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *selector(ComponentConsolePlugin),
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}}}},
		},
	}
	labels := map[string]any{}
	for k, v := range p.labels(ComponentConsolePlugin) {
		labels[k] = v
	}
	cp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "console.openshift.io/v1",
		"kind":       "ConsolePlugin",
		"metadata":   map[string]any{"name": ConsolePluginName, "labels": labels},
		"spec": map[string]any{
			"displayName": "knmstate",
			"backend": map[string]any{
				"type": "Service",
				"service": map[string]any{
					"name":      ConsolePluginName,
					"namespace": p.Namespace,
					"port":      int64(consolePluginPort),
					"basePath":  "/",
				},
			},
		},
	}}
	objs := []client.Object{sa, role, binding, svc, np, dep, cp}
	OpenShiftify(p, objs)
	return objs
}
