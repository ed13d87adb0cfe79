package nmstate

import "gopkg.in/yaml.v3"

// dnode is the decoder's node: what the walk reads of a yaml.Node (less
// than half its size, which matters with tens of thousands of nodes). The
// fast parsers build dnodes directly; yaml.v3 and encoding/json trees are
// converted by fromYAML.
//
// Tag is the short tag of a scalar ("!!str", "!!int", ...), as
// yaml.Node.ShortTag gives it, and empty for collections. Aliases are
// resolved: an alias node is the anchored node itself (shared, so the walk
// still expands aliases and the value budget still applies).
type dnode struct {
	Tag, Value   string
	Content      []*dnode
	yn           *yaml.Node // the yaml.v3 node it came from, if any
	Line, Column int32
	Kind         yaml.Kind
}

// fromYAML converts a yaml.v3 tree. Each yaml.Node is converted once, so
// alias-heavy documents stay linear (and alias loops become dnode loops,
// which the walk's budget stops, as before).
func fromYAML(n *yaml.Node) *dnode {
	memo := map[*yaml.Node]*dnode{}
	var conv func(n *yaml.Node) *dnode
	conv = func(n *yaml.Node) *dnode {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if d, ok := memo[n]; ok {
			return d
		}
		d := &dnode{Kind: n.Kind, Value: n.Value, Line: int32(n.Line), Column: int32(n.Column), yn: n}
		if n.Kind == yaml.ScalarNode {
			d.Tag = n.ShortTag()
		}
		memo[n] = d
		if len(n.Content) > 0 {
			d.Content = make([]*dnode, len(n.Content))
			for i, c := range n.Content {
				d.Content[i] = conv(c)
			}
		}
		return d
	}
	return conv(n)
}

// yaml returns the node as a yaml.Node, for the opaque-value decoder.
func (n *dnode) yaml() *yaml.Node {
	if n.yn != nil {
		return n.yn
	}
	y := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Line: int(n.Line), Column: int(n.Column)}
	switch n.Kind {
	case yaml.MappingNode:
		y.Tag = "!!map"
	case yaml.SequenceNode:
		y.Tag = "!!seq"
	}
	for _, c := range n.Content {
		y.Content = append(y.Content, c.yaml())
	}
	return y
}

// deref follows YAML aliases to the anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}
