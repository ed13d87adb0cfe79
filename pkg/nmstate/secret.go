package nmstate

// HiddenSecret replaces secrets in shown states, as nmstate prints them
// unless asked to show secrets (nmstatectl -s/--show-secrets).
const HiddenSecret = "<_password_hid_by_nmstate>"

// HideSecrets returns s with every secret (802.1X passwords and private key
// password, the MACsec MKA CAK, the IPsec pre-shared key) replaced by
// HiddenSecret. s itself is not changed; the copy shares nothing with it.
func HideSecrets(s *State) *State {
	if s == nil {
		return nil
	}
	out := s.Clone()
	hide := func(p **string) {
		if *p != nil {
			h := HiddenSecret
			*p = &h
		}
	}
	for i := range out.Interfaces {
		ifc := &out.Interfaces[i]
		if x := ifc.IEEE8021X; x != nil {
			hide(&x.PrivateKeyPassword)
			hide(&x.Password)
		}
		if m := ifc.MACsec; m != nil {
			hide(&m.MKACAK)
		}
		if l := ifc.Libreswan; l != nil {
			hide(&l.PSK)
		}
	}
	return out
}

// keepHiddenSecrets returns desired, or a copy of it in which each secret
// given as HiddenSecret (a state copied from a shown one) is the current
// interface's value, as upstream keeps the current password then. A
// hidden secret without a current one stays as given.
func keepHiddenSecrets(desired, current *State) *State {
	if desired == nil || current == nil || !hasHiddenSecret(desired) {
		return desired
	}
	out := desired.Clone()
	keep := func(d **string, c *string) {
		if *d != nil && **d == HiddenSecret && c != nil {
			v := *c
			*d = &v
		}
	}
	for i := range out.Interfaces {
		ifc := &out.Interfaces[i]
		cur := current.FindTyped(ifc.Name, ifc.Type)
		if cur == nil && (ifc.Type == TypeEthernet || ifc.Type == TypeVeth) {
			// nmstate unifies the two: a NIC given as ethernet may be a veth.
			cur = current.FindTyped(ifc.Name, map[InterfaceType]InterfaceType{TypeEthernet: TypeVeth, TypeVeth: TypeEthernet}[ifc.Type])
		}
		if cur == nil {
			continue
		}
		if x, c := ifc.IEEE8021X, cur.IEEE8021X; x != nil && c != nil {
			keep(&x.Password, c.Password)
			keep(&x.PrivateKeyPassword, c.PrivateKeyPassword)
		}
		if m, c := ifc.MACsec, cur.MACsec; m != nil && c != nil {
			keep(&m.MKACAK, c.MKACAK)
		}
		if l, c := ifc.Libreswan, cur.Libreswan; l != nil && c != nil {
			keep(&l.PSK, c.PSK)
		}
	}
	return out
}

func hasHiddenSecret(s *State) bool {
	hidden := func(p *string) bool { return p != nil && *p == HiddenSecret }
	for i := range s.Interfaces {
		ifc := &s.Interfaces[i]
		if x := ifc.IEEE8021X; x != nil && (hidden(x.Password) || hidden(x.PrivateKeyPassword)) {
			return true
		}
		if m := ifc.MACsec; m != nil && hidden(m.MKACAK) {
			return true
		}
		if l := ifc.Libreswan; l != nil && hidden(l.PSK) {
			return true
		}
	}
	return false
}
