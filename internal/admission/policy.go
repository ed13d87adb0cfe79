package admission

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/extension"
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

// PolicyAnnotations reads the annotations of a policy object.
func PolicyAnnotations(obj []byte) (map[string]string, error) {
	var p struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(obj, &p); err != nil {
		return nil, fmt.Errorf("decoding the policy: %w", err)
	}
	return p.Metadata.Annotations, nil
}

// ValidateAnnotations checks a policy's knmstate.io annotations
// (docs/extensions.md) the way the handler reads them; other annotations
// are not looked at.
func ValidateAnnotations(annotations map[string]string) ErrorList {
	_, errs := extension.Parse(annotations)
	out := make(ErrorList, 0, len(errs))
	for _, e := range errs {
		out = append(out, Error{Field: e.Field, Detail: e.ErrorBody()})
	}
	return out
}
