package ovsdb

import (
	"encoding/json"
	"fmt"
	"sort"
)

// UUID is a row's uuid (`["uuid", "..."]` on the wire).
type UUID string

// MarshalJSON encodes the uuid as RFC 7047 `["uuid", id]`.
func (u UUID) MarshalJSON() ([]byte, error) { return json.Marshal([]string{"uuid", string(u)}) }

// NamedUUID refers to a row inserted earlier in the same transaction
// (`["named-uuid", name]`).
type NamedUUID string

// MarshalJSON encodes the name as RFC 7047 `["named-uuid", name]`.
func (n NamedUUID) MarshalJSON() ([]byte, error) {
	return json.Marshal([]string{"named-uuid", string(n)})
}

// Set is an OVSDB set (`["set", [...]]`); its elements are atoms (string,
// integer, real, boolean, UUID or NamedUUID).
type Set []any

// MarshalJSON encodes the set; a one-element set stays a set (the server
// accepts both, and the explicit form is never ambiguous).
func (s Set) MarshalJSON() ([]byte, error) {
	if s == nil {
		s = Set{}
	}
	return json.Marshal([]any{"set", []any(s)})
}

// Map is an OVSDB map of string keys to string values (`["map", [[k,v]...]]`),
// the only map type Open vSwitch's schema uses for configuration columns.
type Map map[string]string

// MarshalJSON encodes the map with sorted keys, so transactions are stable.
func (m Map) MarshalJSON() ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([][2]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, [2]string{k, m[k]})
	}
	return json.Marshal([]any{"map", pairs})
}

// Condition is one `[column, function, value]` of a where clause.
type Condition struct {
	Column   string
	Function string // "==", "!=", "<", "<=", ">", ">=", "includes", "excludes"
	Value    any
}

// MarshalJSON encodes the condition as a 3-element array.
func (c Condition) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{c.Column, c.Function, c.Value})
}

// Where is the common `column == value` condition.
func Where(column string, value any) Condition {
	return Condition{Column: column, Function: "==", Value: value}
}

// Mutation is one `[column, mutator, value]` of a mutate operation.
type Mutation struct {
	Column  string
	Mutator string // "+=", "-=", "*=", "/=", "%=", "insert", "delete"
	Value   any
}

// MarshalJSON encodes the mutation as a 3-element array.
func (m Mutation) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{m.Column, m.Mutator, m.Value})
}

