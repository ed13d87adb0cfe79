package nmstate

import "reflect"

// DecodeDeferred decodes a document some of whose string values stand for
// values known only later: the {{ capture.NAME.PATH }} templates of a
// policy, which a node resolves against its own state. isDeferred tells
// such values apart (nmpolicy.IsTemplate). Everything else is decoded as
// strictly as by Decode, so unknown keys, bad enum values and out-of-range
// numbers outside templates are still errors.
//
// A deferred value is not decoded; it is returned in deferred, in document
// order, with its path. Its field stays unset, except a plain string field (an
// interface name, a port name, a description), which holds the template
// text: equal templates then still name the same interface, different ones
// different interfaces. An interface whose type is deferred accepts every
// type-specific section, and a key that names several sections (bridge)
// takes the first that fits its value.
//
// The result is meant for Validate with these paths in mind: a problem at
// or below a deferred path, or one that the missing value causes elsewhere,
// says nothing about the resolved document. See internal/admission for the
// rules the admission webhook applies.
func DecodeDeferred(data []byte, isDeferred func(value string) bool) (s *State, deferred []Deferred, err error) {
	root, perr := parseText(stringsWithoutNBSP(data))
	if perr != nil {
		return nil, nil, ErrorList{{Kind: InvalidArgument, Detail: perr.Error()}}
	}
	s = &State{}
	if root == nil {
		return s, nil, nil
	}
	d := newDecoder()
	d.deferred = isDeferred
	d.value(root, reflect.ValueOf(s).Elem(), fieldInfo{})
	if len(d.errs) > 0 {
		return nil, d.deferredPaths, d.errs
	}
	s.postDecode()
	return s, d.deferredPaths, nil
}

// Deferred is a value DecodeDeferred did not decode.
type Deferred struct {
	// Path locates it, as in errors.
	Path Path
	// Value is the text that stands for it (the template).
	Value string
	// Choices are the values the place takes when it is an enumeration
	// (an interface type, a route type, a bond mode), canonical spellings
	// in the schema's order; nil otherwise.
	Choices []string
}
