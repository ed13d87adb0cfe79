package nmstate

import (
	"fmt"
	"reflect"
)

// Tree returns the canonical generic form of a schema value (a *State,
// *Interface, *Route, or any other pointer to a type of this package): a
// JSON-shaped tree of map[string]any, []any, string, bool, json.Number and
// nil with canonical keys, unset fields omitted. It is what nmstate's
// generic algorithms work on (verification as "desired is a subset of
// current", diffs), with paths built from the same keys as error paths.
func Tree(v any) (any, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("tree of %T: need a non-nil pointer", v)
	}
	e := &encoder{fields: map[reflect.Type][]fieldInfo{}}
	n, err := e.value(rv.Elem())
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, nil
	}
	budget := maxValues
	return decodeOpaque(n, "", &budget)
}