// Operation is one operation of a transaction (RFC 7047 5.2). Only the
// members of its Op are sent.
type Operation struct {
	Op        string         `json:"op"`
	Table     string         `json:"table,omitempty"`
	Where     []Condition    `json:"where,omitempty"`
	Row       map[string]any `json:"row,omitempty"`
	Rows      []map[string]any
	Columns   []string   `json:"columns,omitempty"`
	Mutations []Mutation `json:"mutations,omitempty"`
	UUIDName  string     `json:"uuid-name,omitempty"`
	// Timeout (wait) is in milliseconds; nil waits forever.
	Timeout *int   `json:"timeout,omitempty"`
	Until   string `json:"until,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// MarshalJSON sends `where` for the operations that require it even when
// empty (an empty where clause matches every row), and `rows` for wait.
func (o Operation) MarshalJSON() ([]byte, error) {
	type plain Operation
	m := map[string]any{}
	b, err := json.Marshal(plain(o))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "Rows")
	switch o.Op {
	case "select", "update", "mutate", "delete", "wait":
		if o.Where == nil {
			m["where"] = []any{}
		}
	}
	if o.Op == "wait" {
		rows := o.Rows
		if rows == nil {
			rows = []map[string]any{}
		}
		m["rows"] = rows
	}
	if (o.Op == "update" || o.Op == "insert") && len(o.Row) == 0 {
		m["row"] = map[string]any{}
	}
	return json.Marshal(m)
}

// OperationResult is the server's answer to one operation.
type OperationResult struct {
	Count   int             `json:"count,omitempty"`
	UUID    json.RawMessage `json:"uuid,omitempty"`
	Rows    []Row           `json:"rows,omitempty"`
	Error   string          `json:"error,omitempty"`
	Details string          `json:"details,omitempty"`
}

// InsertedUUID returns the uuid of an insert's new row.
func (r OperationResult) InsertedUUID() (UUID, error) {
	return decodeUUID(r.UUID)
}

// Row is a table row as the server sends it: column name to OVSDB JSON.
type Row map[string]json.RawMessage

// String returns a string column (an empty optional set gives "").
func (r Row) String(col string) string {
	atoms := r.atoms(col)
	if len(atoms) == 0 {
		return ""
	}
	s, _ := atoms[0].(string)
	return s
}

// Int returns an integer column, and whether it was set (optional columns
// are empty sets when unset).
func (r Row) Int(col string) (int64, bool) {
	atoms := r.atoms(col)
	if len(atoms) == 0 {
		return 0, false
	}
	if n, ok := atoms[0].(json.Number); ok {
		v, err := n.Int64()
		return v, err == nil
	}
	return 0, false
}

// Bool returns a boolean column, and whether it was set.
func (r Row) Bool(col string) (bool, bool) {
	atoms := r.atoms(col)
	if len(atoms) == 0 {
		return false, false
	}
	b, ok := atoms[0].(bool)
	return b, ok
}

// Strings returns the string elements of a set column.
func (r Row) Strings(col string) []string {
	var out []string
	for _, a := range r.atoms(col) {
		if s, ok := a.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Ints returns the integer elements of a set column.
func (r Row) Ints(col string) []int64 {
	var out []int64
	for _, a := range r.atoms(col) {
		if n, ok := a.(json.Number); ok {
			if v, err := n.Int64(); err == nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// UUIDs returns the uuid elements of a set (or single reference) column.
func (r Row) UUIDs(col string) []UUID {
	var out []UUID
	for _, a := range r.atoms(col) {
		if u, ok := a.(UUID); ok {
			out = append(out, u)
		}
	}
	return out
}

// UUID returns the row's `_uuid`.
func (r Row) UUID() UUID {
	u := r.UUIDs("_uuid")
	if len(u) == 0 {
		return ""
	}
	return u[0]
}

// Map returns a string-to-string map column.
func (r Row) Map(col string) map[string]string {
	raw, ok := r[col]
	if !ok {
		return nil
	}
	var v []json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil || len(v) != 2 {
		return nil
	}
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(v[1], &pairs); err != nil {
		return nil
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, _ := decodeAtom(p[0])
		val, _ := decodeAtom(p[1])
		ks, _ := k.(string)
		vs, ok := val.(string)
		if !ok {
			vs = fmt.Sprint(val)
		}
		out[ks] = vs
	}
	return out
}

// atoms decodes a column holding an atom or a set of atoms.
func (r Row) atoms(col string) []any {
	raw, ok := r[col]
	if !ok {
		return nil
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(raw, &arr); err == nil && len(arr) == 2 {
		var tag string
		if json.Unmarshal(arr[0], &tag) == nil && tag == "set" {
			var elems []json.RawMessage
			if err := json.Unmarshal(arr[1], &elems); err != nil {
				return nil
			}
			out := make([]any, 0, len(elems))
			for _, e := range elems {
				if a, err := decodeAtom(e); err == nil {
					out = append(out, a)
				}
			}
			return out
		}
	}
	a, err := decodeAtom(raw)
	if err != nil {
		return nil
	}
	return []any{a}
}

// decodeAtom decodes one atom: string, json.Number, bool or UUID.
func decodeAtom(raw json.RawMessage) (any, error) {
	if u, err := decodeUUID(raw); err == nil {
		return u, nil
	}
	var v any
	dec := json.NewDecoder(bytesReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch v.(type) {
	case string, json.Number, bool:
		return v, nil
	}
	return nil, fmt.Errorf("ovsdb: not an atom: %s", raw)
}

func decodeUUID(raw json.RawMessage) (UUID, error) {
	var pair []string
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 || pair[0] != "uuid" {
		return "", fmt.Errorf("ovsdb: not a uuid: %s", raw)
	}
	return UUID(pair[1]), nil
}
