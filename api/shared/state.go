package shared

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// State is an nmstate network state document (desired or current), kept as
// raw JSON. The nmstate schema is deliberately not modelled here: the API
// stores and returns whatever object the user wrote, and the state engine
// (pkg/nmstate) decodes it strictly with path-qualified errors.
//
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type State struct {
	// Raw is the JSON encoding of the document; empty means no document.
	Raw []byte `json:"-"`
}

// NewState returns the State of a YAML or JSON document. The document must
// be an object (or empty).
func NewState(doc []byte) (State, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return State{}, nil
	}
	raw, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return State{}, fmt.Errorf("state: %w", err)
	}
	if string(raw) == "null" {
		return State{}, nil
	}
	if raw[0] != '{' {
		return State{}, fmt.Errorf("state: must be an object, got %s", firstWord(raw))
	}
	return State{Raw: raw}, nil
}

// IsZero reports whether the state holds no document.
func (s State) IsZero() bool { return len(s.Raw) == 0 }

// YAML returns the document as YAML (empty for no document).
func (s State) YAML() ([]byte, error) {
	if s.IsZero() {
		return nil, nil
	}
	return yaml.JSONToYAML(s.Raw)
}

// String returns the document as JSON text, for logs and messages.
func (s State) String() string { return string(s.Raw) }

// MarshalJSON writes the stored document; no document is written as null,
// which the API server drops.
func (s State) MarshalJSON() ([]byte, error) {
	if s.IsZero() {
		return []byte("null"), nil
	}
	if !json.Valid(s.Raw) {
		return nil, fmt.Errorf("state: raw document is not JSON (use NewState to convert YAML)")
	}
	return s.Raw, nil
}

// UnmarshalJSON stores the document as it came; encoding/json has already
// checked it is well-formed.
func (s *State) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		s.Raw = nil
		return nil
	}
	s.Raw = bytes.Clone(b)
	return nil
}

func firstWord(b []byte) string {
	const max = 20
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
