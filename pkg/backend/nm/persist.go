package nm

// sameProfileType reports whether profile p is of the connection type of
// settings s, as nmstate matches an interface's profiles (ethernet and
// veth are one kind: an existing veth is driven as ethernet).
func sameProfileType(p *profile, s Settings) bool {
	kind := func(t string) string {
		if t == "veth" {
			return "802-3-ethernet"
		}
		return t
	}
	t, _ := s["connection"]["type"].Value().(string)
	return kind(p.str("connection", "type")) == kind(t)
}
