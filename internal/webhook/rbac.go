package webhook

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/knmstate/knmstate/internal/certs"
)

// Rules are the RBAC rules (for a Role in the Secret's namespace) the
// webhook server needs: reading its serving certificate's Secret, and
// nothing else.
func Rules(secretName string) []rbacv1.PolicyRule { return certs.SourceRules(secretName) }
