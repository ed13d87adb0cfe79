package nmstate

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// fastYAML parses the plain subset of YAML that state documents are
// written in (block mappings and sequences, single-line plain and quoted
// scalars, single-line flow collections, comments) into the same node
// tree yaml.v3 builds (kind, tag, value, style, line and column), several
// times faster and with far fewer allocations. Anything outside the subset
// (anchors, aliases, tags, block scalars, multi-line scalars, null values
// written as nothing, tabs, non-ASCII text, several documents, and every
// syntax error) makes it give up, and the caller parses with yaml.v3, so
// errors and exotic documents keep yaml.v3's behaviour exactly.
type fastYAML struct {
	s     string
	lines []fyLine
	i     int // current line
	nodeArena
}

// fyLine is one line holding content (blank and comment-only lines are
// dropped). start is where the content of the current element begins: the
// line's first non-space byte, moved past a "- " when a sequence item
// holds a mapping or sequence on the same line.
type fyLine struct {
	num   int // 1-based line number
	off   int // offset of the line in s
	start int // column (0-based) where the element starts
	end   int // offset of the end of the line (no newline)
}

func parseYAMLFast(text string) (*dnode, bool) {
	p := &fastYAML{s: text}
	if !p.split() || len(p.lines) == 0 || p.lines[0].start != 0 {
		return nil, false
	}
	n, ok := p.block(0)
	if !ok || p.i != len(p.lines) {
		return nil, false
	}
	return n, true
}

