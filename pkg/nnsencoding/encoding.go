package nnsencoding

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Annotation is the NodeNetworkState annotation that names the encoding
// of status.currentState; without it the state is the full one.
const Annotation = "knmstate.io/nns-encoding"

// CompactV1 is the encoding in which routes.running leaves out every
// route that routes.config holds as well: nmstate reports each static
// route twice, once as configuration and once as running, and on a node
// with thousands of routes that repetition is a third of the state.
const CompactV1 = "compact-v1"

// Budget is the largest currentState, in bytes of canonical JSON, that a
// handler writes in the full encoding: 1 MiB less 32 KiB for the rest of
// the object (metadata, managed fields, conditions), so the object stays
// under 1 MiB, well within etcd's 1.5 MiB request limit.
const Budget = 1<<20 - 32<<10

// CompactJSON returns the compact-v1 encoding of a full currentState (a
// JSON object), in canonical JSON (keys sorted, no space, numbers as
// written). A state without routes comes back unchanged but canonical.
func CompactJSON(full []byte) ([]byte, error) {
	st, err := decode(full)
	if err != nil {
		return nil, err
	}
	config, running, ok := routeLists(st)
	if ok && len(config) > 0 && len(running) > 0 {
		inConfig, err := routeSet(config)
		if err != nil {
			return nil, err
		}
		kept := make([]any, 0, len(running))
		for _, r := range running {
			k, err := routeKey(r)
			if err != nil {
				return nil, err
			}
			if !inConfig[k] {
				kept = append(kept, r)
			}
		}
		st["routes"].(map[string]any)["running"] = kept
	}
	return encode(st)
}

// ExpandJSON returns the full currentState of a compact-v1 one: the
// configured routes that routes.running lacks are added to it. The
// routes are the full state's; their order in routes.running is not kept
// (the full state lists them in the kernel's dump order, which nmstate
// gives no meaning): the configured ones follow the others, in
// routes.config's order. Expanding a full state changes nothing (it is
// idempotent), so a reader may expand whenever the annotation says
// compact-v1, even while the handler is switching encodings.
func ExpandJSON(compact []byte) ([]byte, error) {
	st, err := decode(compact)
	if err != nil {
		return nil, err
	}
	config, running, ok := routeLists(st)
	if ok && len(config) > 0 {
		have, err := routeSet(running)
		if err != nil {
			return nil, err
		}
		for _, r := range config {
			k, err := routeKey(r)
			if err != nil {
				return nil, err
			}
			if !have[k] {
				have[k] = true
				running = append(running, r)
			}
		}
		st["routes"].(map[string]any)["running"] = running
	}
	return encode(st)
}

// Expand is ExpandJSON for a state read from an object with the given
// annotations: a state without the compact-v1 annotation is returned as
// it is. An unknown encoding is an error, so that a reader never takes a
// partial state for a full one.
func Expand(annotations map[string]string, state []byte) ([]byte, error) {
	switch enc := annotations[Annotation]; enc {
	case "":
		return state, nil
	case CompactV1:
		return ExpandJSON(state)
	default:
		return nil, fmt.Errorf("node network state encoding %q is not known (this reader knows %q)", enc, CompactV1)
	}
}

func decode(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var st map[string]any
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("node network state: %w", err)
	}
	return st, nil
}

func encode(st map[string]any) ([]byte, error) {
	out, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("node network state: %w", err)
	}
	return out, nil
}

// routeLists returns routes.config and routes.running; ok is false when
// the state has no routes object or no running list (compact-v1 keeps
// the list, empty if need be, so a state without one is left alone).
func routeLists(st map[string]any) (config, running []any, ok bool) {
	routes, isMap := st["routes"].(map[string]any)
	if !isMap {
		return nil, nil, false
	}
	config, _ = routes["config"].([]any)
	running, ok = routes["running"].([]any)
	return config, running, ok
}

// routeKey identifies a route by its canonical JSON: two routes are the
// same when every key and value is (numbers compare as written).
func routeKey(r any) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("node network state: route: %w", err)
	}
	return string(b), nil
}

func routeSet(list []any) (map[string]bool, error) {
	set := make(map[string]bool, len(list))
	for _, r := range list {
		k, err := routeKey(r)
		if err != nil {
			return nil, err
		}
		set[k] = true
	}
	return set, nil
}
