package nmstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Decode parses a YAML or JSON nmstate document strictly: unknown keys,
// wrong types and bad enum values are errors. It returns an ErrorList (all
// problems, each with a path) and a nil State when anything is wrong.
//
// Leniency follows upstream: integers may be strings and hex (`'0x30'`),
// booleans may be yes/no/on/off/y/n/1/0, documented key aliases are
// accepted, and non-breaking spaces are read as spaces. Interfaces with
// state absent keep only name, type and state.
func Decode(data []byte) (*State, error) {
	s, errs := decodeState(data)
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

// DecodeNode decodes an already parsed YAML node (a document or mapping
// node), for callers that extract a state from a larger file.
func DecodeNode(n *yaml.Node) (*State, error) {
	s := &State{}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return s, nil
		}
		n = n.Content[0]
	}
	d := newDecoder()
	d.value(n, "", reflect.ValueOf(s).Elem(), fieldInfo{})
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	s.postDecode()
	return s, nil
}

func decodeState(data []byte) (*State, ErrorList) {
	text := strings.ReplaceAll(string(data), "\u00a0", " ")
	root, err := parseText(text)
	if err != nil {
		return nil, ErrorList{{Kind: InvalidArgument, Detail: err.Error()}}
	}
	s := &State{}
	if root == nil {
		return s, nil
	}
	d := newDecoder()
	d.value(root, "", reflect.ValueOf(s).Elem(), fieldInfo{})
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	s.postDecode()
	return s, nil
}

// postDecode applies parse-time rules that are not about syntax.
func (s *State) postDecode() {
	for i := range s.Interfaces {
		if s.Interfaces[i].State == StateAbsent {
			s.Interfaces[i].stripForAbsent()
		}
	}
}

// parseText turns YAML or JSON text into a node tree; nil for an empty
// document. JSON goes through encoding/json so that JSON-only syntax (tabs)
// is accepted; YAML 1.2 is otherwise a superset.
func parseText(text string) (*yaml.Node, error) {
	trimmed := strings.TrimSpace(text)
	var jsonErr error
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		n, err := parseJSON(text)
		if err == nil {
			return n, nil
		}
		// Could still be YAML flow style ({interfaces: [...]}).
		jsonErr = err
	}
	n, err := parseYAML(text)
	if err != nil && jsonErr != nil {
		return nil, jsonErr
	}
	return n, err
}

func parseYAML(text string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid YAML: more than one document")
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

func parseJSON(text string) (*yaml.Node, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	lineOf := func(off int64) int { return bytes.Count([]byte(text[:off]), []byte("\n")) + 1 }
	var read func() (*yaml.Node, error)
	read = func() (*yaml.Node, error) {
		line := lineOf(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line}
			end := json.Delim('}')
			if t == '[' {
				n.Kind, n.Tag, end = yaml.SequenceNode, "!!seq", ']'
			}
			for dec.More() {
				if n.Kind == yaml.MappingNode {
					kl := lineOf(dec.InputOffset())
					k, err := dec.Token()
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.(string), Line: kl})
				}
				c, err := read()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, c)
			}
			if tok, err := dec.Token(); err != nil || tok != end {
				return nil, fmt.Errorf("unbalanced %v", t)
			}
			return n, nil
		case string:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Line: line}, nil
		case json.Number:
			tag := "!!int"
			if strings.ContainsAny(t.String(), ".eE") {
				tag = "!!float"
			}
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String(), Line: line}, nil
		case bool:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t), Line: line}, nil
		default:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: line}, nil
		}
	}
	n, err := read()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: data after the document")
	}
	return n, nil
}

var (
	addrType      = reflect.TypeFor[netip.Addr]()
	prefixType    = reflect.TypeFor[netip.Prefix]()
	ifaceType     = reflect.TypeFor[Interface]()
	enumerType    = reflect.TypeFor[enumer]()
	normalizeType = reflect.TypeFor[normalizer]()
	shorthandType = reflect.TypeFor[boolShorthander]()
)

// decoder walks a yaml.Node tree and fills Go values through reflection
// over `nms` struct tags, collecting every error with its path.
type decoder struct {
	errs   ErrorList
	fields map[reflect.Type][]fieldInfo
	// ifaceType is the type of the interface being decoded, which selects
	// the type-specific sections it may carry.
	ifaceType InterfaceType
	// budget bounds the work on documents that expand YAML aliases
	// exponentially ("billion laughs"); real states are far smaller.
	budget int
}

