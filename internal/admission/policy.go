package admission

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/knmstate/knmstate/api/shared"
)

// PolicySpec reads the spec of a policy object as the API server sends it
// (JSON, v1 or v1beta1: the versions share the spec).
func PolicySpec(obj []byte) (shared.NodeNetworkConfigurationPolicySpec, error) {
	var p struct {
		Spec shared.NodeNetworkConfigurationPolicySpec `json:"spec"`
	}
	if err := json.Unmarshal(obj, &p); err != nil {
		return p.Spec, fmt.Errorf("decoding the policy: %w", err)
	}
	return p.Spec, nil
}

// SpecChanged reports whether an update changes a policy's spec. Only then
// is an update validated: metadata-only updates (a label, a finalizer
// removed during deletion) of a policy admitted before this validation
// existed must never be refused.
func SpecChanged(oldObj, newObj []byte) (bool, error) {
	var o, n struct {
		Spec any `json:"spec"`
	}
	if err := json.Unmarshal(oldObj, &o); err != nil {
		return false, fmt.Errorf("decoding the old policy: %w", err)
	}
	if err := json.Unmarshal(newObj, &n); err != nil {
		return false, fmt.Errorf("decoding the policy: %w", err)
	}
	return !reflect.DeepEqual(o.Spec, n.Spec), nil
}
