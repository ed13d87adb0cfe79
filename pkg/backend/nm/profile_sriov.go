package nm

import (
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// sriovSettings maps ethernet.sr-iov to NetworkManager's sriov setting:
// NetworkManager writes sriov_numvfs at activation and configures each VF
// (MAC, VLAN, trust, spoof check, rates) over netlink. total-vfs 0 drops
// the setting, as nmstate does. A VF keeps what the existing profile had
// for it unless the desired state sets it.
func sriovSettings(s Settings, in ProfileInput) error {
	var c *nmstate.SRIOV
	if d := in.Desired; d != nil && d.Ethernet != nil {
		c = d.Ethernet.SRIOV
	}
	if c == nil {
		if prev, ok := in.Previous["sriov"]; ok && len(prev) > 0 {
			s["sriov"] = previousSection(in, "sriov")
		}
		return nil
	}
	if in.Iface.Type != nmstate.TypeEthernet && in.Iface.Type != nmstate.TypeVeth {
		return nil
	}
	if c.TotalVFs != nil && *c.TotalVFs == 0 {
		delete(s, "sriov")
		return nil
	}
	out := previousSection(in, "sriov")
	if c.TotalVFs != nil {
		out["total-vfs"] = dbus.MakeVariant(*c.TotalVFs)
	}
	if c.DriversAutoprobe != nil {
		v := int32(0)
		if *c.DriversAutoprobe {
			v = 1
		}
		out["autoprobe-drivers"] = dbus.MakeVariant(v)
	}
	if c.VFs != nil {
		prev := map[uint32]map[string]dbus.Variant{}
		if v, ok := out["vfs"]; ok {
			list, _ := v.Value().([]map[string]dbus.Variant)
			for _, vf := range list {
				if i, ok := vf["index"].Value().(uint32); ok {
					prev[i] = vf
				}
			}
		}
		vfs := []map[string]dbus.Variant{}
		for _, vf := range c.VFs {
			nv := map[string]dbus.Variant{}
			for k, v := range prev[vf.ID] {
				nv[k] = v
			}
			nv["index"] = dbus.MakeVariant(vf.ID)
			if vf.MACAddress != nil {
				nv["mac"] = dbus.MakeVariant(strings.ToUpper(string(*vf.MACAddress)))
			}
			setBool(nv, "spoof-check", vf.SpoofCheck)
			setBool(nv, "trust", vf.Trust)
			setUint(nv, "min-tx-rate", vf.MinTxRate)
			setUint(nv, "max-tx-rate", vf.MaxTxRate)
			if vf.VlanID != nil {
				vlan := map[string]dbus.Variant{"id": dbus.MakeVariant(*vf.VlanID), "qos": dbus.MakeVariant(uint32(0)), "protocol": dbus.MakeVariant(uint32(0))}
				if vf.QoS != nil {
					vlan["qos"] = dbus.MakeVariant(*vf.QoS)
				}
				if vf.VlanProto != nil && *vf.VlanProto == "802.1ad" {
					vlan["protocol"] = dbus.MakeVariant(uint32(1))
				}
				nv["vlans"] = dbus.MakeVariant([]map[string]dbus.Variant{vlan})
			}
			vfs = append(vfs, nv)
		}
		out["vfs"] = dbus.MakeVariant(vfs)
	}
	s["sriov"] = out
	return nil
}
