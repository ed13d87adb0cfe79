package manifest

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestOperatorMayGrantEveryRole: the API server lets the operator create a
// role only with rights it holds or with escalate on that role's name (and
// bind it only with bind), so every role among the operands must be named
// in the operator's escalate and bind rule.
func TestOperatorMayGrantEveryRole(t *testing.T) {
	var grantable []string
	for _, o := range OperatorRBAC(Params{}) {
		cr, ok := o.(*rbacv1.ClusterRole)
		if !ok || cr.Name != OperatorName {
			continue
		}
		for _, r := range cr.Rules {
			if slices.Contains(r.Verbs, "escalate") && slices.Contains(r.Verbs, "bind") {
				grantable = append(grantable, r.ResourceNames...)
			}
		}
	}
	for _, o := range Operands(Params{}) {
		switch o.(type) {
		case *rbacv1.ClusterRole, *rbacv1.Role:
			if !slices.Contains(grantable, o.GetName()) {
				t.Errorf("%T %s: not in the operator's escalate and bind rule %v", o, o.GetName(), grantable)
			}
		}
	}
}
