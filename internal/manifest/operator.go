package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OperatorRBAC is the operator's identity: it reads NMStates and writes
// their status, and creates, updates and deletes exactly the kinds of
// objects it renders. It may grant the components' roles without holding
// their rights itself (escalate and bind, limited to those roles' names).
// No wildcards.
func OperatorRBAC(p Params) []client.Object {
	p = p.withDefaults()
	manage := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	componentRoles := []string{HandlerName, ControllerName, WebhookName, HandlerName + "-events", HandlerName + "-node-lock", ControllerName + "-leader-election", WebhookName + "-secrets",
		ReaderName, MetricsAuthName, MetricsReaderName, ConsolePluginName}
	sa := &corev1.ServiceAccount{ObjectMeta: p.meta(OperatorName, ComponentOperator)}
	role := &rbacv1.ClusterRole{
		ObjectMeta: p.clusterMeta(OperatorName, ComponentOperator),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nmstates"}, Verbs: []string{"get", "list", "watch", "delete"}},
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nmstates/status"}, Verbs: []string{"get", "update", "patch"}},
			// The components' namespace (never deleted by the operator).
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
			// Roles: cluster-wide ones, the components' in this namespace
			// and the handler's Events role in default.
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"}, Verbs: manage},
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles", "roles"}, ResourceNames: componentRoles, Verbs: []string{"escalate", "bind"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{
				"validatingwebhookconfigurations", "mutatingwebhookconfigurations",
				"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: manage},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
	binding := clusterBinding(p, OperatorName, ComponentOperator, OperatorName)
	// What lives in its own namespace: the components' workloads and
	// Services, their certificates' Secrets, its Lease.
	local := &rbacv1.Role{
		ObjectMeta: p.meta(OperatorName, ComponentOperator),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts", "services", "secrets"}, Verbs: manage},
			// Its own pod: its image is the operands'.
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
			{APIGroups: []string{"apps"}, Resources: []string{"daemonsets", "deployments"}, Verbs: manage},
			{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: manage},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: manage},
			// A ServiceMonitor when the Prometheus operator's CRD exists;
			// cert-manager objects when asked for.
			{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"servicemonitors"}, Verbs: manage},
			{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates", "issuers"}, Verbs: manage},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{OperatorName}, Verbs: []string{"get", "update"}},
		},
	}
	localBinding := &rbacv1.RoleBinding{
		ObjectMeta: p.meta(OperatorName, ComponentOperator),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: OperatorName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: OperatorName, Namespace: p.Namespace}},
	}
	return []client.Object{sa, role, binding, local, localBinding}
}

// OperatorDeployment runs the operator: one replica (a Lease keeps a
// second one idle during a rollout), no privileges, on the control plane
// where possible.
func OperatorDeployment(p Params) *appsv1.Deployment {
	p = p.withDefaults()
	sel, tol, aff := p.infraPlacement()
	ready, live := healthProbes("health", corev1.URISchemeHTTP)
	return &appsv1.Deployment{
		ObjectMeta: p.meta(OperatorName, ComponentOperator),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: selector(ComponentOperator),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.labels(ComponentOperator)},
				Spec: corev1.PodSpec{
					ServiceAccountName: OperatorName,
					PriorityClassName:  "system-cluster-critical",
					SecurityContext:    nonRootPod(),
					NodeSelector:       sel,
					Tolerations:        tol,
					Affinity:           aff,
					Containers: []corev1.Container{{
						Name:            "operator",
						Image:           p.Image,
						ImagePullPolicy: p.ImagePullPolicy,
						Command:         []string{"/usr/bin/knmstate", "operator"},
						// The operands run the operator's own image (one
						// binary, one version): it reads it from its pod,
						// so whatever sets the image (kustomize, Helm,
						// an edit) sets it once.
						Args: append([]string{
							"--namespace=$(POD_NAMESPACE)",
							"--pod-name=$(POD_NAME)",
							"--health-probe-bind-address=:8081",
						}, handlerArgFlags(p.HandlerArgs)...),
						Env: []corev1.EnvVar{
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						},
						SecurityContext: restrictedContainer(),
						Resources:       p.operatorResources(),
						Ports:           []corev1.ContainerPort{{Name: "health", ContainerPort: 8081}},
						ReadinessProbe:  ready,
						LivenessProbe:   live,
					}},
				},
			},
		},
	}
}

// handlerArgFlags passes extra handler arguments through the operator.
func handlerArgFlags(args []string) []string {
	var out []string
	for _, a := range args {
		out = append(out, "--handler-arg="+a)
	}
	return out
}

func (p Params) operatorResources() corev1.ResourceRequirements {
	if p.OperatorResources != nil {
		return *p.OperatorResources
	}
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("10m"),
		corev1.ResourceMemory: resource.MustParse("40Mi"),
	}}
}
