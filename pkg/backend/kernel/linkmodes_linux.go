package kernel

import (
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// uapi/linux/ethtool.h values x/sys/unix does not carry.
const (
	autonegEnable = 1
	duplexHalf    = 0
	duplexFull    = 1
)

// LinkModes returns the ethernet section (auto-negotiation, speed,
// duplex) the kernel reports per device name, from one ethtool
// LINKMODES_GET dump over the namespace; nil when the kernel has no
// ethtool netlink family. This backend sets no link modes (it refuses
// ethernet speed/duplex/auto-negotiation) and Show does not report them;
// the NetworkManager backend, which sets them through its profiles,
// reports what the kernel shows, as nmstate (from nispor) does.
func (b *Backend) LinkModes() map[string]*nmstate.Ethernet {
	replies, err := b.ethtoolRequest(unix.ETHTOOL_MSG_LINKMODES_GET, 0, true, nil, 0)
	if err != nil {
		return nil
	}
	out := map[string]*nmstate.Ethernet{}
	for _, data := range replies {
		ad, err := netlink.NewAttributeDecoder(data)
		if err != nil {
			continue
		}
		var name string
		e := &nmstate.Ethernet{}
		for ad.Next() {
			switch ad.Type() {
			case unix.ETHTOOL_A_LINKMODES_HEADER:
				ad.Nested(func(h *netlink.AttributeDecoder) error {
					for h.Next() {
						if h.Type() == unix.ETHTOOL_A_HEADER_DEV_NAME {
							name = h.String()
						}
					}
					return nil
				})
			case unix.ETHTOOL_A_LINKMODES_AUTONEG:
				v := ad.Uint8() == autonegEnable
				e.AutoNegotiation = &v
			case unix.ETHTOOL_A_LINKMODES_SPEED:
				// SPEED_UNKNOWN (-1) and 0 (no link) are not reported.
				if v := ad.Uint32(); v != 0 && v != 0xffffffff {
					e.Speed = &v
				}
			case unix.ETHTOOL_A_LINKMODES_DUPLEX:
				switch ad.Uint8() {
				case duplexFull:
					d := nmstate.Duplex("full")
					e.Duplex = &d
				case duplexHalf:
					d := nmstate.Duplex("half")
					e.Duplex = &d
				}
			}
		}
		if name != "" && ad.Err() == nil {
			out[name] = e
		}
	}
	return out
}
