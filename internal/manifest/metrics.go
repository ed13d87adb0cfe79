package manifest

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// ServiceMonitor has the Prometheus operator scrape the controller's
// metrics Service (HTTPS with Prometheus' own token, which must be bound
// to MetricsReaderName). Applied only where its CRD exists; an unstructured
// object, since knmstate does not depend on the Prometheus operator's
// types.
func ServiceMonitor(p Params) client.Object {
	p = p.withDefaults()
	labels := map[string]any{}
	for k, v := range p.labels(ComponentController) {
		labels[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "ServiceMonitor",
		"metadata":   map[string]any{"name": MetricsName, "namespace": p.Namespace, "labels": labels},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"prometheus.knmstate.io": "true"}},
			"endpoints": []any{map[string]any{
				"port":            "metrics",
				"scheme":          "https",
				"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
				"tlsConfig":       map[string]any{"insecureSkipVerify": true},
			}},
		},
	}}
}
