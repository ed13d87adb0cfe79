package nmstate

import "strconv"

// resolveRouteRefs rewrites the desired routes (on the merger's copy of
// the desired state, so Merged.Desired and everything after it see the
// result); see routesResolved.
func (mg *merger) resolveRouteRefs() {
	routes, errs := routesResolved(mg.d, mg.cur)
	mg.errs = append(mg.errs, errs...)
	if routes != nil && len(errs) == 0 {
		mg.d.Routes = routes
	}
}

// routesResolved returns desired's routes section rewritten for apply and
// verification, or nil when nothing needs rewriting: routes marked
// `state: ignore` are dropped, as nmstate's apply skips them, and a route's
// `vrf-name` becomes the `table-id` of that VRF, taken from the desired
// state when it gives the VRF's route-table-id, else from current. A route
// giving both must name the same table.
func routesResolved(desired, current *State) (*Routes, ErrorList) {
	if desired.Routes == nil || desired.Routes.Config == nil {
		return nil, nil
	}
	var errs ErrorList
	out := make([]Route, 0, len(desired.Routes.Config))
	changed := false
	for i, r := range desired.Routes.Config {
		if r.IsIgnored() {
			changed = true
			continue
		}
		if r.VRFName != nil {
			p := Path("routes").Key("config").Index(i).Key("vrf-name")
			name := *r.VRFName
			table, ok := vrfTable(desired, current, name)
			switch {
			case !ok:
				errs = append(errs, &Error{Kind: InvalidArgument, Path: p,
					Detail: "VRF " + name + " is neither in the desired state (with a route-table-id) nor in the current state"})
				continue
			case r.TableID != nil && *r.TableID != 0 && *r.TableID != table:
				errs = append(errs, &Error{Kind: InvalidArgument, Path: p,
					Detail: "VRF " + name + " uses route table " + strconv.FormatUint(uint64(table), 10) + ", but the route gives table-id " + strconv.FormatUint(uint64(*r.TableID), 10)})
				continue
			}
			r.TableID = &table
			r.VRFName = nil
			changed = true
		}
		out = append(out, r)
	}
	if !changed {
		return nil, errs
	}
	rs := *desired.Routes
	rs.Config = out
	return &rs, errs
}

// vrfTable is the route table of the VRF interface name: its desired
// route-table-id, else its current one. A VRF the desired state removes
// has none.
func vrfTable(desired, current *State, name string) (uint32, bool) {
	for i := range desired.Interfaces {
		ifc := &desired.Interfaces[i]
		if ifc.Name != name || (ifc.Type != "" && ifc.Type != TypeVRF) {
			continue
		}
		if ifc.State == StateAbsent || ifc.State == StateDown {
			return 0, false
		}
		if ifc.VRF != nil && ifc.VRF.RouteTableID != nil && *ifc.VRF.RouteTableID != 0 {
			return *ifc.VRF.RouteTableID, true
		}
	}
	if current == nil {
		return 0, false
	}
	for i := range current.Interfaces {
		c := &current.Interfaces[i]
		if c.Name == name && c.Type == TypeVRF && c.VRF != nil && c.VRF.RouteTableID != nil && *c.VRF.RouteTableID != 0 {
			return *c.VRF.RouteTableID, true
		}
	}
	return 0, false
}
