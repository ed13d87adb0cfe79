package nmstate

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Opaque values (`any` fields such as LLDP neighbors, which knmstate only
// reports) are held as a JSON-shaped tree: map[string]any, []any, string,
// bool, nil and json.Number. Numbers are kept as canonical text so that
// YAML and JSON round trips give back exactly the same value (a float64
// would turn 1.0 into the integer 1 and has no JSON form for NaN).

func decodeOpaque(n *yaml.Node, p Path, budget *int) (any, error) {
	n = deref(n)
	*budget--
	if *budget < 0 {
		return nil, fmt.Errorf("document too large")
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s: mapping keys must be scalars", p)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("%s: duplicate key", p.Key(k.Value))
			}
			v, err := decodeOpaque(n.Content[i+1], p.Key(k.Value), budget)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := decodeOpaque(c, p.Index(i), budget)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			b, err := parseBool(n.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", p, err)
			}
			return b, nil
		case "!!int":
			if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
				return json.Number(strconv.FormatInt(i, 10)), nil
			}
			if u, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
				return json.Number(strconv.FormatUint(u, 10)), nil
			}
			return n.Value, nil
		case "!!float":
			f, err := strconv.ParseFloat(n.Value, 64)
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return nil, fmt.Errorf("%s: %q is not a finite number", p, n.Value)
			}
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		case "!!binary":
			var s string
			if err := n.Decode(&s); err != nil {
				return nil, fmt.Errorf("%s: %v", p, err)
			}
			return s, nil
		}
		return n.Value, nil
	}
	return nil, fmt.Errorf("%s: unsupported YAML node", p)
}

func encodeOpaque(v any) (*yaml.Node, error) {
	switch x := v.(type) {
	case nil:
		return scalarNode("!!null", "null"), nil
	case bool:
		return scalarNode("!!bool", strconv.FormatBool(x)), nil
	case string:
		return scalarNode("!!str", x), nil
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return scalarNode("!!float", string(x)), nil
		}
		return scalarNode("!!int", string(x)), nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, c := range x {
			cn, err := encodeOpaque(c)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, cn)
		}
		return n, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, k := range keys {
			cn, err := encodeOpaque(x[k])
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, scalarNode("!!str", k), cn)
		}
		return n, nil
	}
	return nil, fmt.Errorf("cannot encode opaque value of type %T", v)
}
