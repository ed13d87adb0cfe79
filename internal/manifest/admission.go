package manifest

import (
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names of the admission policies.
const (
	PolicyValidationName = "nncp-validation-policy"
	PermitGuardName      = "knmstate-rollout-permit-guard"
	NodeScopeName        = "knmstate-handler-node-scope"
)

func vap(meta metav1.ObjectMeta, rules []admissionv1.NamedRuleWithOperations, vars []admissionv1.Variable, validations []admissionv1.Validation) *admissionv1.ValidatingAdmissionPolicy {
	fail := admissionv1.Fail
	return &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: meta,
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: rules},
			Variables:        vars,
			Validations:      validations,
		},
	}
}

func vapBinding(meta metav1.ObjectMeta, policy string) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: meta,
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
}

func rule(versions, operations, resources []string) admissionv1.NamedRuleWithOperations {
	var ops []admissionv1.OperationType
	for _, o := range operations {
		ops = append(ops, admissionv1.OperationType(o))
	}
	return admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionv1.Rule{APIGroups: []string{"nmstate.io"}, APIVersions: versions, Resources: resources},
	}}
}

func validation(expr, message, messageExpr string, reason metav1.StatusReason) admissionv1.Validation {
	return admissionv1.Validation{Expression: expr, Message: message, MessageExpression: messageExpr, Reason: &reason}
}

// PolicyValidation is upstream's admission rules for
// NodeNetworkConfigurationPolicy, enforced by the API server itself (no
// webhook to deploy or to be down), with the same messages. Only the main
// resource is matched, never the status subresource, and every rule about
// the spec is guarded by "spec changed", so status writes and metadata-only
// updates are never blocked.
func PolicyValidation(p Params) []client.Object {
	p = p.withDefaults()
	meta := metav1.ObjectMeta{Name: PolicyValidationName}
	policy := vap(meta,
		[]admissionv1.NamedRuleWithOperations{rule([]string{"v1", "v1beta1"}, []string{"CREATE", "UPDATE"}, []string{"nodenetworkconfigurationpolicies"})},
		[]admissionv1.Variable{
			{Name: "specChanged", Expression: "request.operation == 'UPDATE' && " +
				"(has(object.spec) != has(oldObject.spec) || (has(object.spec) && object.spec != oldObject.spec))"},
			{Name: "hasCapture", Expression: "has(object.spec) && has(object.spec.capture)"},
			{Name: "hadCapture", Expression: "request.operation == 'UPDATE' && has(oldObject.spec) && has(oldObject.spec.capture)"},
		},
		[]admissionv1.Validation{
			// A policy's name becomes the value of the nmstate.io/policy
			// label of its enactments, so it must be a valid label value.
			validation("request.operation != 'CREATE' || (object.metadata.name.size() <= 63 && "+
				"object.metadata.name.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'))",
				"", `'invalid policy name: "' + object.metadata.name + '": must be no more than 63 characters or match label value format'`,
				metav1.StatusReasonInvalid),
			// Changing a policy while nodes are applying it has undefined
			// results: a spec change is allowed only once the previous one
			// has settled.
			validation("!variables.specChanged || (has(oldObject.status) && has(oldObject.status.conditions) && "+
				"oldObject.status.conditions.exists(c, c.type == 'Available' && has(c.reason) && c.reason != '' && c.reason != 'ConfigurationProgressing'))",
				"", "'policy ' + object.metadata.name + ' is still in progress'", metav1.StatusReasonForbidden),
			// Enactments cache resolved captures; changing the expressions
			// would make the cache lie.
			validation("!variables.specChanged || (variables.hasCapture == variables.hadCapture && "+
				"(!variables.hasCapture || object.spec.capture == oldObject.spec.capture))",
				"invalid policy operation: capture field cannot be modified", "", metav1.StatusReasonInvalid),
			validation("(request.operation != 'CREATE' && !variables.specChanged) || !has(object.spec) || !has(object.spec.nodeSelector) || "+
				"object.spec.nodeSelector.all(k, !format.labelValue().validate(object.spec.nodeSelector[k]).hasValue())",
				"nodeSelector values must be valid label values", "", metav1.StatusReasonInvalid),
		})
	return []client.Object{policy, vapBinding(metav1.ObjectMeta{Name: PolicyValidationName + "-binding"}, PolicyValidationName)}
}

