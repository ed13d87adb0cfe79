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
