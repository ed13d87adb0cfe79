package nmpolicy

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// CaptureVersion is the metaInfo version written for newly evaluated
// captures (upstream always writes "0").
const CaptureVersion = "0"

// EvaluateCaptures evaluates the capture expressions of a policy against the
// current state (spec §5, §6, §9). Captures present in cache are taken from it
// unchanged (metaInfo included); their expressions are neither parsed nor
// evaluated. The others are evaluated in
// dependency order and stamped with now and CaptureVersion. Cache entries that
// are not captures of the policy are dropped. current must be a normalised
// document (see Normalize); a nil current is the empty document.
//
// The result holds every capture of the policy. Its states are read-only
// views: they share memory with current, with cache and with each other
// (copying them would dominate the cost of a large node); use DeepCopy before
// modifying them. On error the result is nil and the error is an *Error.
func EvaluateCaptures(capture map[string]string, current any, cache CapturedStates, now time.Time) (CapturedStates, error) {
	names, exprs, errs := parseCaptures(capture, cache)
	if len(errs) > 0 {
		return nil, errs[0]
	}

	order, err := evaluationOrder(names, exprs, cache)
	if err != nil {
		return nil, err
	}

	root, ok := current.(map[string]any)
	if current != nil && !ok {
		return nil, &Error{Kind: KindInput, Pos: -1, Msg: fmt.Sprintf("the current state must be a map, not a %s", typeName(current))}
	}
	if root == nil {
		root = map[string]any{}
	}

	states := make(map[string]map[string]any, len(names))
	out := make(CapturedStates, len(names))
	for _, name := range names {
		if c, ok := cache[name]; ok {
			st := c.State
			if st == nil {
				st = map[string]any{}
			}
			states[name] = st
			out[name] = CapturedState{State: st, MetaInfo: c.MetaInfo}
		}
	}
	stamp := MetaInfo{Version: CaptureVersion, Time: now}
	for _, name := range order {
		e := exprs[name]
		st, perr := e.evaluate(root, states)
		if perr != nil {
			return nil, perr.inCapture(name, e.src)
		}
		states[name] = st
		out[name] = CapturedState{State: st, MetaInfo: stamp}
	}
	return out, nil
}

// CheckCaptures checks the capture expressions of a policy without
// evaluating them: capture names, syntax, references to other captures and
// dependency cycles (what an admission webhook can know before any node's
// state exists). It returns every problem found, each an *Error naming its
// capture, in capture-name order; cycles are looked for only when every
// expression parses. nil means the captures are well-formed; evaluation on a
// node may still fail (no match, path errors).
func CheckCaptures(capture map[string]string) []*Error {
	names, exprs, errs := parseCaptures(capture, nil)
	if len(errs) > 0 {
		return errs
	}
	if _, err := evaluationOrder(names, exprs, nil); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return []*Error{e}
		}
		return []*Error{{Kind: KindInput, Pos: -1, Msg: err.Error()}}
	}
	return nil
}

// parseCaptures parses the expressions of capture, except those of names
// present in cache (upstream tests give placeholder text for captures that
// come from the cache), and checks their names and references. It returns
// the sorted names, the parsed expressions and every problem, in name order
// (for one name: its name, then its syntax, then its references).
func parseCaptures(capture map[string]string, cache CapturedStates) ([]string, map[string]*expression, []*Error) {
	names := make([]string, 0, len(capture))
	for name := range capture {
		names = append(names, name)
	}
	sort.Strings(names)

	exprs := make(map[string]*expression, len(capture))
	var errs []*Error
	for _, name := range names {
		if !validCaptureName(name) {
			errs = append(errs, &Error{Kind: KindInput, Capture: name, Pos: -1,
				Msg: "invalid capture name: use letters, digits, '-' and '_' (not only digits)"})
			continue
		}
		if _, cached := cache[name]; cached {
			continue
		}
		e, perr := parseExpression(capture[name])
		if perr != nil {
			errs = append(errs, perr.inCapture(name, e.src))
			continue
		}
		ok := true
		for _, d := range e.deps {
			if _, defined := capture[d.name]; !defined {
				errs = append(errs, unknownCapture(d.name, names, d.pos).inCapture(name, e.src))
				ok = false
				break
			}
		}
		if ok {
			exprs[name] = e
		}
	}
	return names, exprs, errs
}

