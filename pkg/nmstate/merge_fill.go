package nmstate

import "reflect"

// fillUnset completes dst (a desired value) with src (the current value):
// every unset field of dst takes src's value, structs are completed
// recursively, maps key by key (they are JSON objects upstream), and a
// given list replaces the current one whole. This is nmstate's generic
// "desired overlaid on current" merge; the special merges (IP, bond, bridge
// ports) run on top of it.
func fillUnset(dst, src reflect.Value) {
	switch dst.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if dst.IsNil() {
			dst.Set(deepCopy(src))
			return
		}
		if e := dst.Elem(); e.Kind() == reflect.Struct && e.Type() != addrType && e.Type() != prefixType {
			fillUnset(e, src.Elem())
		}
	case reflect.Struct:
		if dst.Type() == addrType || dst.Type() == prefixType {
			return
		}
		for i := 0; i < dst.NumField(); i++ {
			if dst.Type().Field(i).IsExported() {
				fillUnset(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if dst.IsNil() && !src.IsNil() {
			dst.Set(deepCopy(src))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		if dst.IsNil() {
			dst.Set(deepCopy(src))
			return
		}
		it := src.MapRange()
		for it.Next() {
			if !dst.MapIndex(it.Key()).IsValid() {
				dst.SetMapIndex(it.Key(), deepCopy(it.Value()))
			}
		}
	case reflect.Interface:
		if dst.IsNil() && !src.IsNil() {
			dst.Set(deepCopy(src))
		}
	case reflect.String:
		if dst.String() == "" {
			dst.SetString(src.String())
		}
	}
}

// mergeValues returns a new value: d completed with c by the rules of
// fillUnset, copying each node once (no aliasing of either input).
func mergeValues(d, c reflect.Value) reflect.Value {
	switch d.Kind() {
	case reflect.Pointer:
		if d.IsNil() {
			return deepCopy(c)
		}
		if c.IsNil() {
			return deepCopy(d)
		}
		if e := d.Elem(); e.Kind() == reflect.Struct && e.Type() != addrType && e.Type() != prefixType {
			p := reflect.New(e.Type())
			p.Elem().Set(mergeValues(e, c.Elem()))
			return p
		}
		return deepCopy(d)
	case reflect.Struct:
		if d.Type() == addrType || d.Type() == prefixType {
			return d
		}
		// Schema structs have exported fields only (the decoder's tags
		// need them), so no per-field visibility check is needed here.
		s := reflect.New(d.Type()).Elem()
		for i := 0; i < d.NumField(); i++ {
			s.Field(i).Set(mergeValues(d.Field(i), c.Field(i)))
		}
		return s
	case reflect.Slice, reflect.Interface:
		if d.IsNil() {
			return deepCopy(c)
		}
		return deepCopy(d)
	case reflect.Map:
		if d.IsNil() {
			return deepCopy(c)
		}
		m := deepCopy(d)
		if !c.IsNil() {
			it := c.MapRange()
			for it.Next() {
				if !m.MapIndex(it.Key()).IsValid() {
					m.SetMapIndex(it.Key(), deepCopy(it.Value()))
				}
			}
		}
		return m
	case reflect.String:
		if d.String() == "" {
			return c
		}
	}
	return d
}

// fillFrom completes *dst from *src (both pointers to the same type).
func fillFrom[T any](dst, src *T) {
	if dst == nil || src == nil {
		return
	}
	fillUnset(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem())
}

// cloneOf deep-copies any schema value.
func cloneOf[T any](v T) T {
	return deepCopy(reflect.ValueOf(&v).Elem()).Interface().(T)
}
