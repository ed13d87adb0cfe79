package nmstate

import (
	"encoding/json"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// AppendCompactJSON appends s in EncodeJSON's canonical form, without
// indentation or trailing newline, to dst. It is the same document as
// EncodeJSON's (json.Compact of one equals the other) at a fraction of the
// cost, for callers that embed states in larger records (apply's
// checkpoint).
func AppendCompactJSON(dst []byte, s *State) ([]byte, error) {
	n, err := Node(s)
	if err != nil {
		return nil, err
	}
	return appendNodeJSON(dst, n), nil
}

// appendNodeJSON writes a canonical node tree as JSON with writeJSON's
// rules: decimal numbers and true/false as they are, everything else a
// string.
func appendNodeJSON(dst []byte, n *yaml.Node) []byte {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return append(dst, "null"...)
		}
		return appendNodeJSON(dst, n.Content[0])
	case yaml.AliasNode:
		return appendNodeJSON(dst, n.Alias)
	case yaml.MappingNode:
		dst = append(dst, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, n.Content[i].Value)
			dst = append(dst, ':')
			dst = appendNodeJSON(dst, n.Content[i+1])
		}
		return append(dst, '}')
	case yaml.SequenceNode:
		dst = append(dst, '[')
		for i, c := range n.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendNodeJSON(dst, c)
		}
		return append(dst, ']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return append(dst, "null"...)
		case "!!bool", "!!int", "!!float":
			if json.Valid([]byte(n.Value)) {
				return append(dst, n.Value...)
			}
		}
		return appendJSONString(dst, n.Value)
	}
	return dst
}

// appendJSONString quotes v as encoding/json does; plain text (the usual
// case: names, addresses, enum values) is copied without a detour.
func appendJSONString(dst []byte, v string) []byte {
	plain := utf8.ValidString(v)
	for i := 0; plain && i < len(v); i++ {
		c := v[i]
		plain = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c < utf8.RuneSelf
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, v...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(v)
	return append(dst, b...)
}
