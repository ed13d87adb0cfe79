package nmstate

// Merged is the result of merging a desired (partial) state into a current
// state: the contract between Merge (what the node should look like after
// the apply) and Plan (how to get there). It holds values only.
//
// Everything that is not in the change set is untouched by the apply: the
// planner must not touch interfaces, routes, rules, DNS or hostname that
// Merged does not mention.
type Merged struct {
	// Desired is the desired state as given, after untyped interfaces were
	// resolved against Current (types filled in) and mac-address
	// identifiers resolved to names.
	Desired *State
	// Current is the state the merge was computed against.
	Current *State

	// Interfaces is the change set: every interface the apply must create,
	// modify or remove, each holding its full target configuration (desired
	// overlaid on current by nmstate's merge rules; new interfaces hold the
	// desired configuration alone). Interfaces with state absent (or a
	// virtual interface other than veth with state down, which is deleted
	// too, see DeletedByDown) hold only name, type and state. A target's
	// type is the current interface's (an `ethernet` desired over a veth
	// stays a veth), and its state is the desired one, up for pulled-in
	// interfaces. Ports pulled into the change set by a changed
	// controller (attached or detached; detached ones with Controller ""),
	// children of an absent parent (marked absent) and the like appear here
	// as well. Order: desired order first, pulled-in interfaces after.
	Interfaces []Interface

	// Routes is the full target list of config routes when the apply
	// changes routes (current config routes minus those matched by absent
	// patterns or dropped with their interface/family, plus desired ones,
	// deduplicated by route identity which ignores metric); nil when the
	// apply changes no route.
	Routes []Route
	// RouteRules is the full target list of route rules (same rules as
	// Routes, with auto priorities assigned); nil when no rule changes.
	RouteRules []RouteRule
	// DNS is the full target static resolver configuration; nil when the
	// apply does not touch DNS.
	DNS *DNSConfig
	// Hostname is the target hostname section; nil when untouched.
	Hostname *Hostname
	// OVSDB is the full target of the Open_vSwitch table's maps (OVN's
	// bridge mappings included as external_ids:ovn-bridge-mappings); nil
	// when the apply touches neither `ovs-db` nor `ovn`.
	OVSDB *OVSGlobal
}

// OVSGlobal is the Open_vSwitch table's external_ids and other_config.
type OVSGlobal struct {
	ExternalIDs map[string]string
	OtherConfig map[string]string
}

// Interface returns the change-set entry with this name and type ("" type
// matches the first of that name), or nil.
func (m *Merged) Interface(name string, typ InterfaceType) *Interface {
	for i := range m.Interfaces {
		ifc := &m.Interfaces[i]
		if ifc.Name == name && (typ == "" || ifc.Type == typ) {
			return ifc
		}
	}
	return nil
}
