package nm

import (
	"slices"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// parentOf is the interface a VLAN, VXLAN or MAC VLAN is stacked on.
func parentOf(ifc *nmstate.Interface) string {
	var p *string
	switch {
	case ifc.VLAN != nil:
		p = ifc.VLAN.BaseIface
	case ifc.VXLAN != nil:
		p = ifc.VXLAN.BaseIface
	case ifc.MacVlan != nil:
		p = ifc.MacVlan.BaseIface
	case ifc.MacVtap != nil:
		p = ifc.MacVtap.BaseIface
	}
	if p == nil {
		return ""
	}
	return *p
}

// orderParents moves every stacked interface after its parent when both
// are in the apply (a VLAN on a bond port's sibling, a VXLAN on a VLAN):
// NetworkManager waits for a parent it is told about first, while a child
// activated before its parent's profile is saved and queued may find no
// parent device. The controller-before-port order is kept: a child only
// moves later.
func orderParents(order []string, targets map[string]*nmstate.Interface) []string {
	for range order {
		moved := false
		for i, name := range order {
			p := parentOf(targets[name])
			j := slices.Index(order, p)
			if p == "" || j < i {
				continue
			}
			order = slices.Insert(slices.Delete(order, i, i+1), j, name)
			moved = true
			break
		}
		if !moved {
			break
		}
	}
	return order
}
