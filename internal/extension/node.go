package extension

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Per-node values: a string value of a policy's desiredState may hold one
// {{ node.name }}, {{ node.labels.KEY }} or {{ node.annotations.KEY }}
// (KEY is the rest of the reference, dots and slashes included), alone or
// with text around it; each node's handler replaces it with its own Node's
// value before the capture language resolves {{ capture... }} templates.
// A value alone stays a string.

// NodeValues are what a template can read of the node.
type NodeValues struct {
	Name                string
	Labels, Annotations map[string]string
}

// NodeProblem is a malformed node template, or one the node cannot fill.
type NodeProblem struct {
	// Location is the value's place in desiredState, e.g.
	// interfaces[0].name.
	Location string
	// Template is the whole string value.
	Template string
	Detail   string
}

func (p NodeProblem) Error() string {
	return fmt.Sprintf("%s: %q: %s", p.Location, p.Template, p.Detail)
}

// nodeRef is a parsed string holding a node template.
type nodeRef struct {
	before, after string
	// field is "name", "labels" or "annotations"; key the label's or
	// annotation's key.
	field, key string
}

// parseNode parses a string holding a template. isNode is false when the
// template is not a node one (the capture language's, or malformed for
// it to report).
func parseNode(s string) (ref nodeRef, isNode bool, err error) {
	open := strings.Index(s, "{{")
	if open < 0 {
		return nodeRef{}, false, nil
	}
	closing := strings.Index(s[open:], "}}")
	if closing < 0 {
		return nodeRef{}, false, nil
	}
	closing += open
	inner := strings.TrimFunc(s[open+2:closing], unicode.IsSpace)
	if inner != "node" && !strings.HasPrefix(inner, "node.") {
		return nodeRef{}, false, nil
	}
	ref = nodeRef{before: s[:open], after: s[closing+2:]}
	if strings.Contains(ref.after, "{{") || strings.Contains(ref.after, "}}") || strings.Contains(ref.before, "}}") {
		return ref, true, fmt.Errorf("only one reference per string is allowed")
	}
	path := strings.TrimPrefix(inner, "node.")
	field, key, _ := strings.Cut(path, ".")
	switch {
	case path == "name":
		ref.field = "name"
	case (field == "labels" || field == "annotations") && key != "" && !strings.ContainsFunc(key, unicode.IsSpace):
		ref.field, ref.key = field, key
	default:
		return ref, true, fmt.Errorf("expected {{ node.name }}, {{ node.labels.KEY }} or {{ node.annotations.KEY }}")
	}
	return ref, true, nil
}

func (r nodeRef) value(n NodeValues) (string, error) {
	var m map[string]string
	switch r.field {
	case "name":
		return n.Name, nil
	case "labels":
		m = n.Labels
	default:
		m = n.Annotations
	}
	v, ok := m[r.key]
	if !ok {
		return "", fmt.Errorf("node %s has no %s %q", n.Name, strings.TrimSuffix(r.field, "s"), r.key)
	}
	return v, nil
}

// walkStrings calls f with every string value of a generic document and
// its location; f returns the value to put in its place. The result is a
// new document.
func walkStrings(v any, loc string, f func(loc, s string) string) any {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(t))
		for _, k := range keys {
			l := k
			if loc != "" {
				l = loc + "." + k
			}
			out[k] = walkStrings(t[k], l, f)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = walkStrings(e, fmt.Sprintf("%s[%d]", loc, i), f)
		}
		return out
	case string:
		return f(loc, t)
	default:
		return t
	}
}

// RenderNode replaces the node templates of a desiredState document (as
// nmpolicy.DecodeDocument gives it) with the node's values; every problem
// is returned, in document order. doc is not modified.
func RenderNode(doc any, n NodeValues) (any, []NodeProblem) {
	var problems []NodeProblem
	out := walkStrings(doc, "", func(loc, s string) string {
		ref, isNode, err := parseNode(s)
		if !isNode {
			return s
		}
		if err == nil {
			var v string
			if v, err = ref.value(n); err == nil {
				return ref.before + v + ref.after
			}
		}
		problems = append(problems, NodeProblem{Location: loc, Template: s, Detail: err.Error()})
		return s
	})
	return out, problems
}

// CheckNodeTemplates reports the malformed node templates of a desiredState
// document, and returns it with every node template replaced by an empty
// string, for the checks of the capture language (which knows no node).
func CheckNodeTemplates(doc any) (any, []NodeProblem) {
	var problems []NodeProblem
	out := walkStrings(doc, "", func(loc, s string) string {
		_, isNode, err := parseNode(s)
		if !isNode {
			return s
		}
		if err != nil {
			problems = append(problems, NodeProblem{Location: loc, Template: s, Detail: err.Error()})
		}
		return ""
	})
	return out, problems
}