// split records the content lines, refusing what the subset excludes.
func (p *fastYAML) split() bool {
	s := p.s
	p.lines = make([]fyLine, 0, strings.Count(s, "\n")+1)
	num, off := 0, 0
	first := true
	for off <= len(s) {
		num++
		end := strings.IndexByte(s[off:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += off
		}
		line := s[off:end]
		for j := 0; j < len(line); j++ {
			if c := line[j]; c == '\t' || c == '\r' || c >= 0x7f || c < 0x20 {
				return false
			}
		}
		ind := 0
		for ind < len(line) && line[ind] == ' ' {
			ind++
		}
		if ind < len(line) && line[ind] != '#' {
			switch {
			case ind == 0 && (line[0] == '%' || strings.HasPrefix(line, "...")):
				return false
			case ind == 0 && strings.HasPrefix(line, "---"):
				rest := strings.TrimLeft(line[3:], " ")
				if !first || len(line) > 3 && line[3] != ' ' || rest != "" && rest[0] != '#' {
					return false
				}
			default:
				first = false
				p.lines = append(p.lines, fyLine{num: num, off: off, start: ind, end: end})
			}
		}
		if end == len(s) {
			break
		}
		off = end + 1
	}
	return true
}

func (p *fastYAML) node(kind yaml.Kind, l *fyLine, col int) *dnode {
	n := p.alloc()
	n.Kind, n.Line, n.Column = kind, int32(l.num), int32(col+1)
	return n
}

// text returns the current line's content from its element start.
func (p *fastYAML) text(l *fyLine) string { return p.s[l.off+l.start : l.end] }

func isSeqEntry(t string) bool { return t == "-" || strings.HasPrefix(t, "- ") }

// block parses the mapping or sequence starting at the current line, whose
// element starts at column ind.
func (p *fastYAML) block(ind int) (*dnode, bool) {
	if isSeqEntry(p.text(&p.lines[p.i])) {
		return p.sequence(ind)
	}
	return p.mapping(ind)
}

func (p *fastYAML) mapping(ind int) (*dnode, bool) {
	l := &p.lines[p.i]
	n := p.node(yaml.MappingNode, l, ind)
	mark := p.mark()
	for p.i < len(p.lines) {
		l := &p.lines[p.i]
		switch {
		case l.start < ind:
			return p.done(n, mark)
		case l.start > ind:
			return nil, false
		}
		t := p.text(l)
		if isSeqEntry(t) {
			return p.done(n, mark) // an indentless sequence's parent decides
		}
		k, rest, ok := splitKey(t)
		if !ok {
			return nil, false
		}
		kn := p.node(yaml.ScalarNode, l, ind)
		kn.Value = k
		if !resolvePlain(kn) {
			return nil, false
		}
		col := ind + len(t) - len(rest)
		var v *dnode
		if rest == "" || rest[0] == '#' {
			// The value is the block on the following lines.
			p.i++
			if p.i >= len(p.lines) {
				return nil, false // null value: leave it to yaml.v3
			}
			nl := &p.lines[p.i]
			switch {
			case nl.start > ind:
				v, ok = p.block(nl.start)
			case nl.start == ind && isSeqEntry(p.text(nl)):
				v, ok = p.sequence(ind)
			default:
				return nil, false
			}
		} else {
			v, ok = p.inline(l, col)
		}
		if !ok {
			return nil, false
		}
		p.push(kn, v)
	}
	return p.done(n, mark)
}

func (p *fastYAML) sequence(ind int) (*dnode, bool) {
	n := p.node(yaml.SequenceNode, &p.lines[p.i], ind)
	mark := p.mark()
	for p.i < len(p.lines) {
		l := &p.lines[p.i]
		switch {
		case l.start < ind:
			return p.done(n, mark)
		case l.start > ind:
			return nil, false
		}
		t := p.text(l)
		if !isSeqEntry(t) {
			return p.done(n, mark)
		}
		rest := strings.TrimLeft(t[1:], " ")
		col := ind + len(t) - len(rest)
		var v *dnode
		var ok bool
		switch {
		case rest == "" || rest[0] == '#':
			p.i++
			if p.i >= len(p.lines) || p.lines[p.i].start <= ind {
				return nil, false
			}
			v, ok = p.block(p.lines[p.i].start)
		case isSeqEntry(rest):
			l.start = col
			v, ok = p.sequence(col)
		default:
			if _, _, isKey := splitKey(rest); isKey {
				l.start = col
				v, ok = p.mapping(col)
			} else {
				v, ok = p.inline(l, col)
			}
		}
		if !ok {
			return nil, false
		}
		p.push(v)
	}
	return p.done(n, mark)
}

// splitKey splits "key: rest" (or "key:" at the end of the line) with a
// plain key; ok is false for anything else.
func splitKey(t string) (key, rest string, ok bool) {
	if t == "" || !plainStart(t, false) {
		return "", "", false
	}
	for j := 0; j < len(t); j++ {
		switch t[j] {
		case ':':
			if j >= 1000 {
				return "", "", false // yaml.v3 limits simple keys to 1024 bytes
			}
			if j+1 == len(t) || t[j+1] == ' ' {
				key = strings.TrimRight(t[:j], " ")
				if key == "" || key == "<<" {
					return "", "", false
				}
				return key, strings.TrimLeft(t[j+1:], " "), true
			}
		case '#':
			if j > 0 && t[j-1] == ' ' {
				return "", "", false
			}
		}
	}
	return "", "", false
}

// plainStart reports whether t may start a plain scalar (YAML forbids most
// indicators; in flow context the flow indicators end it instead).
func plainStart(t string, flow bool) bool {
	switch t[0] {
	case '?', ':':
		return false // allowed by YAML 1.2 in places, refused by yaml.v3 in others
	case '-':
		return len(t) > 1 && t[1] != ' ' && !(flow && strings.IndexByte(",[]{}", t[1]) >= 0)
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	return true
}

// inline parses the value at column col of line l, which must end the
// line (a comment may follow); the next line must not continue it.
func (p *fastYAML) inline(l *fyLine, col int) (*dnode, bool) {
	t := p.s[l.off+col : l.end]
	var n *dnode
	var used int
	var ok bool
	switch t[0] {
	case '[', '{':
		n, used, ok = p.flow(l, col)
	case '"', '\'':
		n, used, ok = p.quoted(l, col)
	default:
		if !plainStart(t, false) {
			return nil, false
		}
		v := t
		if k := strings.Index(t, " #"); k >= 0 {
			v = t[:k]
		}
		v = strings.TrimRight(v, " ")
		if strings.Contains(v, ": ") || strings.HasSuffix(v, ":") {
			return nil, false
		}
		n = p.node(yaml.ScalarNode, l, col)
		n.Value = v
		ok, used = resolvePlain(n), len(t)
	}
	if !ok || !restIsComment(t[used:]) {
		return nil, false
	}
	p.i++
	if p.i < len(p.lines) && p.lines[p.i].start > l.start {
		return nil, false // a continuation line: multi-line scalar
	}
	return n, true
}

func restIsComment(r string) bool {
	t := strings.TrimLeft(r, " ")
	return t == "" || t[0] == '#' && len(t) < len(r)
}

// resolvePlain sets the tag yaml.v3 gives a plain scalar.
func resolvePlain(n *dnode) bool {
	if t := quickTag(n.Value); t != "" {
		n.Tag = t
		return true
	}
	y := yaml.Node{Kind: yaml.ScalarNode, Value: n.Value}
	n.Tag = y.ShortTag()
	switch n.Tag {
	case "!!str", "!!int", "!!bool", "!!null", "!!float":
		return true
	}
	return false // timestamps, merge keys: leave to yaml.v3
}

// quoted parses a single-line quoted scalar at col; it returns the number
// of bytes used from col.
func (p *fastYAML) quoted(l *fyLine, col int) (*dnode, int, bool) {
	t := p.s[l.off+col : l.end]
	q := t[0]
	var b strings.Builder
	simple := true
	for j := 1; j < len(t); j++ {
		c := t[j]
		switch {
		case c == q && q == '\'' && j+1 < len(t) && t[j+1] == '\'':
			if simple {
				b.WriteString(t[1:j])
				simple = false
			}
			b.WriteByte('\'')
			j++
		case c == q:
			n := p.node(yaml.ScalarNode, l, col)
			n.Tag = "!!str"
			if simple {
				n.Value = t[1:j]
			} else {
				n.Value = b.String()
			}
			return n, j + 1, true
		case c == '\\' && q == '"':
			if simple {
				b.WriteString(t[1:j])
				simple = false
			}
			if j+1 >= len(t) {
				return nil, 0, false
			}
			j++
			switch e := t[j]; e {
			case '\\', '"', '/', ' ':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'x', 'u', 'U':
				w := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if j+w >= len(t) {
					return nil, 0, false
				}
				r, err := strconv.ParseUint(t[j+1:j+1+w], 16, 32)
				if err != nil || r >= 0xD800 && r <= 0xDFFF || r > 0x10FFFF {
					return nil, 0, false
				}
				b.WriteRune(rune(r))
				j += w
			default:
				return nil, 0, false
			}
		default:
			if !simple {
				b.WriteByte(c)
			}
		}
	}
	return nil, 0, false // not closed on this line
}

// flow parses a single-line flow collection at col.
func (p *fastYAML) flow(l *fyLine, col int) (*dnode, int, bool) {
	t := p.s[l.off+col : l.end]
	mapping := t[0] == '{'
	kind, closer := yaml.SequenceNode, byte(']')
	if mapping {
		kind, closer = yaml.MappingNode, '}'
	}
	n := p.node(kind, l, col)
	mark := p.mark()
	j := 1
	skip := func() {
		for j < len(t) && t[j] == ' ' {
			j++
		}
	}
	// item parses a flow node at j (a key when key is set).
	item := func(key bool) (*dnode, bool) {
		skip()
		if j >= len(t) {
			return nil, false
		}
		switch t[j] {
		case '[', '{':
			if key {
				return nil, false
			}
			v, used, ok := p.flow(l, col+j)
			j += used
			return v, ok
		case '"', '\'':
			if key {
				return nil, false
			}
			v, used, ok := p.quoted(l, col+j)
			j += used
			return v, ok
		}
		if !plainStart(t[j:], true) {
			return nil, false
		}
		start := j
		for ; j < len(t); j++ {
			c := t[j]
			if c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == '#' && t[j-1] == ' ' {
				break
			}
			if c == ':' && (j+1 == len(t) || strings.IndexByte(" ,[]{}", t[j+1]) >= 0) {
				break
			}
		}
		v := p.node(yaml.ScalarNode, l, col+start)
		v.Value = strings.TrimRight(t[start:j], " ")
		if v.Value == "" {
			return nil, false
		}
		return v, resolvePlain(v)
	}
	skip()
	if j < len(t) && t[j] == closer {
		n, _ = p.done(n, mark)
		return n, j + 1, true
	}
	for {
		skip()
		keyStart := j
		k, ok := item(mapping)
		if !ok {
			return nil, 0, false
		}
		skip()
		if mapping {
			if j+1 >= len(t) || t[j] != ':' || t[j+1] != ' ' || j-keyStart >= 1000 {
				return nil, 0, false
			}
			j++
			v, ok := item(false)
			if !ok {
				return nil, 0, false
			}
			p.push(k, v)
			skip()
		} else {
			if j < len(t) && t[j] == ':' {
				return nil, 0, false // a single-pair mapping inside a sequence
			}
			p.push(k)
		}
		if j >= len(t) {
			return nil, 0, false
		}
		switch t[j] {
		case closer:
			n, _ = p.done(n, mark)
			return n, j + 1, true
		case ',':
			j++
			skip()
			if j < len(t) && t[j] == closer {
				return nil, 0, false // trailing comma: leave it to yaml.v3
			}
		default:
			return nil, 0, false
		}
	}
}

// quickTag resolves the commonest plain scalars without yaml.v3's
// resolver: words starting with a letter (strings unless they are one of
// yaml.v3's boolean or null keywords), addresses and prefixes, and plain
// decimal integers. "" means: ask yaml.v3.
func quickTag(v string) string {
	if v == "" {
		return ""
	}
	c := v[0]
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		// yaml.v3 gives a word other than these keywords the str tag.
		switch v {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return "!!bool"
		case "null", "Null", "NULL":
			return "!!null"
		}
		return "!!str"
	}
	if c >= '0' && c <= '9' {
		// Addresses and prefixes (two dots, or a slash) are no number
		// or timestamp yaml.v3 knows.
		dots, slash := 0, false
		for i := 0; i < len(v); i++ {
			switch x := v[i]; {
			case x == '.':
				dots++
			case x == '/':
				slash = true
			case x < '0' || x > '9':
				dots, slash = -100, false
			}
		}
		if dots >= 2 || slash && dots >= 0 {
			return "!!str"
		}
	}
	if len(v) > 18 || c == '0' && len(v) > 1 {
		return ""
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return ""
		}
	}
	return "!!int"
}

// nodeArena allocates nodes and child lists in large blocks: parsing a
// state makes tens of thousands of small nodes.
type nodeArena struct {
	nodes []dnode
	stack []*dnode // children of the collections being parsed
	ptrs  []*dnode
}

func (a *nodeArena) alloc() *dnode {
	if len(a.nodes) == cap(a.nodes) {
		a.nodes = make([]dnode, 0, 1024)
	}
	a.nodes = a.nodes[:len(a.nodes)+1]
	return &a.nodes[len(a.nodes)-1]
}

func (a *nodeArena) mark() int { return len(a.stack) }

func (a *nodeArena) push(n ...*dnode) { a.stack = append(a.stack, n...) }

// done gives n the children pushed since mark.
func (a *nodeArena) done(n *dnode, mark int) (*dnode, bool) {
	k := len(a.stack) - mark
	if k > 0 {
		if cap(a.ptrs)-len(a.ptrs) < k {
			a.ptrs = make([]*dnode, 0, max(4096, k))
		}
		l := len(a.ptrs)
		out := a.ptrs[l : l+k : l+k]
		copy(out, a.stack[mark:])
		a.ptrs = a.ptrs[:l+k]
		n.Content = out
	}
	a.stack = a.stack[:mark]
	return n, true
}
