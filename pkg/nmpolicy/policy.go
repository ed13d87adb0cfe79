package nmpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Policy is the part of a NodeNetworkConfigurationPolicy this package
// resolves.
type Policy struct {
	// Capture maps capture names to expressions (NNCP spec.capture).
	Capture map[string]string
	// DesiredState is the normalised desired state document whose strings may
	// hold templates (NNCP spec.desiredState, decoded with DecodeDocument).
	DesiredState any
}

// MetaInfo records when a captured state was evaluated.
type MetaInfo struct {
	Version string    `json:"version"`
	Time    time.Time `json:"time"`
}

// CapturedState is one stored capture, as kept in NNCE
// status.capturedStates and in nmstatectl's captured-states files.
type CapturedState struct {
	// State is the normalised captured document; empty when the capture
	// selected nothing.
	State    map[string]any `json:"state,omitempty"`
	MetaInfo MetaInfo       `json:"metaInfo"`
}

// UnmarshalJSON keeps integers as integers (encoding/json would make them
// float64) and normalises the state.
func (c *CapturedState) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw struct {
		State    any      `json:"state"`
		MetaInfo MetaInfo `json:"metaInfo"`
	}
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	st, err := stateOf(raw.State, "state")
	if err != nil {
		return err
	}
	*c = CapturedState{State: st, MetaInfo: raw.MetaInfo}
	return nil
}

func stateOf(v any, where string) (map[string]any, error) {
	n, err := Normalize(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	switch t := n.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return t, nil
	default:
		return nil, fmt.Errorf("%s: must be a map, not a %s", where, typeName(n))
	}
}

// CapturedStates maps capture names to their stored states.
type CapturedStates map[string]CapturedState

// DeepCopy returns a copy that shares no memory with c.
func (c CapturedStates) DeepCopy() CapturedStates {
	if c == nil {
		return nil
	}
	out := make(CapturedStates, len(c))
	for name, cs := range c {
		if cs.State != nil {
			cs.State = deepCopy(cs.State).(map[string]any)
		}
		out[name] = cs
	}
	return out
}

// Generated is the result of GenerateState.
type Generated struct {
	// DesiredState is the rendered desired state; nil when empty.
	DesiredState any
	// CapturedStates holds every capture of the policy (from the cache or
	// newly evaluated); nil when nothing was evaluated.
	CapturedStates CapturedStates
}

// GenerateState renders a policy for one node: it evaluates the policy's
// captures against the current state, reusing the entries of cache (spec §9),
// then resolves the templates of the desired state.
//
// As in kubernetes-nmstate, an empty desired state or an empty current state
// renders an empty state without evaluating anything (spec §1.1).
//
// When template resolution fails, the returned Generated still holds the
// captured states (upstream writes them before rendering), together with the
// error. All errors from the language are *Error values.
//
// current, Policy.DesiredState and the cache's states must be normalised
// documents (DecodeDocument, Normalize, CapturedState's JSON decoding); they
// are not modified. The rendered desired state shares no memory with anything
// and may be modified by the caller (defaulting, merge); the captured states
// are read-only views (see EvaluateCaptures).
func GenerateState(policy Policy, current any, cache CapturedStates, now time.Time) (Generated, error) {
	if isEmptyDoc(policy.DesiredState) || isEmptyDoc(current) {
		return Generated{}, nil
	}
	captured, err := EvaluateCaptures(policy.Capture, current, cache, now)
	if err != nil {
		return Generated{}, err
	}
	desired, err := RenderTemplates(policy.DesiredState, captured)
	if err != nil {
		return Generated{CapturedStates: captured}, err
	}
	return Generated{DesiredState: desired, CapturedStates: captured}, nil
}
