package nmpolicy

import (
	"fmt"
	"sort"
	"strings"
)

// IsTemplate reports whether a string value of a desired state is a template
// (spec §8.1): one that holds "{{" or "}}". Such a string must be exactly one
// well-formed reference, possibly with text around it; References and
// RenderTemplates report it when it is not.
func IsTemplate(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "}}")
}

// Reference is one template of a desired state, as References finds it.
type Reference struct {
	// Location is the template's place in desiredState, e.g.
	// interfaces[0].vlan.base-iface.
	Location string
	// Template is the whole string value.
	Template string
	// Capture is the capture it refers to: NAME of {{ capture.NAME.PATH }}.
	Capture string
	// CapturePos is the rune offset of NAME in Template.
	CapturePos int
	// Embedded is true when text surrounds the reference, so that it
	// resolves to a string; false when the reference is the whole value
	// and resolves to the referenced value with its type.
	Embedded bool
}

// References lists the templates of a normalised desired state document
// (see DecodeDocument) in document order, map keys sorted, and reports each
// malformed one as an *Error located at its place (the errors RenderTemplates
// would give, without any captured state). It evaluates nothing: whether the
// named captures exist is the caller's question (compare Capture with the
// policy's capture names).
func References(desired any) ([]Reference, []*Error) {
	var refs []Reference
	var errs []*Error
	var walk func(v any, loc string)
	walk = func(v any, loc string) {
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(t[k], joinKey(loc, k))
			}
		case []any:
			for i, e := range t {
				walk(e, fmt.Sprintf("%s[%d]", loc, i))
			}
		case string:
			if !IsTemplate(t) {
				return
			}
			src := []rune(t)
			ref, perr := parseReference(src)
			if perr != nil {
				errs = append(errs, perr.inTemplate(pathOrRoot(loc), t))
				return
			}
			before, after := string(src[:ref.open]), string(src[ref.closing+2:])
			refs = append(refs, Reference{
				Location:   loc,
				Template:   t,
				Capture:    ref.name.key,
				CapturePos: ref.name.pos,
				Embedded:   strings.TrimSpace(before) != "" || strings.TrimSpace(after) != "",
			})
		}
	}
	walk(desired, "")
	return refs, errs
}
