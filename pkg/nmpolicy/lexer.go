package nmpolicy

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

type tokenKind int

const (
	tokWord   tokenKind = iota // run of word characters without a dot
	tokPath                    // run of word characters with at least one dot
	tokString                  // quoted string
	tokEq                      // ==
	tokNe                      // !=
	tokAssign                  // :=
	tokPipe                    // |
)

func (k tokenKind) String() string {
	switch k {
	case tokWord:
		return "word"
	case tokPath:
		return "path"
	case tokString:
		return "string"
	case tokEq:
		return `"=="`
	case tokNe:
		return `"!="`
	case tokAssign:
		return `":="`
	case tokPipe:
		return `"|"`
	}
	return "token"
}

func (k tokenKind) isOperator() bool { return k == tokEq || k == tokNe || k == tokAssign }

// step is one step of a path: a map key or, when all digits, a list index.
type step struct {
	key     string
	isIndex bool
	index   int // valid when isIndex; math.MaxInt when the digits overflow
	pos     int // rune offset of the step in the expression
}

type token struct {
	kind  tokenKind
	pos   int    // rune offset of the first character
	end   int    // rune offset after the last character
	text  string // word/path text or the string's content
	steps []step // for tokPath
}

// illegalRune reports characters that may appear only inside quoted strings.
func illegalRune(r rune) bool {
	switch r {
	case '+', '{', '}', '(', ')', ',':
		return true
	}
	return unicode.IsControl(r) && !unicode.IsSpace(r)
}

func wordRune(r rune) bool {
	if unicode.IsSpace(r) || illegalRune(r) {
		return false
	}
	switch r {
	case '=', '!', ':', '|', '"', '\'':
		return false
	}
	return true
}

func stepRune(r rune) bool {
	return r < unicode.MaxASCII && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
}

// prepareExpression applies the §2 preprocessing: no-break spaces count as
// spaces and surrounding whitespace is ignored. Positions refer to the
// returned text.
func prepareExpression(expr string) []rune {
	expr = strings.ReplaceAll(expr, "\u00a0", " ")
	return []rune(strings.TrimFunc(expr, unicode.IsSpace))
}

// lex splits an expression into tokens. offset is added to every position
// (templates lex the text between the braces).
func lex(src []rune, offset int) ([]token, *posError) {
	var toks []token
	i := 0
	for i < len(src) {
		r := src[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '"' || r == '\'':
			j := i + 1
			for j < len(src) && src[j] != r {
				j++
			}
			if j == len(src) {
				return nil, errAt(KindLexical, offset+i, "unterminated string: missing closing %c", r)
			}
			toks = append(toks, token{kind: tokString, pos: offset + i, end: offset + j + 1, text: string(src[i+1 : j])})
			i = j + 1
		case r == '=' || r == '!' || r == ':':
			if i+1 >= len(src) || src[i+1] != '=' {
				return nil, errAt(KindLexical, offset+i, `%q must be part of "==", "!=" or ":="`, string(r))
			}
			k := map[rune]tokenKind{'=': tokEq, '!': tokNe, ':': tokAssign}[r]
			toks = append(toks, token{kind: k, pos: offset + i, end: offset + i + 2})
			i += 2
		case r == '|':
			toks = append(toks, token{kind: tokPipe, pos: offset + i, end: offset + i + 1})
			i++
		case illegalRune(r):
			return nil, errAt(KindLexical, offset+i, "unexpected character %q outside a quoted string", string(r))
		default:
			j := i
			for j < len(src) && wordRune(src[j]) {
				j++
			}
			tok := token{kind: tokWord, pos: offset + i, end: offset + j, text: string(src[i:j])}
			if strings.ContainsRune(tok.text, '.') {
				steps, err := splitPath(src[i:j], offset+i)
				if err != nil {
					return nil, err
				}
				tok.kind = tokPath
				tok.steps = steps
			}
			toks = append(toks, tok)
			i = j
		}
	}
	return toks, nil
}

// splitPath splits a dotted token into validated steps.
func splitPath(src []rune, pos int) ([]step, *posError) {
	var steps []step
	start := 0
	for i := 0; i <= len(src); i++ {
		if i < len(src) && src[i] != '.' {
			continue
		}
		s, err := makeStep(src[start:i], pos+start)
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
		start = i + 1
	}
	return steps, nil
}

// makeStep validates one step: [A-Za-z0-9_-]+, all digits meaning an index.
func makeStep(src []rune, pos int) (step, *posError) {
	if len(src) == 0 {
		return step{}, errAt(KindLexical, pos, "empty path step (paths are steps joined by single dots, without spaces)")
	}
	digits := true
	for k, r := range src {
		if !stepRune(r) {
			return step{}, errAt(KindLexical, pos+k, "character %q is not allowed in a path step (quote literal values such as addresses: \"192.0.2.1\")", string(r))
		}
		if r < '0' || r > '9' {
			digits = false
		}
	}
	s := step{key: string(src), pos: pos}
	if digits {
		s.isIndex = true
		n, err := strconv.Atoi(s.key)
		if err != nil {
			n = math.MaxInt
		}
		s.index = n
	}
	return s, nil
}

// wordSteps turns a one-word token used in path position into a path.
func wordSteps(t token) ([]step, *posError) {
	if t.kind == tokPath {
		return t.steps, nil
	}
	s, err := makeStep([]rune(t.text), t.pos)
	if err != nil {
		return nil, err
	}
	return []step{s}, nil
}
