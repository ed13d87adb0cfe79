package certs

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// Rules are the RBAC rules the Manager needs for cfg, least privilege:
// namespaced for a Role in cfg.Namespace, cluster for a ClusterRole. Every
// rule names its objects except create, which RBAC cannot restrict by
// name. The cert-manager rules are always there, so that a switch between
// issuers needs no RBAC change (they grant nothing where cert-manager is
// not installed).
func Rules(cfg Config) (namespaced, cluster []rbacv1.PolicyRule) {
	cfg.defaults()
	read := []string{"get", "list", "watch"}
	namespaced = []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{cfg.CASecret, cfg.ServingSecret},
			Verbs: append(read, "update", "delete")},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{certManagerGroupVersion.Group}, Resources: []string{"issuers"},
			ResourceNames: []string{cfg.selfSignedIssuerName(), cfg.caName()}, Verbs: append(read, "patch", "delete")},
		{APIGroups: []string{certManagerGroupVersion.Group}, Resources: []string{"certificates"},
			ResourceNames: []string{cfg.caName(), cfg.servingCertificateName()}, Verbs: append(read, "patch", "delete")},
		{APIGroups: []string{certManagerGroupVersion.Group}, Resources: []string{"issuers", "certificates"}, Verbs: []string{"create"}},
	}
	if len(cfg.ValidatingConfigs) > 0 {
		cluster = append(cluster, rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations"},
			ResourceNames: cfg.ValidatingConfigs, Verbs: append(read, "update")})
	}
	if len(cfg.MutatingConfigs) > 0 {
		cluster = append(cluster, rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"},
			ResourceNames: cfg.MutatingConfigs, Verbs: append(read, "update")})
	}
	return namespaced, cluster
}

// SourceRules are the RBAC rules (for a Role in the Secret's namespace) a
// SecretSource of Secret name needs.
func SourceRules(name string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name}, Verbs: []string{"get", "list", "watch"}}}
}
