package nmstate

import "reflect"

// Clone returns a deep copy of s; merge and plan code edits copies, never
// the caller's values.
func (s *State) Clone() *State {
	if s == nil {
		return nil
	}
	out := deepCopy(reflect.ValueOf(s).Elem())
	c := out.Interface().(State)
	return &c
}

// Clone returns a deep copy of the interface.
func (i *Interface) Clone() *Interface {
	if i == nil {
		return nil
	}
	c := deepCopy(reflect.ValueOf(i).Elem()).Interface().(Interface)
	return &c
}

// deepCopy copies pointers, slices and maps recursively (nil stays nil,
// empty stays empty). netip values are immutable and copied by value;
// opaque `any` values (LLDP neighbors) are copied recursively as well.
func deepCopy(v reflect.Value) reflect.Value {
	t := v.Type()
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(deepCopy(v.Elem()))
		return p
	case reflect.Slice:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		s := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			s.Index(i).Set(deepCopy(v.Index(i)))
		}
		return s
	case reflect.Map:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		m := reflect.MakeMapWithSize(t, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			m.SetMapIndex(iter.Key(), deepCopy(iter.Value()))
		}
		return m
	case reflect.Interface:
		if v.IsNil() {
			return reflect.Zero(t)
		}
		c := reflect.New(t).Elem()
		c.Set(deepCopy(v.Elem()))
		return c
	case reflect.Struct:
		if t == addrType || t == prefixType {
			return v
		}
		// Copy the struct at once, then replace only the fields that hold
		// references (t.Field per field is what made Clone slow).
		s := reflect.New(t).Elem()
		s.Set(v)
		for i := 0; i < t.NumField(); i++ {
			switch f := s.Field(i); f.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
				// nil stays nil: the shallow copy already holds it.
				if !f.IsNil() && f.CanSet() {
					f.Set(deepCopy(v.Field(i)))
				}
			case reflect.Struct:
				if f.CanSet() {
					f.Set(deepCopy(v.Field(i)))
				}
			}
		}
		return s
	}
	return v
}
