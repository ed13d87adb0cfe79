package nmstate

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// AppendCompactJSON appends s in EncodeJSON's canonical form, without
// indentation or trailing newline, to dst. It is the same document as
// EncodeJSON's (json.Compact of one equals the other), written straight
// from the values: no yaml.Node tree is built, which made most of the
// cost (and garbage) of encoding a state (apply's checkpoint, the
// NodeNetworkState report).
func AppendCompactJSON(dst []byte, s *State) ([]byte, error) {
	if s == nil {
		s = &State{}
	}
	return jsonWriter{}.value(dst, reflect.ValueOf(s).Elem())
}

// AppendCanonicalJSON is AppendCompactJSON with every object's keys in
// byte order instead of nmstate's show order: the form a Kubernetes API
// server returns a schemaless object in (encoding/json sorts map keys), so
// a state written in it compares byte for byte with the one read back
// (the NodeNetworkState report). It equals decoding AppendCompactJSON's
// output into generic values and encoding them again with encoding/json,
// without the cost of doing so.
func AppendCanonicalJSON(dst []byte, s *State) ([]byte, error) {
	if s == nil {
		s = &State{}
	}
	return jsonWriter{sorted: true}.value(dst, reflect.ValueOf(s).Elem())
}

// AppendRouteCanonicalJSON is AppendCanonicalJSON of one route, as it
// appears in a state's route lists.
func AppendRouteCanonicalJSON(dst []byte, r *Route) ([]byte, error) {
	return jsonWriter{sorted: true}.value(dst, reflect.ValueOf(r).Elem())
}

// jsonWriter writes JSON straight from the values; sorted puts every
// object's keys in byte order.
type jsonWriter struct{ sorted bool }

// value follows encoder.value's rules case by case (their order
// matters: a hexer is an integer printed as a string) and writes the JSON
// of the node encoder.value would build: numbers and booleans bare,
// everything else a string, a nil inside a list or map null. An
// omitted value (nil pointer, slice or map) is not written here; callers
// check omitted first.
func (w jsonWriter) value(dst []byte, v reflect.Value) ([]byte, error) {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return w.value(dst, v.Elem())
	case t == addrType:
		a := v.Interface().(netip.Addr)
		if !a.IsValid() {
			return append(dst, `""`...), nil
		}
		return w.str(dst, a.String()), nil
	case t == prefixType:
		p := v.Interface().(netip.Prefix)
		if !p.IsValid() {
			return append(dst, `""`...), nil
		}
		return w.str(dst, p.String()), nil
	case t.Kind() == reflect.Interface:
		return w.opaque(dst, v.Interface())
	case t.Kind() == reflect.Struct:
		return w.structValue(dst, v)
	case t.Kind() == reflect.Slice:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = w.value(dst, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case t.Kind() == reflect.Map:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = w.str(dst, k)
			dst = append(dst, ':')
			var err error
			// A nil map value is meaningful (remove the key): null.
			if dst, err = w.value(dst, v.MapIndex(reflect.ValueOf(k).Convert(t.Key()))); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case t.Kind() == reflect.String:
		return w.str(dst, v.String()), nil
	case t.Kind() == reflect.Bool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case t.Implements(hexerType):
		return w.str(dst, v.Interface().(hexer).hexString()), nil
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	}
	return nil, fmt.Errorf("cannot encode %s", t)
}

// omitted reports whether encoder.value leaves v out (returns nil).
func omitted(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return v.IsNil()
	}
	return false
}

// orderedFields caches, per struct type, its fields in the order
// encoder.structValue sorts them into: keyOrder first, then by key. The
// order depends on the type only (keyOrder ignores its receiver).
// sortedFields caches them by key alone.
var orderedFields, sortedFields sync.Map // reflect.Type → []fieldInfo

func fieldsInOrder(t reflect.Type, byKey bool) []fieldInfo {
	cache := &orderedFields
	if byKey {
		cache = &sortedFields
	}
	if f, ok := cache.Load(t); ok {
		return f.([]fieldInfo)
	}
	fields := slices.Clone(fieldsOf(t))
	rank := map[string]int{}
	if ko, ok := reflect.Zero(t).Interface().(keyOrderer); ok && !byKey {
		for i, k := range ko.keyOrder() {
			rank[k] = i + 1
		}
	}
	sort.SliceStable(fields, func(i, j int) bool {
		ri, rj := rank[fields[i].key], rank[fields[j].key]
		switch {
		case ri != 0 && rj != 0:
			return ri < rj
		case ri != 0:
			return true
		case rj != 0:
			return false
		}
		return fields[i].key < fields[j].key
	})
	cache.Store(t, fields)
	return fields
}

func (w jsonWriter) structValue(dst []byte, v reflect.Value) ([]byte, error) {
	dst = append(dst, '{')
	first := true
	for _, f := range fieldsInOrder(v.Type(), w.sorted) {
		fv := v.Field(f.index)
		if omitted(fv) {
			continue
		}
		// Optional strings and required values are printed even when empty;
		// a required-but-zero field such as an unset Interface.Type is not.
		if fv.Kind() == reflect.String && fv.String() == "" && !f.required {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = w.str(dst, f.key)
		dst = append(dst, ':')
		var err error
		if dst, err = w.value(dst, fv); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// opaque is encodeOpaque's node written as JSON.
func (w jsonWriter) opaque(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case string:
		return w.str(dst, x), nil
	case json.Number:
		if json.Valid([]byte(x)) {
			return append(dst, x...), nil
		}
		return w.str(dst, string(x)), nil
	case []any:
		dst = append(dst, '[')
		for i, c := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = w.opaque(dst, c); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = w.str(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = w.opaque(dst, x[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return nil, fmt.Errorf("cannot encode opaque value of type %T", v)
}

// str writes a string. In the canonical form invalid UTF-8 is replaced
// first, byte by byte, as decoding the compact form would (encoding/json
// escapes each invalid byte as \ufffd, and a decoder reads that back as
// the replacement character, which it then writes as it is).
func (w jsonWriter) str(dst []byte, v string) []byte {
	if w.sorted && !utf8.ValidString(v) {
		var b strings.Builder
		for i := 0; i < len(v); {
			r, n := utf8.DecodeRuneInString(v[i:])
			b.WriteRune(r) // utf8.RuneError for an invalid byte
			i += n
		}
		v = b.String()
	}
	return appendJSONString(dst, v)
}

// appendJSONString quotes v as encoding/json does; plain text (the usual
// case: names, addresses, enum values) is copied without a detour.
func appendJSONString(dst []byte, v string) []byte {
	plain := utf8.ValidString(v)
	for i := 0; plain && i < len(v); i++ {
		c := v[i]
		plain = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c < utf8.RuneSelf
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, v...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(v)
	return append(dst, b...)
}
