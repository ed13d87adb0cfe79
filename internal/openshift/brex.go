package openshift

import (
	"errors"
	"fmt"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// CheckBrEx checks what OVN-Kubernetes needs of a host's state when
// configure-ovs does not build br-ex: an OVS bridge br-ex with at least
// one port besides its own internal interface (the uplink), and the OVS
// internal interface br-ex among the bridge's ports, carrying the node's
// addresses. The error's path is relative to the host's networkConfig.
func CheckBrEx(s *nmstate.State) error {
	var bridge, iface *nmstate.Interface
	bridgeAt, ifaceAt := -1, -1
	for i := range s.Interfaces {
		in := &s.Interfaces[i]
		if in.Name != BrEx {
			continue
		}
		switch in.Type {
		case nmstate.TypeOVSBridge:
			bridge, bridgeAt = in, i
		case nmstate.TypeOVSInterface:
			iface, ifaceAt = in, i
		}
	}
	var errs []error
	if bridge == nil {
		errs = append(errs, errors.New("interfaces: no ovs-bridge named br-ex (OVNKubernetes needs it when configure-ovs does not build it)"))
	}
	if iface == nil {
		errs = append(errs, errors.New("interfaces: no ovs-interface named br-ex (the bridge's internal port, which carries the node's addresses)"))
	}
	if bridge != nil {
		p := fmt.Sprintf("interfaces[%d]", bridgeAt)
		if st := bridge.EffectiveState(); st != nmstate.StateUp {
			errs = append(errs, fmt.Errorf("%s.state: br-ex must be up, not %s", p, st))
		}
		var hasSelf, hasUplink bool
		if bridge.OVSBridge != nil {
			for _, port := range bridge.OVSBridge.Port {
				if port.Name == BrEx {
					hasSelf = true
				} else {
					hasUplink = true
				}
			}
		}
		if !hasUplink {
			errs = append(errs, fmt.Errorf("%s.bridge.port: br-ex has no uplink port (a NIC or bond besides br-ex itself)", p))
		}
		if !hasSelf && iface != nil {
			errs = append(errs, fmt.Errorf("%s.bridge.port: br-ex does not list its ovs-interface br-ex", p))
		}
	}
	if iface != nil {
		p := fmt.Sprintf("interfaces[%d]", ifaceAt)
		if st := iface.EffectiveState(); st != nmstate.StateUp {
			errs = append(errs, fmt.Errorf("%s.state: the ovs-interface br-ex must be up, not %s", p, st))
		}
		if !ipEnabled(iface.IPv4) && !ipEnabled(iface.IPv6) {
			errs = append(errs, fmt.Errorf("%s: the ovs-interface br-ex has neither ipv4 nor ipv6 enabled (it carries the node's address)", p))
		}
	}
	return errors.Join(errs...)
}

func ipEnabled(c *nmstate.IPConfig) bool {
	return c != nil && c.Enabled != nil && *c.Enabled
}
