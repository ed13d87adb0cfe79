package nmpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// A document is the generic form of an nmstate state: map[string]any, []any,
// string, bool, int64 (integers), uint64 (integers above MaxInt64), float64
// (other numbers) and nil. Normalize produces it from what YAML and JSON
// decoders return; everything in this package assumes normalised input and
// never mutates a document it was given.

// DecodeDocument decodes one YAML or JSON document into a normalised generic
// document. JSON is decoded with json.Number so integers stay integers; YAML
// (a superset of JSON) is the fallback. Empty input yields nil.
func DecodeDocument(data []byte) (any, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil && !dec.More() {
			return Normalize(v)
		}
		// Not strict JSON (e.g. YAML flow style): let YAML have a go.
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("decoding YAML or JSON: %w", err)
	}
	return Normalize(v)
}

// Normalize returns a normalised deep copy of v: integers become int64 (or
// uint64 when too large), json.Number is parsed, time.Time (YAML timestamps)
// becomes its RFC 3339 text, map keys become strings. Other Go types are an
// error naming the path.
func Normalize(v any) (any, error) {
	return normalize(v, "")
}

func normalize(v any, path string) (any, error) {
	switch t := v.(type) {
	case nil, bool, string, int64, uint64:
		return t, nil
	case float64:
		return t, nil
	case float32:
		return float64(t), nil
	case int:
		return int64(t), nil
	case int8:
		return int64(t), nil
	case int16:
		return int64(t), nil
	case int32:
		return int64(t), nil
	case uint:
		return normUint(uint64(t)), nil
	case uint8:
		return int64(t), nil
	case uint16:
		return int64(t), nil
	case uint32:
		return int64(t), nil
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return u, nil
		}
		f, err := t.Float64()
		if err != nil {
			return nil, fmt.Errorf("%s: invalid number %q", pathOrRoot(path), string(t))
		}
		return f, nil
	case time.Time:
		return t.Format(time.RFC3339Nano), nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			n, err := normalize(e, joinKey(path, k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			ks, ok := scalarString(mustNorm(k))
			if !ok {
				return nil, fmt.Errorf("%s: map key of type %T is not a scalar", pathOrRoot(path), k)
			}
			n, err := normalize(e, joinKey(path, ks))
			if err != nil {
				return nil, err
			}
			out[ks] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			n, err := normalize(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case []map[string]any:
		out := make([]any, len(t))
		for i, e := range t {
			n, err := normalize(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%s: unsupported value of type %T", pathOrRoot(path), v)
	}
}

func normUint(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return u
}

// mustNorm normalises a map key; keys that cannot be normalised are returned
// unchanged and then rejected by scalarString.
func mustNorm(v any) any {
	n, err := normalize(v, "")
	if err != nil {
		return v
	}
	return n
}

func pathOrRoot(path string) string {
	if path == "" {
		return "(document root)"
	}
	return path
}

// joinKey appends a map key to a location in the form used by error
// messages: interfaces[0].vlan.base-iface.
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// scalarString is the string form of a scalar used for comparisons and for
// text interpolation (spec §5.5): strings as is, booleans true/false, numbers
// in plain decimal. Maps, lists and null have none.
func scalarString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case uint64:
		return strconv.FormatUint(t, 10), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	default:
		return "", false
	}
}

// deepCopy copies a normalised document. Evaluation shares unchanged
// sub-trees between documents; results handed to callers are copied so that
// they neither alias the caller's input nor each other.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return t
	}
}

// typeName names the kind of a document value for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "map"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, uint64, float64:
		return "number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// describe renders a value briefly for error messages.
func describe(v any) string {
	switch t := v.(type) {
	case map[string]any:
		return "map with keys " + keyList(t)
	case []any:
		return fmt.Sprintf("list of %d element%s", len(t), plural(len(t)))
	case string:
		return strconv.Quote(t)
	case nil:
		return "null"
	default:
		s, _ := scalarString(t)
		return typeName(t) + " " + s
	}
}

// keyList lists the keys of a map, sorted, shortened for long maps.
func keyList(m map[string]any) string {
	if len(m) == 0 {
		return "(none)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	const max = 12
	if len(keys) > max {
		return strings.Join(keys[:max], ", ") + fmt.Sprintf(", … (%d more)", len(keys)-max)
	}
	return strings.Join(keys, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// isEmptyDoc reports whether a document carries nothing.
func isEmptyDoc(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	default:
		return false
	}
}