func unknownCapture(name string, defined []string, pos int) *posError {
	return errAt(KindUnknownCapture, pos, "unknown capture %q (the policy defines %s)", name, definedList(defined))
}

func definedList(names []string) string {
	if len(names) == 0 {
		return "no captures"
	}
	return strings.Join(names, ", ")
}

// evaluationOrder orders the captures that are not cached so that every
// capture comes after the captures it references (spec §6). Cached captures
// have no dependencies: their value is already known.
func evaluationOrder(names []string, exprs map[string]*expression, cache CapturedStates) ([]string, error) {
	const (
		unvisited = iota
		visiting
		done
	)
	state := make(map[string]int, len(names))
	var order []string
	var stack []string
	var visit func(name string) error
	visit = func(name string) error {
		if _, cached := cache[name]; cached {
			return nil
		}
		switch state[name] {
		case done:
			return nil
		case visiting:
			i := len(stack) - 1
			for stack[i] != name {
				i--
			}
			cycle := append(append([]string{}, stack[i:]...), name)
			// Point at the reference that closes the cycle.
			from := exprs[stack[len(stack)-1]]
			pos := -1
			for _, d := range from.deps {
				if d.name == name {
					pos = d.pos
					break
				}
			}
			return &Error{Kind: KindCycle, Capture: stack[len(stack)-1], Expression: from.src, Pos: pos,
				Msg: strings.Join(cycle, " → ")}
		}
		state[name] = visiting
		stack = append(stack, name)
		for _, d := range exprs[name].deps {
			if err := visit(d.name); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
		order = append(order, name)
		return nil
	}
	for _, name := range names {
		if err := visit(name); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// evaluate computes the captured state of one expression. states holds the
// captured states of the captures it depends on.
func (e *expression) evaluate(current map[string]any, states map[string]map[string]any) (map[string]any, *posError) {
	input := current
	if e.input != "" {
		input = states[e.input]
	}
	switch e.op {
	case opPathFilter:
		return pathFilter(input, e.path)
	case opEq, opNe:
		v, perr := e.operandValue(current, states)
		if perr != nil {
			return nil, perr
		}
		want, ok := scalarString(v)
		if !ok {
			return nil, errAt(KindType, e.rhs.pos, "the right-hand operand of %s must be a string, number or boolean, not %s", opName(e.op), describe(v))
		}
		res, ok, perr := filter(input, e.path, comparison{want: want, equal: e.op == opEq}, true)
		if perr != nil {
			return nil, perr
		}
		if !ok {
			return nil, errAt(KindNoMatch, e.pathPos, "filter %s %s %s selected nothing", stepsText(e.path), opName(e.op), operandText(v))
		}
		return res.(map[string]any), nil
	case opReplace:
		var v any
		remove := e.rhs.kind == operandNull
		if !remove {
			var perr *posError
			if v, perr = e.operandValue(current, states); perr != nil {
				return nil, perr
			}
		}
		res, perr := replace(input, e.path, v, remove)
		if perr != nil {
			return nil, perr
		}
		return res.(map[string]any), nil
	}
	return nil, errAt(KindSyntax, 0, "unknown operation")
}

func (e *expression) operandValue(current map[string]any, states map[string]map[string]any) (any, *posError) {
	switch e.rhs.kind {
	case operandCapture:
		return lookup(states[e.rhs.name], e.rhs.steps)
	case operandCurrent:
		return lookup(current, e.rhs.steps)
	default:
		return e.rhs.value, nil
	}
}

func opName(op opKind) string {
	switch op {
	case opEq:
		return "=="
	case opNe:
		return "!="
	case opReplace:
		return ":="
	}
	return "path"
}

func stepsText(steps []step) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = s.key
	}
	return strings.Join(parts, ".")
}

func operandText(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	s, _ := scalarString(v)
	return s
}