const maxValues = 1_000_000

func newDecoder() *decoder {
	return &decoder{fields: map[reflect.Type][]fieldInfo{}, budget: maxValues}
}

// deref follows YAML aliases to the anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func (d *decoder) fieldsOf(t reflect.Type) []fieldInfo {
	f, ok := d.fields[t]
	if !ok {
		f = fieldsOf(t)
		d.fields[t] = f
	}
	return f
}

func (d *decoder) fail(n *yaml.Node, p Path, format string, args ...any) {
	e := &Error{Kind: InvalidArgument, Path: p, Detail: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unsupported YAML node"
}

// scalar reports whether n is a non-null scalar, recording an error if not.
func (d *decoder) scalar(n *yaml.Node, p Path, want string) bool {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.fail(n, p, "expected %s, got %s", want, describe(n))
		return false
	}
	return true
}

// value decodes n into v and reports success.
func (d *decoder) value(n *yaml.Node, p Path, v reflect.Value, fi fieldInfo) bool {
	n = deref(n)
	d.budget--
	if d.budget < 0 {
		if d.budget == -1 {
			d.fail(n, p, "document too large (more than %d values after alias expansion)", maxValues)
		}
		return false
	}
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		if isNull(n) {
			v.SetZero()
			return true
		}
		nv := reflect.New(t.Elem())
		if !d.value(n, p, nv.Elem(), fi) {
			return false
		}
		v.Set(nv)
		return true
	case t == addrType:
		if !d.scalar(n, p, "an IP address") {
			return false
		}
		if n.Value == "" && fi.empty {
			return true
		}
		a, err := netip.ParseAddr(strings.TrimSpace(n.Value))
		if err != nil {
			d.fail(n, p, "%q is not an IP address", n.Value)
			return false
		}
		v.Set(reflect.ValueOf(a))
		return true
	case t == prefixType:
		if !d.scalar(n, p, "an IP prefix") {
			return false
		}
		if n.Value == "" && fi.empty {
			return true
		}
		pf, err := parsePrefix(n.Value)
		if err != nil {
			d.fail(n, p, "%v", err)
			return false
		}
		v.Set(reflect.ValueOf(pf))
		return true
	case t.Kind() == reflect.Interface:
		x, err := decodeOpaque(n, p, &d.budget)
		if err != nil {
			d.fail(n, p, "%v", strings.TrimPrefix(err.Error(), string(p)+": "))
			return false
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return true
	case t.Kind() == reflect.Struct:
		return d.structValue(n, p, v)
	case t.Kind() == reflect.Slice:
		if isNull(n) {
			v.SetZero()
			return true
		}
		if n.Kind != yaml.SequenceNode {
			d.fail(n, p, "expected a list, got %s", describe(n))
			return false
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		ok := true
		for i, c := range n.Content {
			ok = d.value(c, p.Index(i), s.Index(i), fi) && ok
		}
		v.Set(s)
		return ok
	case t.Kind() == reflect.Map:
		if isNull(n) {
			v.SetZero()
			return true
		}
		if n.Kind != yaml.MappingNode {
			d.fail(n, p, "expected a mapping, got %s", describe(n))
			return false
		}
		m := reflect.MakeMapWithSize(t, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := deref(n.Content[i]), n.Content[i+1]
			if !d.scalar(kn, p, "a string key") {
				ok = false
				continue
			}
			k := reflect.New(t.Key()).Elem()
			k.SetString(kn.Value)
			if m.MapIndex(k).IsValid() {
				d.fail(kn, p.Key(kn.Value), "duplicate key")
				ok = false
				continue
			}
			ev := reflect.New(t.Elem()).Elem()
			if d.value(vn, p.Key(kn.Value), ev, fieldInfo{}) {
				m.SetMapIndex(k, ev)
			} else {
				ok = false
			}
		}
		v.Set(m)
		return ok
	case t.Kind() == reflect.String:
		if !d.scalar(n, p, "a string") {
			return false
		}
		s := n.Value
		if t.Implements(enumerType) {
			spec := reflect.Zero(t).Interface().(enumer).enumSpec()
			c, ok := spec.canonical(strings.TrimSpace(s))
			if !ok {
				d.fail(n, p, "%q is not one of %s", s, strings.Join(spec.values, ", "))
				return false
			}
			s = c
		}
		if t.Implements(normalizeType) {
			c, err := reflect.Zero(t).Interface().(normalizer).normalize(s)
			if err != nil {
				d.fail(n, p, "%v", err)
				return false
			}
			s = c
		}
		v.SetString(s)
		return true
	case t.Kind() == reflect.Bool:
		if !d.scalar(n, p, "a boolean") {
			return false
		}
		b, err := parseBool(n.Value)
		if err != nil {
			d.fail(n, p, "%v", err)
			return false
		}
		v.SetBool(b)
		return true
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		if !d.scalar(n, p, "an integer") {
			return false
		}
		i, _, err := parseInt(n.Value, t.Bits(), true)
		if err != nil {
			d.fail(n, p, "%v", err)
			return false
		}
		v.SetInt(i)
		return true
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		if !d.scalar(n, p, "an integer") {
			return false
		}
		_, u, err := parseInt(n.Value, t.Bits(), false)
		if err != nil {
			d.fail(n, p, "%v", err)
			return false
		}
		v.SetUint(u)
		return true
	}
	d.fail(n, p, "internal error: cannot decode into %s", t)
	return false
}

// parsePrefix accepts "addr/len" or a bare address (a host prefix) and
// returns the masked prefix, as nmstate canonicalises destinations.
func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP prefix", s)
		}
		return pf.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP prefix", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func (d *decoder) structValue(n *yaml.Node, p Path, v reflect.Value) bool {
	t := v.Type()
	if n.Kind == yaml.ScalarNode && !isNull(n) && t.Implements(shorthandType) {
		key := reflect.Zero(t).Interface().(boolShorthander).boolShorthand()
		for _, f := range d.fieldsOf(t) {
			if f.key == key {
				return d.value(n, p, v.Field(f.index), f)
			}
		}
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, p, "expected a mapping, got %s", describe(n))
		return false
	}
	fields := d.fieldsOf(t)
	if t == ifaceType {
		saved := d.ifaceType
		defer func() { d.ifaceType = saved }()
		d.ifaceType = ""
		for i := 0; i+1 < len(n.Content); i += 2 {
			if deref(n.Content[i]).Value == "type" {
				if c, ok := InterfaceType("").enumSpec().canonical(strings.TrimSpace(deref(n.Content[i+1]).Value)); ok {
					d.ifaceType = InterfaceType(c)
				} else {
					d.ifaceType = "?" // invalid; reported when the field is decoded
				}
			}
		}
	}
	ok := true
	seen := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := deref(n.Content[i]), n.Content[i+1]
		if !d.scalar(kn, p, "a string key") {
			ok = false
			continue
		}
		key := kn.Value
		var cand []*fieldInfo
		for j := range fields {
			if fields[j].matches(key) {
				cand = append(cand, &fields[j])
			}
		}
		if len(cand) == 0 {
			d.fail(kn, p.Key(key), "unknown field")
			ok = false
			continue
		}
		var f *fieldInfo
		for _, c := range cand {
			if c.allowsType(d.ifaceType) {
				f = c
				break
			}
		}
		if f == nil {
			switch d.ifaceType {
			case "?":
				// The invalid type is already reported.
			case "":
				d.fail(kn, p.Key(key), "needs the interface type to be given")
			default:
				d.fail(kn, p.Key(key), "is not valid for interface type %s", d.ifaceType)
			}
			ok = false
			continue
		}
		if prev, dup := seen[f.key]; dup {
			if prev == key {
				d.fail(kn, p.Key(key), "duplicate key")
			} else {
				d.fail(kn, p.Key(key), "duplicate key (also given as %s)", prev)
			}
			ok = false
			continue
		}
		seen[f.key] = key
		ok = d.value(vn, p.Key(key), v.Field(f.index), *f) && ok
	}
	for _, f := range fields {
		if _, given := seen[f.key]; f.required && !given {
			d.fail(n, p.Key(f.key), "is required")
			ok = false
		}
	}
	return ok
}
