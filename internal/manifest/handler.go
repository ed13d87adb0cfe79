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

// HandlerLockNamespace holds the handlers' node locks, Leases named
// HandlerLockPrefix + node (internal/handler: DefaultLockNamespace,
// LeaseName).
const (
	HandlerLockNamespace = "kube-node-lease"
	HandlerLockPrefix    = "knmstate-"
)

// handlerMetricsPort is the handler's metrics port on its node.
const handlerMetricsPort = 9894

// Paths inside the handler's container.
const (
	handlerStateDir   = "/var/lib/knmstate"
	handlerResolvConf = "/host/etc/resolv.conf"
	handlerReadyFile  = "/tmp/healthy"
)

// Host paths the handler shares with the node's network daemons, each
// mounted at the same path in the container, as upstream's DaemonSet
// mounts them (docs/networkmanager.md, "On a node").
const (
	// HostDBusDir holds the system bus socket, system_bus_socket:
	// NetworkManager's bus (--backend auto finds NetworkManager there).
	HostDBusDir = "/run/dbus"
	// HostSystemBus is the system bus's address inside the container
	// (DBUS_SYSTEM_BUS_ADDRESS): the image has no /var/run link to /run,
	// where D-Bus clients look by default.
	HostSystemBus = "unix:path=" + HostDBusDir + "/system_bus_socket"
	// HostOVSDir holds the Open vSwitch database's socket, db.sock (the
	// handler's default --ovsdb).
	HostOVSDir = "/run/openvswitch"
	// HostNmstateDir is upstream's handler directory (its node lock
	// file, handler_lock); knmstate's node lock is a Lease and writes
	// nothing there.
	HostNmstateDir = "/var/k8s_nmstate"
)

// HandlerRBAC is the per-node handler's identity: it reports its node's
// network state (NodeNetworkState) and enacts policies on its node
// (enactments). It never writes policies or their status (the controller is
// the single writer) and takes part in no leader election. RBAC cannot
// scope these rules to the handler's own node; the admission policy of
// NodeScopePolicy does (a handler's token carries its node).
func HandlerRBAC(p Params) []client.Object {
	p = p.withDefaults()
	sa := &corev1.ServiceAccount{ObjectMeta: p.meta(HandlerName, ComponentHandler)}
	role := &rbacv1.ClusterRole{
		ObjectMeta: p.clusterMeta(HandlerName, ComponentHandler),
		Rules: []rbacv1.PolicyRule{
			// Its node: labels (policy selectors), readiness, owner of the
			// NodeNetworkState.
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkconfigurationpolicies"}, Verbs: []string{"get", "list", "watch"}},
			// Enactments of its node: created, labelled, deleted when the
			// policy stops matching; their status is the handler's alone.
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkconfigurationenactments"},
				Verbs: []string{"create", "get", "list", "watch", "update", "patch", "delete"}},
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkconfigurationenactments/status"}, Verbs: []string{"get", "update", "patch"}},
			// Its NodeNetworkState; the force-refresh label is set with
			// patch.
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkstates"}, Verbs: []string{"create", "get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkstates/status"}, Verbs: []string{"get", "update", "patch"}},
		},
	}
	binding := clusterBinding(p, HandlerName, ComponentHandler, HandlerName)
	// Events about policies: policies are cluster-scoped, so their Events
	// land in the default namespace, as kubernetes-nmstate's do.
	events := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: HandlerName + "-events", Namespace: "default", Labels: p.labels(ComponentHandler)},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
	eventsBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: HandlerName + "-events", Namespace: "default", Labels: p.labels(ComponentHandler)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: HandlerName + "-events"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: HandlerName, Namespace: p.Namespace}},
	}
	// The node lock: a Lease per node, knmstate-NODE in kube-node-lease
	// (the NodeScope admission policy keeps each handler to its own
	// node's Lease, away from the kubelets' heartbeats there).
	lock := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: HandlerName + "-node-lock", Namespace: HandlerLockNamespace, Labels: p.labels(ComponentHandler)},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		},
	}
	lockBinding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: HandlerName + "-node-lock", Namespace: HandlerLockNamespace, Labels: p.labels(ComponentHandler)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: HandlerName + "-node-lock"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: HandlerName, Namespace: p.Namespace}},
	}
	return []client.Object{sa, role, binding, events, eventsBinding, lock, lockBinding}
}

// clusterBinding binds a ClusterRole named like the ServiceAccount sa.
func clusterBinding(p Params, name, component, sa string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: p.clusterMeta(name, component),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: p.Namespace}},
	}
}

