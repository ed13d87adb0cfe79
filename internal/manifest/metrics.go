package manifest

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClusterRoles of the metrics endpoints (docs/metrics.md).
const (
	// MetricsAuthName lets the controller and the handlers ask the API
	// server who scrapes them and whether they may (--metrics-secure).
	MetricsAuthName = "knmstate-metrics-auth"
	// MetricsReaderName lets a scraper get /metrics; whoever scrapes
	// (Prometheus' ServiceAccount) is bound to it, not by knmstate.
	MetricsReaderName = "knmstate-metrics-reader"
)

// MetricsRBAC is what the secure metrics endpoints need: the components
// review scrapers' tokens (TokenReview) and rights (SubjectAccessReview),
// as kube-rbac-proxy does; a scraper needs get on /metrics.
func MetricsRBAC(p Params) []client.Object {
	p = p.withDefaults()
	auth := &rbacv1.ClusterRole{
		ObjectMeta: p.clusterMeta(MetricsAuthName, "rbac"),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: p.clusterMeta(MetricsAuthName, "rbac"),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsAuthName},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Name: ControllerName, Namespace: p.Namespace},
			{Kind: rbacv1.ServiceAccountKind, Name: HandlerName, Namespace: p.Namespace},
		},
	}
	reader := &rbacv1.ClusterRole{
		ObjectMeta: p.clusterMeta(MetricsReaderName, "rbac"),
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	return []client.Object{auth, binding, reader}
}
