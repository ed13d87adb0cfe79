package admission

import "strings"

// Error is one reason to refuse an object.
type Error struct {
	// Field is the path of the offending value in the object, e.g.
	// spec.desiredState.interfaces[0].vlan.id or spec.capture.uplink.
	Field string
	// Detail is the reason. Problems in an expression or template end with
	// two lines showing it and a caret under the position:
	//
	//	lexical error at position 16: "=" must be part of "==", "!=" or ":="
	//	| interfaces.name = "enp1s0"
	//	| ................^
	Detail string
}

// Error renders "field: detail".
func (e Error) Error() string { return e.Field + ": " + e.Detail }

// ErrorList is every reason to refuse an object, in a stable order.
type ErrorList []Error

// Error joins the entries with newlines.
func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Err returns nil for an empty list.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
