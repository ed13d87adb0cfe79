package admission

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
)

// The mutations of upstream's MutatingWebhookConfiguration (reference
// §3.1), each a function of the object as the API server sends it (JSON)
// and, where it writes a time, of now. Each returns the JSON patch to send
// back, empty when nothing needs to change.

// policyView is what the mutations read of a policy.
type policyView struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status map[string]json.RawMessage `json:"status"`
}

func view(obj []byte) (policyView, error) {
	var v policyView
	if err := json.Unmarshal(obj, &v); err != nil {
		return v, fmt.Errorf("decoding the policy: %w", err)
	}
	return v, nil
}

// ClearConditions removes status.conditions from a policy being created
// or updated (upstream's nodenetworkconfigurationpolicies-mutate): a new
// spec has no result yet, and the controller writes the next.
func ClearConditions(obj []byte) ([]jsonpatch.JsonPatchOperation, error) {
	v, err := view(obj)
	if err != nil {
		return nil, err
	}
	if _, ok := v.Status["conditions"]; !ok {
		return nil, nil
	}
	return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("remove", "/status/conditions", nil)}, nil
}

// UnknownConditions gives a policy whose status is written without any
// condition all four conditions (Available, Degraded, Progressing,
// Ignored) with status Unknown, stamped with now (upstream's
// nodenetworkconfigurationpolicies-status-mutate).
func UnknownConditions(obj []byte, now time.Time) ([]jsonpatch.JsonPatchOperation, error) {
	v, err := view(obj)
	if err != nil {
		return nil, err
	}
	if raw, ok := v.Status["conditions"]; ok {
		var conds []json.RawMessage
		if err := json.Unmarshal(raw, &conds); err == nil && len(conds) > 0 {
			return nil, nil
		}
	}
	var conds shared.ConditionList
	for _, t := range shared.NodeNetworkConfigurationPolicyConditionTypes {
		conds.SetAt(now, t, corev1.ConditionUnknown, "", "")
	}
	if v.Status == nil {
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/status", map[string]any{"conditions": conds})}, nil
	}
	return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/status/conditions", conds)}, nil
}

// Timestamp sets the nmstate.io/webhook-mutating-timestamp annotation to
// now in Unix nanoseconds (upstream's
// nodenetworkconfigurationpolicies-timestamp-mutate), on every create and
// update of a policy or its status.
func Timestamp(obj []byte, now time.Time) ([]jsonpatch.JsonPatchOperation, error) {
	v, err := view(obj)
	if err != nil {
		return nil, err
	}
	stamp := strconv.FormatInt(now.UnixNano(), 10)
	if v.Metadata.Annotations == nil {
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/annotations",
			map[string]string{shared.WebhookMutatingTimestampAnnotation: stamp})}, nil
	}
	return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add",
		"/metadata/annotations/"+escapePointer(shared.WebhookMutatingTimestampAnnotation), stamp)}, nil
}

// escapePointer escapes a JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
