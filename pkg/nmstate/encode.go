package nmstate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// EncodeYAML renders s in canonical form: unset fields omitted, top-level
// sections in nmstate's show order, interfaces as given with name, type and
// state first, every other mapping's keys sorted alphabetically, aliases
// replaced by their canonical key.
func EncodeYAML(s *State) ([]byte, error) {
	n, err := Node(s)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("encoding yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding yaml: %w", err)
	}
	return buf.Bytes(), nil
}

// EncodeJSON renders s in the same canonical order as EncodeYAML, as
// indented JSON followed by a newline.
func EncodeJSON(s *State) ([]byte, error) {
	compact, err := AppendCompactJSON(nil, s)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(compact) + len(compact)/2)
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, fmt.Errorf("encoding json: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// MarshalJSON implements json.Marshaler with the canonical encoding.
func (s State) MarshalJSON() ([]byte, error) { return EncodeJSON(&s) }

// UnmarshalJSON implements json.Unmarshaler with the strict decoder.
func (s *State) UnmarshalJSON(b []byte) error {
	d, err := Decode(b)
	if err != nil {
		return err
	}
	*s = *d
	return nil
}

// Node renders s as a canonical yaml.Node mapping.
func Node(s *State) (*yaml.Node, error) {
	e := &encoder{fields: map[reflect.Type][]fieldInfo{}}
	n, err := e.value(reflect.ValueOf(s).Elem())
	if err != nil {
		return nil, err
	}
	if n == nil {
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	return n, nil
}

type encoder struct {
	fields map[reflect.Type][]fieldInfo
}

func scalarNode(tag, v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
	if tag == "!!str" && yaml11Bool(v) {
		// YAML 1.1 readers (go-yaml v2, sigs.k8s.io/yaml, PyYAML) would
		// read these plain strings as booleans.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func yaml11Bool(s string) bool {
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off":
		return true
	}
	return false
}

var hexerType = reflect.TypeFor[hexer]()

// value returns nil for values that are omitted (nil pointers, nil
// slices and maps).
func (e *encoder) value(v reflect.Value) (*yaml.Node, error) {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			return nil, nil
		}
		return e.value(v.Elem())
	case t == addrType:
		a := v.Interface().(interface{ IsValid() bool })
		if !a.IsValid() {
			return scalarNode("!!str", ""), nil
		}
		return scalarNode("!!str", fmt.Sprint(v.Interface())), nil
	case t == prefixType:
		a := v.Interface().(interface{ IsValid() bool })
		if !a.IsValid() {
			return scalarNode("!!str", ""), nil
		}
		return scalarNode("!!str", fmt.Sprint(v.Interface())), nil
	case t.Kind() == reflect.Interface:
		return encodeOpaque(v.Interface())
	case t.Kind() == reflect.Struct:
		return e.structValue(v)
	case t.Kind() == reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for i := 0; i < v.Len(); i++ {
			c, err := e.value(v.Index(i))
			if err != nil {
				return nil, err
			}
			if c == nil {
				c = scalarNode("!!null", "null")
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case t.Kind() == reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, k := range keys {
			c, err := e.value(v.MapIndex(reflect.ValueOf(k).Convert(t.Key())))
			if err != nil {
				return nil, err
			}
			if c == nil {
				// A nil map value is meaningful (remove the key).
				c = scalarNode("!!null", "null")
			}
			n.Content = append(n.Content, scalarNode("!!str", k), c)
		}
		return n, nil
	case t.Kind() == reflect.String:
		return scalarNode("!!str", v.String()), nil
	case t.Kind() == reflect.Bool:
		return scalarNode("!!bool", strconv.FormatBool(v.Bool())), nil
	case t.Implements(hexerType):
		return scalarNode("!!str", v.Interface().(hexer).hexString()), nil
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return scalarNode("!!int", strconv.FormatInt(v.Int(), 10)), nil
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		return scalarNode("!!int", strconv.FormatUint(v.Uint(), 10)), nil
	}
	return nil, fmt.Errorf("cannot encode %s", t)
}

func (e *encoder) structValue(v reflect.Value) (*yaml.Node, error) {
	t := v.Type()
	fields, ok := e.fields[t]
	if !ok {
		fields = fieldsOf(t)
		e.fields[t] = fields
	}
	type kv struct {
		key string
		n   *yaml.Node
	}
	var items []kv
	for _, f := range fields {
		fv := v.Field(f.index)
		c, err := e.value(fv)
		if err != nil {
			return nil, err
		}
		if c == nil {
			continue
		}
		// Optional strings and required values are printed even when empty;
		// a required-but-zero field such as an unset Interface.Type is not.
		if fv.Kind() == reflect.String && fv.String() == "" && !f.required {
			continue
		}
		items = append(items, kv{f.key, c})
	}
	rank := map[string]int{}
	if ko, ok := v.Interface().(keyOrderer); ok {
		for i, k := range ko.keyOrder() {
			rank[k] = i + 1
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		ri, rj := rank[items[i].key], rank[items[j].key]
		switch {
		case ri != 0 && rj != 0:
			return ri < rj
		case ri != 0:
			return true
		case rj != 0:
			return false
		}
		return items[i].key < items[j].key
	})
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, it := range items {
		n.Content = append(n.Content, scalarNode("!!str", it.key), it.n)
	}
	return n, nil
}
