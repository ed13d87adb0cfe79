package nmpolicy

import (
	"fmt"
	"sort"
	"time"
)

// PolicyFile is a policy document as read by nmstatectl policy (spec §1.2).
type PolicyFile struct {
	Policy
	// Current is the optional embedded current state (key "current").
	Current any
}

// ParsePolicyFile decodes a YAML or JSON policy document: a map with the
// optional keys capture, desiredState (alias desired) and current. Any other
// key is an error. An empty document is an empty policy.
func ParsePolicyFile(data []byte) (PolicyFile, error) {
	doc, err := DecodeDocument(data)
	if err != nil {
		return PolicyFile{}, err
	}
	if doc == nil {
		return PolicyFile{}, nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return PolicyFile{}, fmt.Errorf("policy: must be a map with capture and desiredState, not a %s", typeName(doc))
	}
	var pf PolicyFile
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "capture":
			if v == nil {
				continue
			}
			cm, ok := v.(map[string]any)
			if !ok {
				return PolicyFile{}, fmt.Errorf("capture: must be a map of names to expressions, not a %s", typeName(v))
			}
			pf.Capture = make(map[string]string, len(cm))
			for name, e := range cm {
				s, ok := e.(string)
				if !ok {
					return PolicyFile{}, fmt.Errorf("capture.%s: expecting a string, but got %s", name, describe(e))
				}
				pf.Capture[name] = s
			}
		case "desiredState", "desired":
			if _, dup := m["desiredState"]; dup && k == "desired" {
				return PolicyFile{}, fmt.Errorf("desired: cannot be combined with desiredState (they are aliases)")
			}
			pf.DesiredState = v
		case "current":
			pf.Current = v
		default:
			return PolicyFile{}, fmt.Errorf("%s: unknown key in a policy (expected capture, desiredState or desired, current)", k)
		}
	}
	return pf, nil
}

// ParseCapturedStates reads a captured-states document (spec §7) from its
// generic form, as decoded from a YAML or JSON file. metaInfo.time (RFC 3339)
// and metaInfo.version are required.
func ParseCapturedStates(doc any) (CapturedStates, error) {
	if doc == nil {
		return CapturedStates{}, nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("captured states: must be a map of capture names, not a %s", typeName(doc))
	}
	out := make(CapturedStates, len(m))
	for name, v := range m {
		entry, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: must be a map with state and metaInfo, not a %s", name, typeName(v))
		}
		for k := range entry {
			if k != "state" && k != "metaInfo" {
				return nil, fmt.Errorf("%s.%s: unknown key (expected state, metaInfo)", name, k)
			}
		}
		st, err := stateOf(entry["state"], name+".state")
		if err != nil {
			return nil, err
		}
		mi, ok := entry["metaInfo"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.metaInfo: required map with time and version", name)
		}
		ts, ok := mi["time"].(string)
		if !ok {
			return nil, fmt.Errorf("%s.metaInfo.time: required RFC 3339 time string", name)
		}
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return nil, fmt.Errorf("%s.metaInfo.time: %q is not an RFC 3339 time", name, ts)
		}
		ver, ok := mi["version"]
		if !ok || ver == nil {
			return nil, fmt.Errorf("%s.metaInfo.version: required", name)
		}
		vs, ok := scalarString(ver)
		if !ok {
			return nil, fmt.Errorf("%s.metaInfo.version: must be a string, not a %s", name, typeName(ver))
		}
		out[name] = CapturedState{State: st, MetaInfo: MetaInfo{Version: vs, Time: t}}
	}
	return out, nil
}

// Document returns the generic form of captured states (spec §7), for
// writing as YAML or JSON: {NAME: {state: …, metaInfo: {time, version}}}.
func (c CapturedStates) Document() map[string]any {
	out := make(map[string]any, len(c))
	for name, cs := range c {
		entry := map[string]any{
			"metaInfo": map[string]any{
				"time":    cs.MetaInfo.Time.Format(time.RFC3339Nano),
				"version": cs.MetaInfo.Version,
			},
		}
		if len(cs.State) > 0 {
			entry["state"] = deepCopy(cs.State)
		}
		out[name] = entry
	}
	return out
}
