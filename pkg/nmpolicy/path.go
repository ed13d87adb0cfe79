package nmpolicy

import "strconv"

// This file applies paths to documents: lookup (operands, templates),
// selection for path filters, filters and replace (spec §3.3, §5).

// lookup walks steps strictly: every step must exist (spec §3.3 (1)).
func lookup(doc any, steps []step) (any, *posError) {
	cur := doc
	for _, s := range steps {
		switch n := cur.(type) {
		case map[string]any:
			if s.isIndex {
				return nil, errAt(KindPath, s.pos, "index %s used on a map (keys: %s)", s.key, keyList(n))
			}
			v, ok := n[s.key]
			if !ok {
				return nil, errAt(KindPath, s.pos, "key %q not found (keys: %s)", s.key, keyList(n))
			}
			cur = v
		case []any:
			if !s.isIndex {
				return nil, errAt(KindPath, s.pos, "key %q used on a list of %d element%s; use an index", s.key, len(n), plural(len(n)))
			}
			if s.index >= len(n) {
				return nil, errAt(KindPath, s.pos, "index %s out of range (list has %d element%s)", s.key, len(n), plural(len(n)))
			}
			cur = n[s.index]
		default:
			return nil, errAt(KindPath, s.pos, "cannot take step %q of %s", s.key, describe(cur))
		}
	}
	return cur, nil
}

// pathFilter keeps only the branch named by steps; a list met on the way is
// kept whole and ends the walk; a missing key yields the empty document
// (spec §5.1).
func pathFilter(doc map[string]any, steps []step) (map[string]any, *posError) {
	v, ok, err := pathFilterAt(doc, steps)
	if err != nil {
		return nil, err
	}
	if !ok {
		return map[string]any{}, nil
	}
	return v.(map[string]any), nil
}

func pathFilterAt(node any, steps []step) (any, bool, *posError) {
	if len(steps) == 0 {
		return node, true, nil
	}
	switch n := node.(type) {
	case map[string]any:
		s := steps[0]
		if s.isIndex {
			return nil, false, errAt(KindPath, s.pos, "index %s used on a map (keys: %s)", s.key, keyList(n))
		}
		child, ok := n[s.key]
		if !ok {
			return nil, false, nil
		}
		sub, ok, err := pathFilterAt(child, steps[1:])
		if err != nil || !ok {
			return nil, ok, err
		}
		return map[string]any{s.key: sub}, true, nil
	case []any:
		return n, true, nil
	default:
		return nil, false, nil
	}
}

// comparison is the leaf test of == and != (spec §5.5).
type comparison struct {
	want  string
	equal bool
}

func (c comparison) leaf(v any) bool {
	s, ok := scalarString(v)
	return ok && (s == c.want) == c.equal
}

// filter selects list elements whose leaf passes c, shaped per spec §5.2.
// top is true for the document root, which keeps only the first key.
func filter(node any, steps []step, c comparison, top bool) (any, bool, *posError) {
	switch n := node.(type) {
	case map[string]any:
		s := steps[0]
		if s.isIndex {
			return nil, false, errAt(KindPath, s.pos, "index %s used on a map (keys: %s)", s.key, keyList(n))
		}
		child, ok := n[s.key]
		if !ok {
			return nil, false, nil
		}
		if len(steps) == 1 {
			// No list on the path: keep the map holding the leaf.
			if !c.leaf(child) {
				return nil, false, nil
			}
			if top {
				return map[string]any{s.key: child}, true, nil
			}
			return n, true, nil
		}
		sub, ok, err := filter(child, steps[1:], c, false)
		if err != nil || !ok {
			return nil, ok, err
		}
		return map[string]any{s.key: sub}, true, nil
	case []any:
		// The first list on the path: keep matching elements whole.
		var out []any
		s := steps[0]
		if s.isIndex {
			if s.index < len(n) {
				ok, err := match(n[s.index], steps[1:], c)
				if err != nil {
					return nil, false, err
				}
				if ok {
					out = append(out, n[s.index])
				}
			}
		} else {
			for _, e := range n {
				ok, err := match(e, steps, c)
				if err != nil {
					return nil, false, err
				}
				if ok {
					out = append(out, e)
				}
			}
		}
		if len(out) == 0 {
			return nil, false, nil
		}
		return out, true, nil
	default:
		return nil, false, nil
	}
}

// match reports whether the remaining steps lead from node to a passing
// leaf; nested lists match when any element does.
func match(node any, steps []step, c comparison) (bool, *posError) {
	if len(steps) == 0 {
		return c.leaf(node), nil
	}
	s := steps[0]
	switch n := node.(type) {
	case map[string]any:
		if s.isIndex {
			return false, errAt(KindPath, s.pos, "index %s used on a map (keys: %s)", s.key, keyList(n))
		}
		child, ok := n[s.key]
		if !ok {
			return false, nil
		}
		return match(child, steps[1:], c)
	case []any:
		if s.isIndex {
			if s.index >= len(n) {
				return false, nil
			}
			return match(n[s.index], steps[1:], c)
		}
		for _, e := range n {
			ok, err := match(e, steps, c)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	default:
		return false, nil
	}
}

// replace returns node with the leaf named by steps set to value (or removed
// when remove is set) everywhere the path reaches; missing maps are created
// and lists are applied element by element (spec §5.3). Only the maps and
// lists on the path are copied; the rest is shared with node.
func replace(node any, steps []step, value any, remove bool) (any, *posError) {
	s := steps[0]
	switch n := node.(type) {
	case nil, map[string]any:
		m, _ := n.(map[string]any)
		out := make(map[string]any, len(m)+1)
		for k, v := range m {
			out[k] = v
		}
		if len(steps) == 1 {
			if remove {
				delete(out, s.key)
			} else {
				out[s.key] = value
			}
			return out, nil
		}
		sub, err := replace(m[s.key], steps[1:], value, remove)
		if err != nil {
			return nil, err
		}
		out[s.key] = sub
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, e := range n {
			switch e.(type) {
			case map[string]any, []any:
			default:
				return nil, errAt(KindPath, s.pos, "cannot apply step %q to element %s of a list: it is %s", s.key, strconv.Itoa(i), describe(e))
			}
			v, err := replace(e, steps, value, remove)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	default:
		return nil, errAt(KindPath, s.pos, "cannot apply step %q to %s", s.key, describe(node))
	}
}
