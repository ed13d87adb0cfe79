package nmstate

import (
	"encoding/json"

	"gopkg.in/yaml.v3"
)

// fastJSON builds the same node tree as parseJSON (tags, values and line
// numbers included) with a hand-written scanner instead of encoding/json's
// Token API, which allocates for every token. It gives up (ok = false) on
// anything it does not handle or on invalid input, and the caller then
// runs parseJSON, so errors are always parseJSON's.
//
// Line numbers reproduce parseJSON exactly: a node's line is the line of
// the decoder position when the node is read, which is the first
// non-space byte for the first entry of a collection (More skipped the
// spaces), the comma after the previous entry for the other entries, and
// the end of the key for a mapping value.
type fastJSON struct {
	s    string
	pos  int // decoder position (encoding/json's InputOffset)
	line int // line at lpos
	lpos int
	nodeArena
}

func parseJSONFast(text string) (*dnode, bool) {
	p := &fastJSON{s: text, line: 1}
	n, ok := p.value()
	if !ok {
		return nil, false
	}
	p.skipSpace()
	if p.pos != len(p.s) {
		return nil, false
	}
	return n, true
}

// lineAt returns the line of the current position; positions only move
// forward, so newlines are counted once.
func (p *fastJSON) lineAt() int {
	for ; p.lpos < p.pos; p.lpos++ {
		if p.s[p.lpos] == '\n' {
			p.line++
		}
	}
	return p.line
}

func (p *fastJSON) node() *dnode { return p.alloc() }

func (p *fastJSON) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value reads one value at the current position (which the caller left
// where encoding/json's decoder would be).
func (p *fastJSON) value() (*dnode, bool) {
	line := p.lineAt()
	p.skipSpace()
	if p.pos >= len(p.s) {
		return nil, false
	}
	n := p.node()
	n.Line = int32(line)
	switch c := p.s[p.pos]; {
	case c == '{':
		p.pos++
		n.Kind = yaml.MappingNode
		mark := p.mark()
		first := true
		for {
			p.skipSpace() // More
			if p.pos >= len(p.s) {
				return nil, false
			}
			if p.s[p.pos] == '}' {
				p.pos++
				return p.done(n, mark)
			}
			if !first {
				if p.s[p.pos] != ',' {
					return nil, false
				}
			}
			kl := p.lineAt()
			if !first {
				p.pos++
				p.skipSpace()
			}
			first = false
			if p.pos >= len(p.s) || p.s[p.pos] != '"' {
				return nil, false
			}
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			kn := p.node()
			kn.Kind, kn.Tag, kn.Value, kn.Line = yaml.ScalarNode, "!!str", k, int32(kl)
			vl := p.lineAt()
			p.skipSpace()
			if p.pos >= len(p.s) || p.s[p.pos] != ':' {
				return nil, false
			}
			p.pos++
			// The value's line is the line at the end of the key.
			v, ok := p.valueAtLine(vl)
			if !ok {
				return nil, false
			}
			p.push(kn, v)
		}
	case c == '[':
		p.pos++
		n.Kind = yaml.SequenceNode
		mark := p.mark()
		first := true
		for {
			p.skipSpace() // More
			if p.pos >= len(p.s) {
				return nil, false
			}
			if p.s[p.pos] == ']' {
				p.pos++
				return p.done(n, mark)
			}
			if !first {
				if p.s[p.pos] != ',' {
					return nil, false
				}
				l := p.lineAt()
				p.pos++
				v, ok := p.valueAtLine(l)
				if !ok {
					return nil, false
				}
				p.push(v)
				continue
			}
			first = false
			v, ok := p.value()
			if !ok {
				return nil, false
			}
			p.push(v)
		}
	case c == '"':
		v, ok := p.str()
		if !ok {
			return nil, false
		}
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!str", v
	case c == 't' && len(p.s)-p.pos >= 4 && p.s[p.pos:p.pos+4] == "true":
		p.pos += 4
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", "true"
	case c == 'f' && len(p.s)-p.pos >= 5 && p.s[p.pos:p.pos+5] == "false":
		p.pos += 5
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", "false"
	case c == 'n' && len(p.s)-p.pos >= 4 && p.s[p.pos:p.pos+4] == "null":
		p.pos += 4
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
	case c == '-' || c >= '0' && c <= '9':
		v, float, ok := p.number()
		if !ok {
			return nil, false
		}
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!int", v
		if float {
			n.Tag = "!!float"
		}
	default:
		return nil, false
	}
	if p.pos < len(p.s) {
		// A literal must end at a delimiter, as in encoding/json.
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r', ',', ']', '}', ':':
		default:
			if n.Kind == yaml.ScalarNode && n.Tag != "!!str" {
				return nil, false
			}
		}
	}
	return n, true
}

// valueAtLine reads a value whose line was fixed before a separator.
func (p *fastJSON) valueAtLine(line int) (*dnode, bool) {
	n, ok := p.value()
	if ok {
		n.Line = int32(line)
	}
	return n, ok
}

// str reads a string literal; strings with escapes or non-ASCII bytes are
// decoded by encoding/json itself, so the result is identical.
func (p *fastJSON) str() (string, bool) {
	start := p.pos
	p.pos++
	simple := true
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			if simple {
				return p.s[start+1 : p.pos-1], true
			}
			var out string
			if err := json.Unmarshal([]byte(p.s[start:p.pos]), &out); err != nil {
				return "", false
			}
			return out, true
		case c == '\\':
			simple = false
			p.pos += 2
			continue
		case c < 0x20:
			return "", false
		case c >= 0x80:
			simple = false
		}
		p.pos++
	}
	return "", false
}

// number reads a JSON number literal (strict JSON grammar).
func (p *fastJSON) number() (string, bool, bool) {
	start := p.pos
	float := false
	if p.s[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(p.s) && p.s[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return "", false, false
	}
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		float = true
		p.pos++
		if digits() == 0 {
			return "", false, false
		}
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		float = true
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return "", false, false
		}
	}
	return p.s[start:p.pos], float, true
}
