package nmstate

import (
	"errors"
	"strconv"
	"strings"
)

// Kind classifies an engine error. Callers decide retry versus terminal
// failure from the kind alone (nmstate ErrorKind), never from the text.
type Kind int

const (
	// InvalidArgument: the user's document is wrong; retrying cannot help.
	InvalidArgument Kind = iota + 1
	// NotSupported: valid nmstate, but this engine does not implement it.
	NotSupported
	// Dependency: something the document relies on is missing (a module,
	// an interface that should exist).
	Dependency
	// Verification: the system did not reach the desired state.
	Verification
	// Backend: the kernel or another backend refused an operation.
	Backend
	// Permission: the caller lacks privileges.
	Permission
	// Bug: an internal invariant broke.
	Bug
)

var kindNames = map[Kind]string{
	InvalidArgument: "InvalidArgument",
	NotSupported:    "NotSupported",
	Dependency:      "Dependency",
	Verification:    "Verification",
	Backend:         "Backend",
	Permission:      "Permission",
	Bug:             "Bug",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Path is a JSON-path-like location inside a state document, e.g.
// "interfaces[1].link-aggregation.mode". The empty Path is the document root.
type Path string

// Key returns the path of a mapping key below p.
func (p Path) Key(k string) Path {
	if p == "" {
		return Path(k)
	}
	return p + "." + Path(k)
}

// Index returns the path of a list element below p.
func (p Path) Index(i int) Path {
	return p + "[" + Path(strconv.Itoa(i)) + "]"
}

// Error is one problem found in a state document or while acting on it.
type Error struct {
	Kind Kind
	// Path locates the offending value; empty for whole-document problems.
	Path Path
	// Detail is the reason, lowercase, without the path.
	Detail string
	// Line and Column locate the value in the source text (1-based) when the
	// error came from decoding; zero otherwise.
	Line, Column int
}

// Error renders "path: detail" (or just the detail at the root), the shape
// nmstatectl validate prints one per line.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Detail
	}
	return string(e.Path) + ": " + e.Detail
}

// Is makes errors.Is(err, &Error{Kind: k}) match any error of kind k.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Path == "" && t.Detail == "" && t.Kind == e.Kind
}

// ErrorList collects every problem of a document; decoding and validation
// never stop at the first one.
type ErrorList []*Error

// Error joins the entries with newlines.
func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap exposes the entries to errors.Is / errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns nil for an empty list, so callers can `return l.Err()`.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// KindOf returns the kind of err: the kind of the first *Error found in its
// chain, Bug for any other non-nil error, 0 for nil.
func KindOf(err error) Kind {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Bug
}

func (l *ErrorList) add(k Kind, p Path, format string) {
	*l = append(*l, &Error{Kind: k, Path: p, Detail: format})
}
