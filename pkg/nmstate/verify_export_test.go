package nmstate

// VerifyGeneric is Verify without the typed fast path: the reference the
// fast path is checked against.
func VerifyGeneric(desired, current *State) error { return verify(desired, current, false) }

// VerifyFastAccepted reports what the fast path decides alone: the desired
// interfaces it accepts (among those the generic path would compare) and
// whether it accepts the route list.
func VerifyFastAccepted(desired, current *State) (ifaces []string, routes bool) {
	v := &verifier{desired: desired, current: current, ignored: map[string]bool{}, fast: true}
	for i := range desired.Interfaces {
		d := &desired.Interfaces[i]
		if c := v.findCurrent(d); c != nil && d.EffectiveState() == StateUp && v.fastIfaceMatch(d, c) {
			ifaces = append(ifaces, d.Name)
		}
	}
	return ifaces, desired.Routes != nil && v.fastRoutesMatch()
}
