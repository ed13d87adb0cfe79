package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControllerRBAC is the cluster controller's identity: the single writer
// of policy status, rollout permits (enactment annotations) and enactment
// garbage collection. Least privilege: it reads nodes, node network states
// and policies, patches and deletes enactments (never their status), writes
// only the status of policies, and holds its leader-election Lease in its
// own namespace.
func ControllerRBAC(p Params) []client.Object {
	p = p.withDefaults()
	sa := &corev1.ServiceAccount{ObjectMeta: p.meta(ControllerName, ComponentController)}
	role := &rbacv1.ClusterRole{
		ObjectMeta: p.clusterMeta(ControllerName, ComponentController),
		Rules: []rbacv1.PolicyRule{
			// Which nodes match a policy, whether they are Ready.
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			// Policies are read, and patched only to add and remove the
			// knmstate.io/revert-on-delete finalizer and to record the
			// knmstate.io/ipv4-pool addresses; their status is written by
			// this controller only.
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkconfigurationpolicies"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkconfigurationpolicies/status"}, Verbs: []string{"get", "update", "patch"}},
			// Enactments: permits and aborts are metadata patches; garbage
			// is deleted. No create (handlers create them) and no status
			// (handlers write it).
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkconfigurationenactments"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
			// A node runs a handler when its NodeNetworkState exists
			// (metadata only).
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkstates"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := clusterBinding(p, ControllerName, ComponentController, ControllerName)
	// Leader election: one Lease, in the controller's namespace, plus the
	// Events the elector records about leadership changes. create cannot be
	// limited to a name (RBAC does not know it before the object exists);
	// everything else is limited to the one Lease.
	le := &rbacv1.Role{
		ObjectMeta: p.meta(ControllerName+"-leader-election", ComponentController),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{ControllerName}, Verbs: []string{"get", "update"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
	leBinding := &rbacv1.RoleBinding{
		ObjectMeta: p.meta(ControllerName+"-leader-election", ComponentController),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ControllerName + "-leader-election"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ControllerName, Namespace: p.Namespace}},
	}
	return []client.Object{sa, role, binding, le, leBinding}
}

// nonRootPod is the security context of the cluster-wide components: no
// privileges at all.
func nonRootPod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr(true),
		RunAsUser:      ptr(int64(65532)),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// spreadByNode spreads a component's replicas over nodes where possible.
func spreadByNode(component string, when corev1.UnsatisfiableConstraintAction) []corev1.TopologySpreadConstraint {
	return []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: when,
		LabelSelector: selector(component),
	}}
}

// healthProbes are HTTP probes on the named port's /readyz and /healthz.
func healthProbes(port string, scheme corev1.URIScheme) (readiness, liveness *corev1.Probe) {
	get := func(path string) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(port), Scheme: scheme}}
	}
	return &corev1.Probe{ProbeHandler: get("/readyz"), PeriodSeconds: 5},
		&corev1.Probe{ProbeHandler: get("/healthz"), InitialDelaySeconds: 15, PeriodSeconds: 20}
}

// ControllerDeployment runs the cluster controller: two replicas, the
// Lease decides which one acts; an ordinary pod on the pod network,
// without privileges.
func ControllerDeployment(p Params) *appsv1.Deployment {
	p = p.withDefaults()
	sel, tol, aff := p.infraPlacement()
	ready, live := healthProbes("health", corev1.URISchemeHTTP)
	return &appsv1.Deployment{
		ObjectMeta: p.meta(ControllerName, ComponentController),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(2)),
			Selector: selector(ComponentController),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.labels(ComponentController)},
				Spec: corev1.PodSpec{
					ServiceAccountName:        ControllerName,
					PriorityClassName:         "system-cluster-critical",
					SecurityContext:           nonRootPod(),
					NodeSelector:              sel,
					Tolerations:               tol,
					Affinity:                  aff,
					TopologySpreadConstraints: spreadByNode(ComponentController, corev1.ScheduleAnyway),
					Containers: []corev1.Container{{
						Name:            "controller",
						Image:           p.Image,
						ImagePullPolicy: p.ImagePullPolicy,
						Command:         []string{"/usr/bin/knmstate", "controller"},
						Args: []string{
							"--leader-elect=true",
							"--leader-election-namespace=$(POD_NAMESPACE)",
							"--health-probe-bind-address=:8081",
							"--metrics-bind-address=:8089",
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
							{Name: "health", ContainerPort: 8081},
							{Name: "metrics", ContainerPort: 8089},
						},
						ReadinessProbe: ready,
						LivenessProbe:  live,
					}},
				},
			},
		},
	}
}
