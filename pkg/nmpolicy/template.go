package nmpolicy

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// RenderTemplates resolves the {{ capture.NAME.PATH }} templates of a desired
// state against captured states (spec §8). Only string values are examined,
// never map keys. A string that is only a reference is replaced by the
// referenced value with its type; a reference with text around it must name a
// scalar, whose string form is spliced into the text. The result is a new
// document; desired is not modified. Errors are *Error values located at the
// template's place in desiredState.
func RenderTemplates(desired any, captured CapturedStates) (any, error) {
	names := make([]string, 0, len(captured))
	for name := range captured {
		names = append(names, name)
	}
	sort.Strings(names)
	r := renderer{captured: captured, names: names}
	return r.render(desired, "")
}

type renderer struct {
	captured CapturedStates
	names    []string
}

func (r *renderer) render(v any, loc string) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			n, err := r.render(e, joinKey(loc, k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			n, err := r.render(e, fmt.Sprintf("%s[%d]", loc, i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case string:
		if !IsTemplate(t) {
			return t, nil
		}
		n, perr := r.resolve(t)
		if perr != nil {
			return nil, perr.inTemplate(pathOrRoot(loc), t)
		}
		return n, nil
	default:
		return t, nil
	}
}

// braces finds the non-overlapping occurrences of a two-character delimiter.
func braces(src []rune, a, b rune) []int {
	var at []int
	for i := 0; i+1 < len(src); i++ {
		if src[i] == a && src[i+1] == b {
			at = append(at, i)
			i++
		}
	}
	return at
}

// reference is a parsed template string: one {{ capture.NAME.PATH }}.
type reference struct {
	name    step   // the capture name, with its position
	steps   []step // the path after capture.NAME
	pos     int    // position of the capture.NAME.PATH token
	open    int    // position of "{{"
	closing int    // position of "}}"
}

// parseReference parses one string holding a template (spec §8.1).
// Positions are rune offsets into the string.
func parseReference(src []rune) (reference, *posError) {
	opens := braces(src, '{', '{')
	closes := braces(src, '}', '}')
	switch {
	case len(opens) == 0:
		return reference{}, errAt(KindTemplate, closes[0], `"}}" without an opening "{{"`)
	case len(closes) == 0:
		return reference{}, errAt(KindTemplate, opens[0], `"{{" without a closing "}}"`)
	case closes[0] < opens[0]:
		return reference{}, errAt(KindTemplate, closes[0], `"}}" without an opening "{{"`)
	case len(opens) > 1:
		return reference{}, errAt(KindTemplate, opens[1], "only one reference per string is allowed")
	case len(closes) > 1:
		return reference{}, errAt(KindTemplate, closes[1], `"}}" without an opening "{{" (only one reference per string is allowed)`)
	}
	open, closing := opens[0], closes[0]
	inner := src[open+2 : closing]
	toks, perr := lex(inner, open+2)
	if perr != nil {
		perr.kind = KindTemplate
		return reference{}, perr
	}
	if len(toks) == 0 {
		return reference{}, errAt(KindTemplate, open, "empty reference: expected {{ capture.NAME.PATH }}")
	}
	if len(toks) > 1 {
		return reference{}, errAt(KindTemplate, toks[1].pos, "a reference must be a single path capture.NAME.PATH, found another %s", toks[1].kind)
	}
	t := toks[0]
	steps, perr := wordSteps(t)
	if t.kind == tokString || perr != nil || steps[0].key != "capture" {
		return reference{}, errAt(KindTemplate, t.pos, "a reference can only refer to captured data: expected capture.NAME.PATH")
	}
	if len(steps) < 3 {
		return reference{}, errAt(KindTemplate, t.end, "a reference needs a path after capture.NAME (a whole capture cannot be referenced)")
	}
	if perr := checkCaptureName(steps[1]); perr != nil {
		perr.kind = KindTemplate
		return reference{}, perr
	}
	return reference{name: steps[1], steps: steps[2:], pos: t.pos, open: open, closing: closing}, nil
}

// resolve resolves one string holding a template. Positions are rune offsets
// into the string.
func (r *renderer) resolve(s string) (any, *posError) {
	src := []rune(s)
	ref, perr := parseReference(src)
	if perr != nil {
		return nil, perr
	}
	c, ok := r.captured[ref.name.key]
	if !ok {
		return nil, unknownCapture(ref.name.key, r.names, ref.name.pos)
	}
	var state any = c.State
	if c.State == nil {
		state = map[string]any{}
	}
	v, perr := lookup(state, ref.steps)
	if perr != nil {
		return nil, perr
	}
	before, after := string(src[:ref.open]), string(src[ref.closing+2:])
	if strings.TrimFunc(before, unicode.IsSpace) == "" && strings.TrimFunc(after, unicode.IsSpace) == "" {
		return deepCopy(v), nil
	}
	text, ok := scalarString(v)
	if !ok {
		return nil, errAt(KindType, ref.pos, "the reference is %s; only strings, numbers and booleans can be embedded in text", describe(v))
	}
	return before + text + after, nil
}