// PermitGuard keeps the rollout permit and abort annotations of
// enactments (docs/rollout.md) the controller's alone: RBAC cannot say
// which fields of an enactment a subject may change, and the handler must
// be able to patch enactment metadata. Cluster admins may still repair by
// hand.
func PermitGuard(p Params) []client.Object {
	p = p.withDefaults()
	ann := func(obj, key string) string {
		return "has(" + obj + ".metadata.annotations) && '" + key + "' in " + obj + ".metadata.annotations ? " +
			obj + ".metadata.annotations['" + key + "'] : '<none>'"
	}
	meta := p.clusterMeta(PermitGuardName, ComponentController)
	policy := vap(meta,
		[]admissionv1.NamedRuleWithOperations{rule([]string{"v1beta1"}, []string{"CREATE", "UPDATE"}, []string{"nodenetworkconfigurationenactments"})},
		[]admissionv1.Variable{
			{Name: "privileged", Expression: "request.userInfo.username == '" + p.ServiceAccountUser(ControllerName) + "' || " +
				"'system:masters' in request.userInfo.groups"},
			{Name: "newPermit", Expression: ann("object", "nmstate.io/rollout-permit")},
			{Name: "newAbort", Expression: ann("object", "nmstate.io/rollout-abort")},
			{Name: "oldPermit", Expression: "request.operation == 'UPDATE' && " + ann("oldObject", "nmstate.io/rollout-permit")},
			{Name: "oldAbort", Expression: "request.operation == 'UPDATE' && " + ann("oldObject", "nmstate.io/rollout-abort")},
		},
		[]admissionv1.Validation{
			validation("variables.privileged || (variables.newPermit == variables.oldPermit && variables.newAbort == variables.oldAbort)", "",
				"'metadata.annotations: nmstate.io/rollout-permit and nmstate.io/rollout-abort are written by the knmstate controller only, not by ' + request.userInfo.username",
				metav1.StatusReasonForbidden),
		})
	return []client.Object{policy, vapBinding(p.clusterMeta(PermitGuardName, ComponentController), PermitGuardName)}
}

// NodeScope confines a handler to its own node's objects: RBAC grants
// every handler pod the same rights on all NodeNetworkStates and
// enactments, but a handler pod's service-account token is bound to its
// pod and carries the pod's node in the user's extra information
// (authentication.kubernetes.io/node-name). A handler identity may create,
// update, patch or delete only the NodeNetworkState named after that node
// and enactments labelled nmstate.io/node with it, and its node lock
// Lease knmstate-NODE (before and after the
// change: no relabelling into its scope either). A handler token without a
// node (not bound to a pod) may write nothing.
func NodeScope(p Params) []client.Object {
	p = p.withDefaults()
	const nodeKey = "authentication.kubernetes.io/node-name"
	owner := func(obj string) string {
		return "request.resource.resource == 'nodenetworkstates' ? " + obj + ".metadata.name : " +
			"request.resource.resource == 'leases' ? (" + obj + ".metadata.name.startsWith('" + HandlerLockPrefix + "') ? " +
			obj + ".metadata.name.substring(" + strconv.Itoa(len(HandlerLockPrefix)) + ") : '') : " +
			"(has(" + obj + ".metadata.labels) && 'nmstate.io/node' in " + obj + ".metadata.labels ? " + obj + ".metadata.labels['nmstate.io/node'] : '')"
	}
	meta := p.clusterMeta(NodeScopeName, ComponentHandler)
	policy := vap(meta,
		[]admissionv1.NamedRuleWithOperations{rule([]string{"*"}, []string{"CREATE", "UPDATE", "DELETE"},
			[]string{"nodenetworkstates", "nodenetworkstates/status", "nodenetworkconfigurationenactments", "nodenetworkconfigurationenactments/status"}),
			// The node locks share kube-node-lease with the kubelets'
			// heartbeats: a handler may write only its own node's lock.
			{RuleWithOperations: admissionv1.RuleWithOperations{
				Operations: []admissionv1.OperationType{"CREATE", "UPDATE", "DELETE"},
				Rule:       admissionv1.Rule{APIGroups: []string{"coordination.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"leases"}},
			}}},
		[]admissionv1.Variable{
			{Name: "node", Expression: "has(request.userInfo.extra) && '" + nodeKey + "' in request.userInfo.extra && size(request.userInfo.extra['" + nodeKey + "']) > 0 ? " +
				"request.userInfo.extra['" + nodeKey + "'][0] : ''"},
			{Name: "newOwner", Expression: "request.operation == 'DELETE' ? '' : " + owner("object")},
			{Name: "oldOwner", Expression: "request.operation == 'CREATE' ? '' : " + owner("oldObject")},
		},
		[]admissionv1.Validation{
			validation("variables.node != ''", "", "'the knmstate handler identity ' + request.userInfo.username + "+
				"' must use a token bound to its pod (no node in it): it may not write node network states or enactments'", metav1.StatusReasonForbidden),
			validation("variables.node == '' || ((request.operation == 'DELETE' || variables.newOwner == variables.node) && "+
				"(request.operation == 'CREATE' || variables.oldOwner == variables.node))", "",
				"'the knmstate handler of node ' + variables.node + ' may not write ' + request.resource.resource + ' ' + request.name + "+
					"' of node ' + (variables.newOwner != '' ? variables.newOwner : variables.oldOwner)", metav1.StatusReasonForbidden),
		})
	policy.Spec.MatchConditions = []admissionv1.MatchCondition{{
		Name:       "handler-identity",
		Expression: "request.userInfo.username == '" + p.ServiceAccountUser(HandlerName) + "'",
	}}
	return []client.Object{policy, vapBinding(p.clusterMeta(NodeScopeName, ComponentHandler), NodeScopeName)}
}
