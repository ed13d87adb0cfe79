package nmstate

// State is a whole nmstate document: a desired (partial) state, or a
// state reported by query. Every section is optional (nil = not given).
type State struct {
	Hostname    *Hostname    `nms:"hostname"`
	DNSResolver *DNSResolver `nms:"dns-resolver"`
	RouteRules  *RouteRules  `nms:"route-rules"`
	Routes      *Routes      `nms:"routes"`
	// Interfaces keeps the document's order; nil = not given.
	Interfaces  []Interface `nms:"interfaces"`
	OVSDB       *OVSDB      `nms:"ovs-db"`
	OVN         *OVN        `nms:"ovn"`
	Description *string     `nms:"description"`
}

// keyOrder is nmstate's top-level show order.
func (State) keyOrder() []string {
	return []string{"hostname", "dns-resolver", "route-rules", "routes", "interfaces", "ovs-db", "ovn", "description"}
}

// Find returns the interfaces named name (more than one only when a kernel
// and a user-space interface share the name).
func (s *State) Find(name string) []*Interface {
	var out []*Interface
	for i := range s.Interfaces {
		if s.Interfaces[i].Name == name {
			out = append(out, &s.Interfaces[i])
		}
	}
	return out
}

// FindTyped returns the interface with this name and type, or nil. An empty
// typ matches the first interface of that name.
func (s *State) FindTyped(name string, typ InterfaceType) *Interface {
	for i := range s.Interfaces {
		ifc := &s.Interfaces[i]
		if ifc.Name == name && (typ == "" || ifc.Type == typ) {
			return ifc
		}
	}
	return nil
}
