package nmstate

import (
	"reflect"
	"strings"
)

// fieldInfo describes one struct field from its `nms` tag:
//
//	nms:"key[,alias=other][,required][,empty][,types=a|b]"
//
// alias: extra spelling accepted on input (the encoder prints key);
// required: decoding fails without it; empty: an empty string is accepted
// for an address field (stored as the zero netip value behind a non-nil
// pointer); types: the key is only valid for these interface types.
type fieldInfo struct {
	key      string
	aliases  []string
	required bool
	empty    bool
	types    []InterfaceType
	index    int
}

func (f *fieldInfo) matches(key string) bool {
	if f.key == key {
		return true
	}
	for _, a := range f.aliases {
		if a == key {
			return true
		}
	}
	return false
}

func (f *fieldInfo) allowsType(t InterfaceType) bool {
	if f.types == nil {
		return true
	}
	for _, x := range f.types {
		if x == t {
			return true
		}
	}
	return false
}

func fieldsOf(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		tag, ok := t.Field(i).Tag.Lookup("nms")
		if !ok {
			continue
		}
		parts := strings.Split(tag, ",")
		f := fieldInfo{key: parts[0], index: i}
		for _, o := range parts[1:] {
			switch {
			case o == "required":
				f.required = true
			case o == "empty":
				f.empty = true
			case strings.HasPrefix(o, "alias="):
				f.aliases = append(f.aliases, strings.TrimPrefix(o, "alias="))
			case strings.HasPrefix(o, "types="):
				for _, x := range strings.Split(strings.TrimPrefix(o, "types="), "|") {
					f.types = append(f.types, InterfaceType(x))
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// keyOrderer is implemented by structs whose first keys are printed in a
// fixed order (the rest follow alphabetically, as nmstate's show does).
type keyOrderer interface{ keyOrder() []string }

// boolShorthander is implemented by structs that may be given as a bare
// boolean, which sets the named field.
type boolShorthander interface{ boolShorthand() string }
