package kernel

import (
	"net/netip"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// uapi/linux/mptcp.h
const (
	mptcpPMName       = "mptcp_pm"
	mptcpPMCmdGetAddr = 3
	mptcpPMAttrAddr   = 1
	mptcpAddrAddr4    = 3
	mptcpAddrAddr6    = 4
	mptcpAddrFlags    = 6
)

var mptcpKernelFlags = []struct {
	bit  uint32
	flag nmstate.MPTCPFlag
}{{1, "signal"}, {2, "subflow"}, {4, "backup"}, {8, "fullmesh"}}

// MPTCPEndpoints maps each MPTCP path manager endpoint address of the
// namespace (generic netlink family mptcp_pm) to its flags; nil when the
// kernel has no MPTCP path manager. The NetworkManager backend reports
// these (its profiles' connection.mptcp-flags make them), as nmstate does
// from nispor.
func (b *Backend) MPTCPEndpoints() map[netip.Addr][]nmstate.MPTCPFlag {
	c, err := genetlink.Dial(&netlink.Config{NetNS: int(b.ns)})
	if err != nil {
		return nil
	}
	defer c.Close()
	f, err := c.GetFamily(mptcpPMName)
	if err != nil {
		return nil
	}
	msgs, err := c.Execute(genetlink.Message{Header: genetlink.Header{Command: mptcpPMCmdGetAddr, Version: f.Version}}, f.ID, netlink.Request|netlink.Dump)
	if err != nil {
		return nil
	}
	out := map[netip.Addr][]nmstate.MPTCPFlag{}
	for _, m := range msgs {
		ad, err := netlink.NewAttributeDecoder(m.Data)
		if err != nil {
			continue
		}
		for ad.Next() {
			if ad.Type() != mptcpPMAttrAddr {
				continue
			}
			var addr netip.Addr
			var flags uint32
			ad.Nested(func(n *netlink.AttributeDecoder) error {
				for n.Next() {
					switch n.Type() {
					case mptcpAddrAddr4, mptcpAddrAddr6:
						// Network order bytes (__be32 / in6_addr).
						if a, ok := netip.AddrFromSlice(n.Bytes()); ok {
							addr = a
						}
					case mptcpAddrFlags:
						flags = n.Uint32()
					}
				}
				return nil
			})
			if addr.IsValid() {
				fl := []nmstate.MPTCPFlag{}
				for _, k := range mptcpKernelFlags {
					if flags&k.bit != 0 {
						fl = append(fl, k.flag)
					}
				}
				out[addr] = fl
			}
		}
	}
	return out
}
