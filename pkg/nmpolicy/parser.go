package nmpolicy

import (
	"strconv"
	"strings"
)

type opKind int

const (
	opPathFilter opKind = iota // PATH (no steps: copy of the input)
	opEq                       // PATH == OPERAND
	opNe                       // PATH != OPERAND
	opReplace                  // PATH := OPERAND
)

type operandKind int

const (
	operandLiteral operandKind = iota // string, boolean or integer
	operandNull                       // null, only after :=
	operandCapture                    // capture.NAME.STEP…: lookup in a captured state
	operandCurrent                    // other dotted path: lookup in the current state
)

type operand struct {
	kind  operandKind
	value any    // literal value
	name  string // capture name for operandCapture
	steps []step // lookup steps (after capture.NAME for operandCapture)
	pos   int    // position of the operand token
	// namePos is the position of NAME in capture.NAME.
	namePos int
}

// dependency is a reference to another capture, with its position.
type dependency struct {
	name string
	pos  int
}

// expression is a parsed capture expression.
type expression struct {
	src string // the preprocessed expression, for error display

	// input is the capture the expression is evaluated on; "" is the current
	// state.
	input    string
	inputPos int

	op      opKind
	path    []step // left-hand path relative to the input
	pathPos int    // position of the left-hand path token
	rhs     operand

	deps []dependency
}

// parseExpression parses one capture expression (spec §4).
func parseExpression(expr string) (*expression, *posError) {
	src := prepareExpression(expr)
	e := &expression{src: string(src)}
	toks, perr := lex(src, 0)
	if perr != nil {
		return e, perr
	}
	end := len(src)
	if len(toks) == 0 {
		return e, nil // empty expression: the whole current state
	}

	body := toks
	piped := false
	for i, t := range toks {
		if t.kind != tokPipe {
			continue
		}
		if piped {
			return e, errAt(KindSyntax, t.pos, "only one pipe is allowed in an expression")
		}
		if i == 0 {
			return e, errAt(KindSyntax, t.pos, "missing pipe input: expected capture.NAME before %q", "|")
		}
		if i > 1 {
			return e, errAt(KindSyntax, toks[1].pos, "the pipe input must be exactly capture.NAME; unexpected %s before %q", toks[1].kind, "|")
		}
		in := toks[0]
		if in.kind != tokPath || len(in.steps) != 2 || in.steps[0].key != "capture" {
			return e, errAt(KindSyntax, in.pos, "the pipe input must be exactly capture.NAME")
		}
		if err := checkCaptureName(in.steps[1]); err != nil {
			return e, err
		}
		e.input, e.inputPos = in.steps[1].key, in.steps[1].pos
		e.deps = append(e.deps, dependency{name: e.input, pos: e.inputPos})
		body = toks[i+1:]
		piped = true
		if len(body) == 0 {
			return e, errAt(KindSyntax, end, "missing expression after %q", "|")
		}
	}

	lhs := body[0]
	switch lhs.kind {
	case tokString:
		return e, errAt(KindSyntax, lhs.pos, "the left-hand side must be a path, not a quoted string")
	case tokEq, tokNe, tokAssign:
		return e, errAt(KindSyntax, lhs.pos, "missing path before %s", lhs.kind)
	}
	steps, perr := wordSteps(lhs)
	if perr != nil {
		return e, perr
	}
	e.pathPos = lhs.pos
	if steps[0].key == "capture" {
		if len(steps) == 1 {
			return e, errAt(KindSyntax, lhs.end, "missing capture name: expected capture.NAME")
		}
		if piped {
			return e, errAt(KindSyntax, lhs.pos, "a piped expression cannot start with capture.NAME; its input is already capture %q", e.input)
		}
		if err := checkCaptureName(steps[1]); err != nil {
			return e, err
		}
		e.input, e.inputPos = steps[1].key, steps[1].pos
		e.deps = append(e.deps, dependency{name: e.input, pos: e.inputPos})
		steps = steps[2:]
		if len(steps) > 0 {
			e.pathPos = steps[0].pos
		}
	}
	e.path = steps
	if len(body) == 1 {
		e.op = opPathFilter
		return e, nil
	}

	opTok := body[1]
	switch opTok.kind {
	case tokEq:
		e.op = opEq
	case tokNe:
		e.op = opNe
	case tokAssign:
		e.op = opReplace
	default:
		return e, errAt(KindSyntax, opTok.pos, `expected "==", "!=" or ":=" after the path, found %s`, opTok.kind)
	}
	if len(e.path) == 0 {
		return e, errAt(KindSyntax, lhs.end, "missing path after capture.%s before %s", e.input, opTok.kind)
	}
	if e.op == opReplace {
		for _, s := range e.path {
			if s.isIndex {
				return e, errAt(KindSyntax, s.pos, "index steps are not allowed in the path of %q", ":=")
			}
		}
	}
	if len(body) == 2 {
		return e, errAt(KindSyntax, end, "missing right-hand operand after %s", opTok.kind)
	}
	rhs, perr := parseOperand(body[2], e.op)
	if perr != nil {
		return e, perr
	}
	e.rhs = rhs
	if rhs.kind == operandCapture {
		e.deps = append(e.deps, dependency{name: rhs.name, pos: rhs.namePos})
	}
	if len(body) > 3 {
		return e, errAt(KindSyntax, body[3].pos, "unexpected %s after the right-hand operand", body[3].kind)
	}
	return e, nil
}

func parseOperand(t token, op opKind) (operand, *posError) {
	o := operand{pos: t.pos}
	switch t.kind {
	case tokString:
		o.kind, o.value = operandLiteral, t.text
	case tokWord:
		o.kind = operandLiteral
		switch {
		case t.text == "true":
			o.value = true
		case t.text == "false":
			o.value = false
		case strings.EqualFold(t.text, "null"):
			if op != opReplace {
				return o, errAt(KindSyntax, t.pos, "null is only allowed after %q", ":=")
			}
			o.kind = operandNull
		case isInteger(t.text):
			n, err := strconv.ParseInt(t.text, 10, 64)
			if err != nil {
				return o, errAt(KindLexical, t.pos, "integer %s is out of range", t.text)
			}
			o.value = n
		default:
			o.value = t.text
		}
	case tokPath:
		if t.steps[0].key == "capture" {
			if len(t.steps) < 3 {
				return o, errAt(KindSyntax, t.end, "a capture reference needs a path after capture.NAME")
			}
			if err := checkCaptureName(t.steps[1]); err != nil {
				return o, err
			}
			o.kind, o.name, o.steps, o.namePos = operandCapture, t.steps[1].key, t.steps[2:], t.steps[1].pos
		} else {
			o.kind, o.steps = operandCurrent, t.steps
		}
	default:
		return o, errAt(KindSyntax, t.pos, "missing right-hand operand: found %s", t.kind)
	}
	return o, nil
}

func isInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// checkCaptureName rejects capture names that would read as list indexes.
func checkCaptureName(s step) *posError {
	if s.isIndex {
		return errAt(KindSyntax, s.pos, "capture name %q must not be all digits", s.key)
	}
	return nil
}

// validCaptureName reports whether name can be referenced as capture.NAME.
func validCaptureName(name string) bool {
	if name == "" {
		return false
	}
	digits := true
	for _, r := range name {
		if !stepRune(r) {
			return false
		}
		if r < '0' || r > '9' {
			digits = false
		}
	}
	return !digits
}
