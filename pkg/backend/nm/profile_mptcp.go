package nm

import (
	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// NetworkManager's connection.mptcp-flags bits (NM_MPTCP_FLAGS_*).
const (
	mptcpDisabled            = 0x01
	mptcpAlsoWithoutDefRoute = 0x08
	mptcpSignal              = 0x10
	mptcpSubflow             = 0x20
	mptcpBackup              = 0x40
	mptcpFullmesh            = 0x80
)

var mptcpBits = []struct {
	flag nmstate.MPTCPFlag
	bit  uint32
}{{"signal", mptcpSignal}, {"subflow", mptcpSubflow}, {"backup", mptcpBackup}, {"fullmesh", mptcpFullmesh}}

// mptcpSettings maps mptcp.address-flags to connection.mptcp-flags:
// NetworkManager then adds an MPTCP endpoint with those flags for each of
// the profile's addresses. An empty list disables MPTCP on the profile. As
// nmstate does, the flags also apply without a default route (by default
// NetworkManager only configures endpoints on interfaces with one, a rule
// nmstate does not expose).
func mptcpSettings(s Settings, ifc *nmstate.Interface) error {
	if ifc.MPTCP == nil || ifc.MPTCP.AddressFlags == nil {
		return nil
	}
	v := uint32(mptcpDisabled)
	if len(ifc.MPTCP.AddressFlags) > 0 {
		v = mptcpAlsoWithoutDefRoute
		for _, f := range ifc.MPTCP.AddressFlags {
			for _, b := range mptcpBits {
				if b.flag == f {
					v |= b.bit
				}
			}
		}
	}
	s["connection"]["mptcp-flags"] = dbus.MakeVariant(v)
	return nil
}
