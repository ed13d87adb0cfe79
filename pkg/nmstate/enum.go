package nmstate

// enumSpec lists the canonical spellings of an enumerated string type and
// the extra spellings the decoder accepts for them (numeric kernel values,
// snake_case variants). Decoding maps an alias to its canonical value, so
// the encoder always prints the canonical spelling.
type enumSpec struct {
	values  []string
	aliases map[string]string
}

// enumer is implemented (on the value receiver) by every enumerated string
// type; the reflection decoder uses it to reject unknown values.
type enumer interface {
	enumSpec() enumSpec
}

func (s enumSpec) canonical(v string) (string, bool) {
	for _, c := range s.values {
		if c == v {
			return c, true
		}
	}
	if c, ok := s.aliases[v]; ok {
		return c, true
	}
	return "", false
}
