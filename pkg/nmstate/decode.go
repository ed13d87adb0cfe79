package nmstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"slices"
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
	d.value(fromYAML(n), reflect.ValueOf(s).Elem(), fieldInfo{})
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	s.postDecode()
	return s, nil
}

func decodeState(data []byte) (*State, ErrorList) {
	root, err := parseText(stringsWithoutNBSP(data))
	if err != nil {
		return nil, ErrorList{{Kind: InvalidArgument, Detail: err.Error()}}
	}
	s := &State{}
	if root == nil {
		return s, nil
	}
	d := newDecoder()
	d.value(root, reflect.ValueOf(s).Elem(), fieldInfo{})
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	s.postDecode()
	return s, nil
}

// stringsWithoutNBSP is the document text with non-breaking spaces read as
// spaces (upstream's leniency).
func stringsWithoutNBSP(data []byte) string {
	return strings.ReplaceAll(string(data), "\u00a0", " ")
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
// is accepted; YAML 1.2 is otherwise a superset. Each first goes through a
// fast parser (parseJSONFast, parseYAMLFast) that builds the identical tree
// for the plain documents states are, and gives up on anything else; the
// general parsers then decide, so errors are always theirs.
func parseText(text string) (*dnode, error) {
	trimmed := strings.TrimSpace(text)
	var jsonErr error
	if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
		if n, ok := parseJSONFast(text); ok {
			return n, nil
		}
		n, err := parseJSON(text)
		if err == nil {
			return fromYAML(n), nil
		}
		// Could still be YAML flow style ({interfaces: [...]}).
		jsonErr = err
	}
	if n, ok := parseYAMLFast(text); ok {
		return n, nil
	}
	n, err := parseYAML(text)
	if err != nil && jsonErr != nil {
		return nil, jsonErr
	}
	if err != nil || n == nil {
		return nil, err
	}
	return fromYAML(n), nil
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
	// Offsets only grow, so newlines are counted once (not from the
	// start of the text for every token).
	line, counted := 1, 0
	lineOf := func(off int64) int {
		line += strings.Count(text[counted:off], "\n")
		counted = int(off)
		return line
	}
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

// decoder walks a node tree (dnode) and fills Go values through
// reflection over `nms` struct tags, collecting every error with its path.
type decoder struct {
	errs   ErrorList
	fields map[reflect.Type][]fieldInfo
	// byKey indexes fields (keys and aliases) per struct type, and kinds
	// caches what a string type needs, so the walk does no per-value
	// reflection beyond reading and setting.
	byKey map[reflect.Type]map[string][]int
	kinds map[reflect.Type]*stringKind
	// ifaceType is the type of the interface being decoded, which selects
	// the type-specific sections it may carry.
	ifaceType InterfaceType
	// steps is the path of the value being decoded; Path strings are
	// only built for errors.
	steps []pathStep
	// budget bounds the work on documents that expand YAML aliases
	// exponentially ("billion laughs"); real states are far smaller.
	budget int
	// deferred, when set, marks string values that stand for values known
	// only later (capture templates); they are not decoded, and their
	// paths are collected in deferredPaths (DecodeDeferred).
	deferred      func(string) bool
	deferredPaths []Deferred
}

const maxValues = 1_000_000

func newDecoder() *decoder {
	return &decoder{fields: map[reflect.Type][]fieldInfo{}, byKey: map[reflect.Type]map[string][]int{},
		kinds: map[reflect.Type]*stringKind{}, budget: maxValues}
}

// pathStep is one step of a decoding path: a mapping key or a list index.
type pathStep struct {
	key   string
	index int
	isKey bool
}

// path renders the current decoding path.
func (d *decoder) path() Path {
	var p Path
	for _, s := range d.steps {
		if s.isKey {
			p = p.Key(s.key)
		} else {
			p = p.Index(s.index)
		}
	}
	return p
}

// stringKind is what decoding into a string type involves.
type stringKind struct {
	enum      *enumSpec
	normalize normalizer
}

func (d *decoder) stringKindOf(t reflect.Type) *stringKind {
	k, ok := d.kinds[t]
	if !ok {
		k = &stringKind{}
		if t.Implements(enumerType) {
			spec := reflect.Zero(t).Interface().(enumer).enumSpec()
			k.enum = &spec
		}
		if t.Implements(normalizeType) {
			k.normalize = reflect.Zero(t).Interface().(normalizer)
		}
		d.kinds[t] = k
	}
	return k
}

// fieldsByKey maps every accepted spelling of a key of t to the indexes
// (into fieldsOf(t)) of the fields it may name, in field order.
func (d *decoder) fieldsByKey(t reflect.Type) map[string][]int {
	m, ok := d.byKey[t]
	if !ok {
		m = map[string][]int{}
		for j, f := range d.fieldsOf(t) {
			for _, k := range append([]string{f.key}, f.aliases...) {
				if !slices.Contains(m[k], j) {
					m[k] = append(m[k], j)
				}
			}
		}
		d.byKey[t] = m
	}
	return m
}

func (d *decoder) fieldsOf(t reflect.Type) []fieldInfo {
	f, ok := d.fields[t]
	if !ok {
		f = fieldsOf(t)
		d.fields[t] = f
	}
	return f
}

func (d *decoder) fail(n *dnode, p Path, format string, args ...any) {
	d.failKind(InvalidArgument, n, p, format, args...)
}

func (d *decoder) failKind(k Kind, n *dnode, p Path, format string, args ...any) {
	e := &Error{Kind: k, Path: p, Detail: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = int(n.Line), int(n.Column)
	}
	d.errs = append(d.errs, e)
}

func isNull(n *dnode) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func describe(n *dnode) string {
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
func (d *decoder) scalar(n *dnode, want string) bool {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.fail(n, d.path(), "expected %s, got %s", want, describe(n))
		return false
	}
	return true
}

// value decodes n into v and reports success.
func (d *decoder) value(n *dnode, v reflect.Value, fi fieldInfo) bool {
	d.budget--
	if d.budget < 0 {
		if d.budget == -1 {
			d.fail(n, d.path(), "document too large (more than %d values after alias expansion)", maxValues)
		}
		return false
	}
	if d.deferred != nil && n.Kind == yaml.ScalarNode && !isNull(n) && d.deferred(n.Value) {
		d.deferValue(n, v)
		return true
	}
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		if isNull(n) {
			v.SetZero()
			return true
		}
		nv := reflect.New(t.Elem())
		if !d.value(n, nv.Elem(), fi) {
			return false
		}
		v.Set(nv)
		return true
	case t == addrType:
		if !d.scalar(n, "an IP address") {
			return false
		}
		if n.Value == "" && fi.empty {
			return true
		}
		a, err := netip.ParseAddr(strings.TrimSpace(n.Value))
		if err != nil {
			d.fail(n, d.path(), "%q is not an IP address", n.Value)
			return false
		}
		v.Set(reflect.ValueOf(a))
		return true
	case t == prefixType:
		if !d.scalar(n, "an IP prefix") {
			return false
		}
		if n.Value == "" && fi.empty {
			return true
		}
		pf, err := parsePrefix(n.Value)
		if err != nil {
			d.fail(n, d.path(), "%v", err)
			return false
		}
		v.Set(reflect.ValueOf(pf))
		return true
	case t.Kind() == reflect.Interface:
		p := d.path()
		x, err := decodeOpaque(n.yaml(), p, &d.budget)
		if err != nil {
			d.fail(n, p, "%v", strings.TrimPrefix(err.Error(), string(p)+": "))
			return false
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return true
	case t.Kind() == reflect.Struct:
		return d.structValue(n, v)
	case t.Kind() == reflect.Slice:
		if isNull(n) {
			v.SetZero()
			return true
		}
		if n.Kind != yaml.SequenceNode {
			d.fail(n, d.path(), "expected a list, got %s", describe(n))
			return false
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		ok := true
		for i, c := range n.Content {
			d.steps = append(d.steps, pathStep{index: i})
			ok = d.value(c, s.Index(i), fi) && ok
			d.steps = d.steps[:len(d.steps)-1]
		}
		v.Set(s)
		return ok
	case t.Kind() == reflect.Map:
		if isNull(n) {
			v.SetZero()
			return true
		}
		if n.Kind != yaml.MappingNode {
			d.fail(n, d.path(), "expected a mapping, got %s", describe(n))
			return false
		}
		m := reflect.MakeMapWithSize(t, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			if !d.scalar(kn, "a string key") {
				ok = false
				continue
			}
			k := reflect.New(t.Key()).Elem()
			k.SetString(kn.Value)
			if m.MapIndex(k).IsValid() {
				d.fail(kn, d.path().Key(kn.Value), "duplicate key")
				ok = false
				continue
			}
			ev := reflect.New(t.Elem()).Elem()
			d.steps = append(d.steps, pathStep{key: kn.Value, isKey: true})
			if d.value(vn, ev, fieldInfo{}) {
				m.SetMapIndex(k, ev)
			} else {
				ok = false
			}
			d.steps = d.steps[:len(d.steps)-1]
		}
		v.Set(m)
		return ok
	case t.Kind() == reflect.String:
		if !d.scalar(n, "a string") {
			return false
		}
		s := n.Value
		kind := d.stringKindOf(t)
		if spec := kind.enum; spec != nil {
			c, ok := spec.canonical(strings.TrimSpace(s))
			if v, newer := newerValues[t][strings.TrimSpace(s)]; !ok && newer {
				d.failKind(NotSupported, n, d.path(), "%q %s", s, notYet(v))
				return false
			}
			if !ok {
				d.fail(n, d.path(), "%q is not one of %s", s, strings.Join(spec.values, ", "))
				return false
			}
			s = c
		}
		if kind.normalize != nil {
			c, err := kind.normalize.normalize(s)
			if err != nil {
				d.fail(n, d.path(), "%v", err)
				return false
			}
			s = c
		}
		v.SetString(s)
		return true
	case t.Kind() == reflect.Bool:
		if !d.scalar(n, "a boolean") {
			return false
		}
		b, err := parseBool(n.Value)
		if err != nil {
			d.fail(n, d.path(), "%v", err)
			return false
		}
		v.SetBool(b)
		return true
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		if !d.scalar(n, "an integer") {
			return false
		}
		i, _, err := parseInt(n.Value, t.Bits(), true)
		if err != nil {
			d.fail(n, d.path(), "%v", err)
			return false
		}
		v.SetInt(i)
		return true
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		if !d.scalar(n, "an integer") {
			return false
		}
		_, u, err := parseInt(n.Value, t.Bits(), false)
		if err != nil {
			d.fail(n, d.path(), "%v", err)
			return false
		}
		v.SetUint(u)
		return true
	}
	d.fail(n, d.path(), "internal error: cannot decode into %s", t)
	return false
}

// deferValue handles a value that is not known yet (DecodeDeferred): it
// records the path and leaves v unset, except that a plain string (a name,
// a description) keeps the template text, so that equal templates still
// name the same thing and different ones different things.
func (d *decoder) deferValue(n *dnode, v reflect.Value) {
	t := v.Type()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	def := Deferred{Path: d.path(), Value: n.Value}
	if t.Kind() == reflect.String && t.Implements(enumerType) {
		def.Choices = slices.Clone(d.stringKindOf(t).enum.values)
	}
	d.deferredPaths = append(d.deferredPaths, def)
	if t.Kind() != reflect.String || t.Implements(enumerType) || t.Implements(normalizeType) {
		return
	}
	for v.Kind() == reflect.Pointer {
		nv := reflect.New(v.Type().Elem())
		v.Set(nv)
		v = nv.Elem()
	}
	v.SetString(n.Value)
}

// anyIfaceType is the decoder's interface type while decoding an interface
// whose type is deferred: every type-specific section is accepted.
const anyIfaceType InterfaceType = "*"

// firstFitting picks, for a key that names several sections (bridge: linux
// or OVS), the first one that decodes vn without error, by trial decodes
// that leave no trace; the first candidate when none does, so that its
// errors are reported.
func (d *decoder) firstFitting(vn *dnode, v reflect.Value, key string, cand []int, fields []fieldInfo) *fieldInfo {
	for _, c := range cand {
		f := &fields[c]
		errs, paths, budget := len(d.errs), len(d.deferredPaths), d.budget
		d.steps = append(d.steps, pathStep{key: key, isKey: true})
		fits := d.value(vn, v.Field(f.index), *f) && len(d.errs) == errs
		d.steps = d.steps[:len(d.steps)-1]
		v.Field(f.index).SetZero()
		d.errs, d.deferredPaths, d.budget = d.errs[:errs], d.deferredPaths[:paths], budget
		if fits {
			return f
		}
	}
	return &fields[cand[0]]
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

func (d *decoder) structValue(n *dnode, v reflect.Value) bool {
	t := v.Type()
	if n.Kind == yaml.ScalarNode && !isNull(n) && t.Implements(shorthandType) {
		key := reflect.Zero(t).Interface().(boolShorthander).boolShorthand()
		for _, f := range d.fieldsOf(t) {
			if f.key == key {
				return d.value(n, v.Field(f.index), f)
			}
		}
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, d.path(), "expected a mapping, got %s", describe(n))
		return false
	}
	fields := d.fieldsOf(t)
	if t == ifaceType {
		saved := d.ifaceType
		defer func() { d.ifaceType = saved }()
		d.ifaceType = ""
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "type" {
				if vn := n.Content[i+1]; d.deferred != nil && vn.Kind == yaml.ScalarNode && d.deferred(vn.Value) {
					d.ifaceType = anyIfaceType
					continue
				}
				if c, ok := InterfaceType("").enumSpec().canonical(strings.TrimSpace(n.Content[i+1].Value)); ok {
					d.ifaceType = InterfaceType(c)
				} else {
					d.ifaceType = "?" // invalid; reported when the field is decoded
				}
			}
		}
	}
	ok := true
	// seen pairs a canonical key with the spelling it was given as; a
	// slice, since structs hold few keys.
	type seenKey struct{ key, given string }
	var seenBuf [16]seenKey
	seen := seenBuf[:0]
	seenAs := func(key string) (string, bool) {
		for _, s := range seen {
			if s.key == key {
				return s.given, true
			}
		}
		return "", false
	}
	byKey := d.fieldsByKey(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if !d.scalar(kn, "a string key") {
			ok = false
			continue
		}
		key := kn.Value
		cand := byKey[key]
		if len(cand) == 0 {
			if v, newer := newerKeys[newerKey{t, key}]; newer {
				d.failKind(NotSupported, kn, d.path().Key(key), "%s", notYet(v))
				ok = false
				continue
			}
			d.fail(kn, d.path().Key(key), "unknown field")
			ok = false
			continue
		}
		var f *fieldInfo
		for _, c := range cand {
			if d.ifaceType == anyIfaceType || fields[c].allowsType(d.ifaceType) {
				f = &fields[c]
				break
			}
		}
		if d.ifaceType == anyIfaceType && len(cand) > 1 {
			// The type is not known yet (a template): the key names
			// whichever of its sections takes the value without error.
			f = d.firstFitting(vn, v, key, cand, fields)
		}
		if f == nil {
			switch d.ifaceType {
			case "?":
				// The invalid type is already reported.
			case "":
				d.fail(kn, d.path().Key(key), "needs the interface type to be given")
			default:
				d.fail(kn, d.path().Key(key), "is not valid for interface type %s", d.ifaceType)
			}
			ok = false
			continue
		}
		if prev, dup := seenAs(f.key); dup {
			if prev == key {
				d.fail(kn, d.path().Key(key), "duplicate key")
			} else {
				d.fail(kn, d.path().Key(key), "duplicate key (also given as %s)", prev)
			}
			ok = false
			continue
		}
		seen = append(seen, seenKey{f.key, key})
		d.steps = append(d.steps, pathStep{key: key, isKey: true})
		ok = d.value(vn, v.Field(f.index), *f) && ok
		d.steps = d.steps[:len(d.steps)-1]
	}
	for _, f := range fields {
		if !f.required {
			continue
		}
		if _, given := seenAs(f.key); !given {
			d.fail(n, d.path().Key(f.key), "is required")
			ok = false
		}
	}
	return ok
}