// HandlerDaemonSet runs the handler on every node, on the node's own
// network (hostNetwork). Privileged: it changes the node's links,
// addresses, routes, network sysctls (/proc/sys is read-only in any
// container that is not privileged, and per-port IPv6 settings have no
// netlink call) and hostname; see docs/lab.md for what was measured with
// capabilities alone.
func HandlerDaemonSet(p Params) *appsv1.DaemonSet {
	p = p.withDefaults()
	sel, tol, aff := p.handlerPlacement()
	args := []string{
		"--node=$(NODE_NAME)",
		// nmstatectl's own state directory: a checkpoint left by a manual
		// `nmstatectl apply --no-commit` in the pod is the handler's to
		// roll back before its next apply.
		"--state-dir=" + handlerStateDir,
		"--runtime-state-dir=" + handlerStateDir + "/noded",
		"--resolv-conf=" + handlerResolvConf,
		"--uts-ns=/proc/self/ns/uts",
		"--ready-file=" + handlerReadyFile,
		"--probe-dns-host=" + p.dnsProbeHost(),
		// One handler per node: a second one (an overlapping upgrade, a
		// second install in another namespace) waits, not Ready, for the
		// node's Lease in kube-node-lease.
		"--node-lock-namespace=" + HandlerLockNamespace,
		"--node-lock-identity=$(POD_NAME)",
		// Its own metrics (docs/metrics.md), HTTPS with a reader's token,
		// on the node's network: a port the node agents leave free.
		"--metrics-bind-address=:" + itoa(handlerMetricsPort),
	}
	if p.debug() {
		args = append(args, "-v=1")
	}
	args = append(args, p.HandlerArgs...)
	maxUnavailable := intstr.FromString("10%")
	privileged := true
	hostPathDir, hostPathFile := corev1.HostPathDirectoryOrCreate, corev1.HostPathFile
	ds := &appsv1.DaemonSet{
		ObjectMeta: p.meta(HandlerName, ComponentHandler),
		Spec: appsv1.DaemonSetSpec{
			Selector: selector(ComponentHandler),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.labels(ComponentHandler)},
				Spec: corev1.PodSpec{
					ServiceAccountName: HandlerName,
					HostNetwork:        true,
					// The node's own resolv.conf: the handler resolves what
					// the node does.
					DNSPolicy:                     corev1.DNSDefault,
					PriorityClassName:             "system-node-critical",
					NodeSelector:                  sel,
					Tolerations:                   tol,
					Affinity:                      aff,
					TerminationGracePeriodSeconds: ptr(int64(30)),
					Containers: []corev1.Container{{
						Name:            "handler",
						Image:           p.Image,
						ImagePullPolicy: p.ImagePullPolicy,
						Command:         []string{"/usr/bin/knmstate", "handler"},
						Args:            args,
						Env: []corev1.EnvVar{
							{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
							{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							// For the handler and for nmstatectl run in the
							// pod (kubectl exec) alike.
							{Name: "DBUS_SYSTEM_BUS_ADDRESS", Value: HostSystemBus},
						},
						SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
						Ports:           []corev1.ContainerPort{{Name: "metrics", ContainerPort: handlerMetricsPort}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("10m"),
							corev1.ResourceMemory: resource.MustParse("40Mi"),
						}},
						// Ready once the first NodeNetworkState is written;
						// alive while the handler refreshes the file (every
						// 30 s).
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/usr/bin/knmstate", "health", "--file=" + handlerReadyFile}}},
							InitialDelaySeconds: 1, PeriodSeconds: 5, TimeoutSeconds: 5,
						},
						LivenessProbe: &corev1.Probe{
							ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/usr/bin/knmstate", "health", "--file=" + handlerReadyFile, "--max-age=5m"}}},
							InitialDelaySeconds: 60, PeriodSeconds: 60, TimeoutSeconds: 10, FailureThreshold: 5,
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "state", MountPath: handlerStateDir},
							{Name: "resolv-conf", MountPath: handlerResolvConf},
							{Name: "dbus", MountPath: HostDBusDir},
							{Name: "ovs", MountPath: HostOVSDir},
							{Name: "nmstate-lock", MountPath: HostNmstateDir},
						},
					}},
					Volumes: []corev1.Volume{
						// Checkpoints (rollback after a crash or reboot) and
						// the node runtime's state (DHCP leases, dynamic
						// settings handed to it).
						{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/knmstate", Type: &hostPathDir}}},
						{Name: "resolv-conf", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/resolv.conf", Type: &hostPathFile}}},
						// The bus socket's directory, not the socket
						// (upstream mounts the socket, type Socket): a
						// node without NetworkManager has no socket, and
						// type Socket would keep the pod from starting
						// there (an unchecked type would make kubelet
						// create a directory in the socket's place);
						// the directory also shows a socket made after
						// the pod started (a bus restarted, a node whose
						// bus comes up late), where a bind of the socket
						// file would keep the dead one.
						{Name: "dbus", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: HostDBusDir, Type: &hostPathDir}}},
						// OVSDB's socket directory; empty where the node
						// has no Open vSwitch (OVS states are refused
						// until a database listens).
						{Name: "ovs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: HostOVSDir, Type: &hostPathDir}}},
						{Name: "nmstate-lock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: HostNmstateDir, Type: &hostPathDir}}},
					},
				},
			},
		},
	}
	return ds
}

func ptr[T any](v T) *T { return &v }
