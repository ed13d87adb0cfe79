package nmpolicy

import (
	"fmt"
	"strings"
	"unicode"
)

// ErrorKind classifies an Error (spec §10). Callers decide nothing from it
// beyond presentation: every policy error is the user's to fix.
type ErrorKind string

const (
	KindLexical        ErrorKind = "lexical error"
	KindSyntax         ErrorKind = "syntax error"
	KindUnknownCapture ErrorKind = "unknown capture"
	KindCycle          ErrorKind = "dependency cycle"
	KindNoMatch        ErrorKind = "no match"
	KindPath           ErrorKind = "path error"
	KindType           ErrorKind = "type error"
	KindTemplate       ErrorKind = "template error"
	KindInput          ErrorKind = "invalid input"
)

// Error is a policy error located in a capture expression or in a template
// of desiredState. Its text is the description followed by the expression and
// a caret under the offending character, the way upstream engines print it:
//
//	capture "uplink": lexical error: "=" must be part of "==", "!=" or ":="
//	| interfaces.name = "enp1s0"
//	| ................^
type Error struct {
	Kind ErrorKind
	// Capture names the capture whose expression failed; empty for template
	// errors.
	Capture string
	// Location is the place in desiredState of a failing template, e.g.
	// interfaces[0].vlan.base-iface; empty for capture errors.
	Location string
	// Expression is the expression or template string the position refers to.
	Expression string
	// Pos is the 0-based character (rune) offset into Expression, or -1.
	Pos int
	// Msg describes the problem.
	Msg string
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Capture != "":
		fmt.Fprintf(&b, "capture %q: ", e.Capture)
	case e.Location != "":
		fmt.Fprintf(&b, "desiredState.%s: ", e.Location)
	}
	b.WriteString(string(e.Kind))
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Expression != "" && e.Pos >= 0 {
		b.WriteString("\n| ")
		b.WriteString(displayLine(e.Expression))
		b.WriteString("\n| ")
		b.WriteString(strings.Repeat(".", e.Pos))
		b.WriteString("^")
	}
	return b.String()
}

// displayLine puts an expression on one line, one display column per
// character, so that the caret line stays aligned.
func displayLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// posError is an error at a position of the expression being processed; the
// caller adds the capture name or template location.
type posError struct {
	kind ErrorKind
	pos  int
	msg  string
}

func errAt(kind ErrorKind, pos int, format string, args ...any) *posError {
	return &posError{kind: kind, pos: pos, msg: fmt.Sprintf(format, args...)}
}

func (p *posError) inCapture(name, expr string) *Error {
	return &Error{Kind: p.kind, Capture: name, Expression: expr, Pos: p.pos, Msg: p.msg}
}

func (p *posError) inTemplate(location, tmpl string) *Error {
	return &Error{Kind: p.kind, Location: location, Expression: tmpl, Pos: p.pos, Msg: p.msg}
}
