package manifest

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/internal/webhook"
)

// Names of the webhook's certificate Secrets (the operator's certificate
// manager writes them).
const (
	WebhookServingSecret = WebhookName + "-serving-cert"
	WebhookCASecret      = WebhookName + "-ca"
)

// WebhookRBAC is the admission webhook's identity: it reads its serving
// certificate's Secret (watched, so a rotated certificate is served at
// once) and nothing else; the objects it judges come in the requests.
func WebhookRBAC(p Params) []client.Object {
	p = p.withDefaults()
	sa := &corev1.ServiceAccount{ObjectMeta: p.meta(WebhookName, ComponentWebhook)}
	role := &rbacv1.Role{
		ObjectMeta: p.meta(WebhookName+"-secrets", ComponentWebhook),
		Rules: []rbacv1.PolicyRule{
			// list and watch cannot be limited by name in RBAC terms the
			// client's field selector meets; get can.
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{WebhookServingSecret}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: p.meta(WebhookName+"-secrets", ComponentWebhook),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: WebhookName + "-secrets"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: WebhookName, Namespace: p.Namespace}},
	}
	return []client.Object{sa, role, binding}
}

// WebhookDeployment runs the admission webhook: two replicas on different
// nodes where possible and a disruption budget keeping one, because its
// validation fails closed (failurePolicy Fail).
func WebhookDeployment(p Params) *appsv1.Deployment {
	p = p.withDefaults()
	sel, tol, aff := p.infraPlacement()
	ready, live := healthProbes("health", corev1.URISchemeHTTP)
	return &appsv1.Deployment{
		ObjectMeta: p.meta(WebhookName, ComponentWebhook),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(2)),
			Selector: selector(ComponentWebhook),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.labels(ComponentWebhook)},
				Spec: corev1.PodSpec{
					ServiceAccountName:        WebhookName,
					PriorityClassName:         "system-cluster-critical",
					SecurityContext:           nonRootPod(),
					NodeSelector:              sel,
					Tolerations:               tol,
					Affinity:                  aff,
					TopologySpreadConstraints: spreadByNode(ComponentWebhook, corev1.ScheduleAnyway),
					Containers: []corev1.Container{{
						Name:            "webhook",
						Image:           p.Image,
						ImagePullPolicy: p.ImagePullPolicy,
						Command:         []string{"/usr/bin/knmstate", "webhook"},
						Args: []string{
							"--secret-namespace=$(POD_NAMESPACE)",
							"--secret-name=" + WebhookServingSecret,
							"--port=" + itoa(webhookPort),
							"--health-probe-bind-address=:8081",
						},
						Env: []corev1.EnvVar{
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
						},
						SecurityContext: restrictedContainer(),
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("10m"),
							corev1.ResourceMemory: resource.MustParse("30Mi"),
						}},
						Ports: []corev1.ContainerPort{
							{Name: "webhook", ContainerPort: webhookPort},
							{Name: "health", ContainerPort: 8081},
						},
						ReadinessProbe: ready,
						LivenessProbe:  live,
					}},
				},
			},
		},
	}
}

// WebhookService is where the API server sends admission requests (443 to
// the pods' webhook port). Not-ready pods are included, as upstream does:
// a webhook pod answers before its readiness probe passes.
func WebhookService(p Params) *corev1.Service {
	p = p.withDefaults()
	return &corev1.Service{
		ObjectMeta: p.meta(WebhookName, ComponentWebhook),
		Spec: corev1.ServiceSpec{
			Selector:                 selector(ComponentWebhook).MatchLabels,
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "webhook", Port: 443, TargetPort: intstr.FromString("webhook")}},
		},
	}
}

// WebhookPDB keeps one webhook replica through voluntary disruptions.
func WebhookPDB(p Params) *policyv1.PodDisruptionBudget {
	p = p.withDefaults()
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: p.meta(WebhookName, ComponentWebhook),
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: selector(ComponentWebhook)},
	}
}

// WebhookConfigurations are the validating (the engine's decoding and
// validation of a policy, failurePolicy Fail) and mutating (upstream's
// three mutations, failurePolicy Ignore) webhook configurations, reaching
// the webhook's Service. They carry no CA bundle: the certificate manager
// injects it, and applying them by server-side apply without the field
// leaves it the manager's.
func WebhookConfigurations(p Params) []client.Object {
	p = p.withDefaults()
	e := webhook.Endpoint{ServiceNamespace: p.Namespace, ServiceName: WebhookName, Annotations: p.WebhookAnnotations}
	v, m := webhook.ValidatingConfiguration(e), webhook.MutatingConfiguration(e)
	for _, o := range []client.Object{v, m} {
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, val := range p.labels(ComponentWebhook) {
			l[k] = val
		}
		o.SetLabels(l)
	}
	return []client.Object{v, m}
}

// MetricsService exposes the controller's metrics (upstream's metric
// names are served by the controller: it watches what they count).
func MetricsService(p Params) *corev1.Service {
	p = p.withDefaults()
	svc := &corev1.Service{
		ObjectMeta: p.meta(MetricsName, ComponentController),
		Spec: corev1.ServiceSpec{
			Selector: selector(ComponentController).MatchLabels,
			Ports:    []corev1.ServicePort{{Name: "metrics", Port: metricsPort, TargetPort: intstr.FromString("metrics")}},
		},
	}
	svc.Labels["prometheus.knmstate.io"] = "true"
	return svc
}

func itoa(n int) string { return strconv.Itoa(n) }
