package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// ethtool settings (features, rings, coalescing, pause) over the kernel's
// ethtool generic netlink family (Linux 5.6+). github.com/mdlayher/ethtool
// covers link modes, FEC, WoL and private flags but none of these four,
// and dials only in the caller's own namespace; this is the small part
// nmstate needs, on a genetlink socket opened in the Backend's namespace.
//
// Show reads each of the four with one dump over every device; a device
// whose driver lacks an operation is simply absent from that dump (veths
// have features but no rings, coalescing or pause; netdevsim has all).

// ethtoolHeader is the request header attribute, 1 in every ethtool
// message (ETHTOOL_A_FEATURES_HEADER, ETHTOOL_A_RINGS_HEADER, ...).
const ethtoolHeader = 1

// ethtoolConn is the Backend's lazily dialled ethtool socket.
type ethtoolConn struct {
	once   sync.Once
	c      *genetlink.Conn
	family uint16
	err    error
}

// ethtool returns the namespace's ethtool socket, dialled on first use.
func (b *Backend) ethtool() (*genetlink.Conn, uint16, error) {
	e := &b.eth
	e.once.Do(func() {
		c, err := genetlink.Dial(&netlink.Config{NetNS: int(b.ns)})
		if err != nil {
			e.err = fmt.Errorf("generic netlink socket: %w", err)
			return
		}
		f, err := c.GetFamily(unix.ETHTOOL_GENL_NAME)
		if err != nil {
			c.Close()
			if errors.Is(err, unix.ENOENT) {
				e.err = notSupported("the kernel has no ethtool netlink interface (Linux 5.6+)")
			} else {
				e.err = fmt.Errorf("looking up the ethtool netlink family: %w", err)
			}
			return
		}
		e.c, e.family = c, f.ID
	})
	return e.c, e.family, e.err
}

func (e *ethtoolConn) close() {
	if e.c != nil {
		e.c.Close()
	}
}

// ethtoolRequest sends one ethtool command about device index (0: none)
// and returns the replies' attribute data; dump asks for every device.
func (b *Backend) ethtoolRequest(cmd uint8, index int, dump bool, attrs func(*netlink.AttributeEncoder), flags uint32) ([][]byte, error) {
	c, family, err := b.ethtool()
	if err != nil {
		return nil, err
	}
	ae := netlink.NewAttributeEncoder()
	ae.Nested(ethtoolHeader, func(h *netlink.AttributeEncoder) error {
		if index != 0 {
			h.Uint32(unix.ETHTOOL_A_HEADER_DEV_INDEX, uint32(index))
		}
		if flags != 0 {
			h.Uint32(unix.ETHTOOL_A_HEADER_FLAGS, flags)
		}
		return nil
	})
	if attrs != nil {
		attrs(ae)
	}
	data, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	// One answer per request, or Execute leaves the second in the socket
	// for the next request: a dump ends with its done message, a get
	// with its reply, a set (replies omitted) with its ACK.
	hf := netlink.Request
	switch {
	case dump:
		hf |= netlink.Dump
	case flags&unix.ETHTOOL_FLAG_OMIT_REPLY != 0:
		hf |= netlink.Acknowledge
	}
	msgs, err := c.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: unix.ETHTOOL_GENL_VERSION},
		Data:   data,
	}, family, hf)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Data)
	}
	return out, nil
}

// ethtoolInfo is what Show reports of one device.
type ethtoolInfo struct {
	features map[string]bool
	// fixed are the features the device cannot change.
	fixed    map[string]bool
	ring     *nmstate.EthtoolRing
	coalesce *nmstate.EthtoolCoalesce
	pause    *nmstate.EthtoolPause
}

// section is the ethtool section nmstate reports: changeable features
// only (as upstream), the rest when the driver has them; nil when empty.
func (i *ethtoolInfo) section() *nmstate.Ethtool {
	if i == nil {
		return nil
	}
	out := &nmstate.Ethtool{Ring: i.ring, Coalesce: i.coalesce, Pause: i.pause}
	if len(i.features) > 0 {
		out.Feature = i.features
	}
	if out.Feature == nil && out.Ring == nil && out.Coalesce == nil && out.Pause == nil {
		return nil
	}
	return out
}

// dumpEthtool reads features, rings, coalescing and pause of every device,
// by ifindex. A kernel without ethtool netlink gives an empty map: those
// kernels predate everything else the backend needs anyway, and show must
// not fail for a section it cannot read.
func (b *Backend) dumpEthtool() (map[int]*ethtoolInfo, error) {
	out := map[int]*ethtoolInfo{}
	get := func(index int) *ethtoolInfo {
		if out[index] == nil {
			out[index] = &ethtoolInfo{}
		}
		return out[index]
	}
	names, err := b.featureNames()
	var ke *kernelError
	if errors.As(err, &ke) && ke.kind == nmstate.NotSupported {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	dumps := []struct {
		cmd   uint8
		what  string
		flags uint32
		parse func(*ethtoolInfo, *netlink.AttributeDecoder)
	}{
		// Compact bitsets: verbose ones (names in every reply) overflow
		// the kernel's dump buffer of a page.
		{unix.ETHTOOL_MSG_FEATURES_GET, "features", unix.ETHTOOL_FLAG_COMPACT_BITSETS,
			func(i *ethtoolInfo, ad *netlink.AttributeDecoder) { parseFeatures(i, ad, names) }},
		{unix.ETHTOOL_MSG_RINGS_GET, "rings", 0, parseRings},
		{unix.ETHTOOL_MSG_COALESCE_GET, "coalescing", 0, parseCoalesce},
		{unix.ETHTOOL_MSG_PAUSE_GET, "pause", 0, parsePause},
	}
	for _, d := range dumps {
		msgs, err := b.ethtoolRequest(d.cmd, 0, true, nil, d.flags)
		if err != nil {
			return nil, fmt.Errorf("ethtool %s dump: %w", d.what, classify(err))
		}
		for _, m := range msgs {
			index, err := ethtoolIndex(m)
			if err != nil {
				return nil, err
			}
			ad, err := netlink.NewAttributeDecoder(m)
			if err != nil {
				return nil, err
			}
			d.parse(get(index), ad)
			if err := ad.Err(); err != nil {
				return nil, fmt.Errorf("ethtool %s of device %d: %w", d.what, index, err)
			}
		}
	}
	return out, nil
}

// ethtoolIndex reads the device index from a reply's header (attribute 1
// in every ethtool message).
func ethtoolIndex(m []byte) (int, error) {
	ad, err := netlink.NewAttributeDecoder(m)
	if err != nil {
		return 0, err
	}
	index := 0
	for ad.Next() {
		if ad.Type() == ethtoolHeader {
			ad.Nested(func(h *netlink.AttributeDecoder) error {
				for h.Next() {
					if h.Type() == unix.ETHTOOL_A_HEADER_DEV_INDEX {
						index = int(h.Uint32())
					}
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return 0, err
	}
	if index == 0 {
		return 0, errors.New("ethtool reply without a device index")
	}
	return index, nil
}

// ethSSFeatures is ETH_SS_FEATURES, the string set naming feature bits.
const ethSSFeatures = 4

// featureNames reads the names of the feature bits (the same for every
// device: the kernel's netdev_features_strings).
func (b *Backend) featureNames() ([]string, error) {
	msgs, err := b.ethtoolRequest(unix.ETHTOOL_MSG_STRSET_GET, 0, false, func(ae *netlink.AttributeEncoder) {
		ae.Nested(unix.ETHTOOL_A_STRSET_STRINGSETS, func(sets *netlink.AttributeEncoder) error {
			sets.Nested(unix.ETHTOOL_A_STRINGSETS_STRINGSET, func(set *netlink.AttributeEncoder) error {
				set.Uint32(unix.ETHTOOL_A_STRINGSET_ID, ethSSFeatures)
				return nil
			})
			return nil
		})
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the ethtool feature names: %w", classify(err))
	}
	var names []string
	for _, m := range msgs {
		ad, err := netlink.NewAttributeDecoder(m)
		if err != nil {
			return nil, err
		}
		for ad.Next() {
			if ad.Type() != unix.ETHTOOL_A_STRSET_STRINGSETS {
				continue
			}
			ad.Nested(func(sets *netlink.AttributeDecoder) error {
				for sets.Next() {
					sets.Nested(func(set *netlink.AttributeDecoder) error {
						for set.Next() {
							if set.Type() != unix.ETHTOOL_A_STRINGSET_STRINGS {
								continue
							}
							set.Nested(func(strs *netlink.AttributeDecoder) error {
								for strs.Next() {
									idx, val := -1, ""
									strs.Nested(func(str *netlink.AttributeDecoder) error {
										for str.Next() {
											switch str.Type() {
											case unix.ETHTOOL_A_STRING_INDEX:
												idx = int(str.Uint32())
											case unix.ETHTOOL_A_STRING_VALUE:
												val = str.String()
											}
										}
										return nil
									})
									if idx >= 0 && idx < 1024 {
										for len(names) <= idx {
											names = append(names, "")
										}
										names[idx] = val
									}
								}
								return nil
							})
						}
						return nil
					})
				}
				return nil
			})
		}
		if err := ad.Err(); err != nil {
			return nil, fmt.Errorf("ethtool feature names: %w", err)
		}
	}
	return names, nil
}

// bitNames reads a compact bitset (ETHTOOL_A_BITSET_VALUE, u32 words in
// host order) into the names of its set bits.
func bitNames(ad *netlink.AttributeDecoder, names []string) map[string]bool {
	out := map[string]bool{}
	ad.Nested(func(bs *netlink.AttributeDecoder) error {
		for bs.Next() {
			if bs.Type() != unix.ETHTOOL_A_BITSET_VALUE {
				continue
			}
			words := bs.Bytes()
			for w := 0; w+4 <= len(words); w += 4 {
				v := binary.NativeEndian.Uint32(words[w:])
				for bit := range 32 {
					if v&(1<<bit) == 0 {
						continue
					}
					if i := w*8 + bit; i < len(names) && names[i] != "" {
						out[names[i]] = true
					}
				}
			}
		}
		return nil
	})
	return out
}

// parseFeatures keeps the changeable features (hw minus nochange) with
// their active value; the fixed ones are remembered to judge a request.
func parseFeatures(i *ethtoolInfo, ad *netlink.AttributeDecoder, names []string) {
	var hw, active, nochange map[string]bool
	for ad.Next() {
		switch ad.Type() {
		case unix.ETHTOOL_A_FEATURES_HW:
			hw = bitNames(ad, names)
		case unix.ETHTOOL_A_FEATURES_ACTIVE:
			active = bitNames(ad, names)
		case unix.ETHTOOL_A_FEATURES_NOCHANGE:
			nochange = bitNames(ad, names)
		}
	}
	i.features, i.fixed = map[string]bool{}, map[string]bool{}
	for name := range hw {
		if !nochange[name] {
			i.features[name] = active[name]
		}
	}
	for name := range active {
		if !hw[name] || nochange[name] {
			i.fixed[name] = true
		}
	}
}

func parseRings(i *ethtoolInfo, ad *netlink.AttributeDecoder) {
	r := &nmstate.EthtoolRing{}
	fields := map[uint16]**uint32{
		unix.ETHTOOL_A_RINGS_RX_MAX: &r.RXMax, unix.ETHTOOL_A_RINGS_RX_MINI_MAX: &r.RXMiniMax,
		unix.ETHTOOL_A_RINGS_RX_JUMBO_MAX: &r.RXJumboMax, unix.ETHTOOL_A_RINGS_TX_MAX: &r.TXMax,
		unix.ETHTOOL_A_RINGS_RX: &r.RX, unix.ETHTOOL_A_RINGS_RX_MINI: &r.RXMini,
		unix.ETHTOOL_A_RINGS_RX_JUMBO: &r.RXJumbo, unix.ETHTOOL_A_RINGS_TX: &r.TX,
	}
	for ad.Next() {
		if f, ok := fields[ad.Type()]; ok {
			*f = ptr(ad.Uint32())
		}
	}
	// A size whose maximum is 0 is a ring the device does not have.
	for _, p := range [][2]**uint32{{&r.RX, &r.RXMax}, {&r.RXMini, &r.RXMiniMax}, {&r.RXJumbo, &r.RXJumboMax}, {&r.TX, &r.TXMax}} {
		if *p[1] != nil && **p[1] == 0 {
			*p[0], *p[1] = nil, nil
		}
	}
	i.ring = r
}

// coalesceField is one u32 coalescing attribute and its nmstate key.
type coalesceField struct {
	key string
	p   **uint32
}

// coalesceFields maps the u32 coalescing attributes to c's fields.
func coalesceFields(c *nmstate.EthtoolCoalesce) map[uint16]coalesceField {
	return map[uint16]coalesceField{
		unix.ETHTOOL_A_COALESCE_RX_USECS:             {"rx-usecs", &c.RXUsecs},
		unix.ETHTOOL_A_COALESCE_RX_MAX_FRAMES:        {"rx-frames", &c.RXFrames},
		unix.ETHTOOL_A_COALESCE_RX_USECS_IRQ:         {"rx-usecs-irq", &c.RXUsecsIRQ},
		unix.ETHTOOL_A_COALESCE_RX_MAX_FRAMES_IRQ:    {"rx-frames-irq", &c.RXFramesIRQ},
		unix.ETHTOOL_A_COALESCE_TX_USECS:             {"tx-usecs", &c.TXUsecs},
		unix.ETHTOOL_A_COALESCE_TX_MAX_FRAMES:        {"tx-frames", &c.TXFrames},
		unix.ETHTOOL_A_COALESCE_TX_USECS_IRQ:         {"tx-usecs-irq", &c.TXUsecsIRQ},
		unix.ETHTOOL_A_COALESCE_TX_MAX_FRAMES_IRQ:    {"tx-frames-irq", &c.TXFramesIRQ},
		unix.ETHTOOL_A_COALESCE_STATS_BLOCK_USECS:    {"stats-block-usecs", &c.StatsBlockUsecs},
		unix.ETHTOOL_A_COALESCE_PKT_RATE_LOW:         {"pkt-rate-low", &c.PktRateLow},
		unix.ETHTOOL_A_COALESCE_PKT_RATE_HIGH:        {"pkt-rate-high", &c.PktRateHigh},
		unix.ETHTOOL_A_COALESCE_RX_USECS_LOW:         {"rx-usecs-low", &c.RXUsecsLow},
		unix.ETHTOOL_A_COALESCE_RX_MAX_FRAMES_LOW:    {"rx-frames-low", &c.RXFramesLow},
		unix.ETHTOOL_A_COALESCE_TX_USECS_LOW:         {"tx-usecs-low", &c.TXUsecsLow},
		unix.ETHTOOL_A_COALESCE_TX_MAX_FRAMES_LOW:    {"tx-frames-low", &c.TXFramesLow},
		unix.ETHTOOL_A_COALESCE_RX_USECS_HIGH:        {"rx-usecs-high", &c.RXUsecsHigh},
		unix.ETHTOOL_A_COALESCE_RX_MAX_FRAMES_HIGH:   {"rx-frames-high", &c.RXFramesHigh},
		unix.ETHTOOL_A_COALESCE_TX_USECS_HIGH:        {"tx-usecs-high", &c.TXUsecsHigh},
		unix.ETHTOOL_A_COALESCE_TX_MAX_FRAMES_HIGH:   {"tx-frames-high", &c.TXFramesHigh},
		unix.ETHTOOL_A_COALESCE_RATE_SAMPLE_INTERVAL: {"rate-sample-interval", &c.RateSampleInterval},
	}
}

// parseCoalesce: the kernel sends only the parameters the driver supports.
func parseCoalesce(i *ethtoolInfo, ad *netlink.AttributeDecoder) {
	c := &nmstate.EthtoolCoalesce{}
	fields := coalesceFields(c)
	for ad.Next() {
		switch t := ad.Type(); t {
		case unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX:
			c.AdaptiveRX = ptr(ad.Uint8() != 0)
		case unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX:
			c.AdaptiveTX = ptr(ad.Uint8() != 0)
		default:
			if f, ok := fields[t]; ok {
				*f.p = ptr(ad.Uint32())
			}
		}
	}
	i.coalesce = c
}

func parsePause(i *ethtoolInfo, ad *netlink.AttributeDecoder) {
	p := &nmstate.EthtoolPause{}
	for ad.Next() {
		switch ad.Type() {
		case unix.ETHTOOL_A_PAUSE_AUTONEG:
			p.Autoneg = ptr(ad.Uint8() != 0)
		case unix.ETHTOOL_A_PAUSE_RX:
			p.RX = ptr(ad.Uint8() != 0)
		case unix.ETHTOOL_A_PAUSE_TX:
			p.TX = ptr(ad.Uint8() != 0)
		}
	}
	i.pause = p
}

// setEthtool applies an ethtool section to link index: features first,
// then rings, coalescing and pause, each one request with only the keys
// given. Asking for something the device lacks fails with NotSupported
// before anything is sent.
func (b *Backend) setEthtool(name string, index int, e *nmstate.Ethtool) error {
	all, err := b.dumpEthtool()
	if err != nil {
		return err
	}
	cur := all[index]
	if cur == nil {
		cur = &ethtoolInfo{}
	}
	if len(e.Feature) > 0 {
		if err := b.setFeatures(name, index, cur, e.Feature); err != nil {
			return err
		}
	}
	if r := e.Ring; r != nil {
		if cur.ring == nil {
			return notSupported("%s: the device has no ring parameters (ethtool.ring)", name)
		}
		var set [][2]any
		for _, f := range []struct {
			attr     uint16
			want     *uint32
			have     *uint32
			key, max string
		}{
			{unix.ETHTOOL_A_RINGS_RX, r.RX, cur.ring.RX, "rx", "rx-max"},
			{unix.ETHTOOL_A_RINGS_RX_MINI, r.RXMini, cur.ring.RXMini, "rx-mini", "rx-mini-max"},
			{unix.ETHTOOL_A_RINGS_RX_JUMBO, r.RXJumbo, cur.ring.RXJumbo, "rx-jumbo", "rx-jumbo-max"},
			{unix.ETHTOOL_A_RINGS_TX, r.TX, cur.ring.TX, "tx", "tx-max"},
		} {
			if f.want == nil {
				continue
			}
			if f.have == nil {
				return notSupported("%s: the device has no %s ring (ethtool.ring.%s)", name, f.key, f.key)
			}
			set = append(set, [2]any{f.attr, *f.want})
		}
		if err := b.ethtoolSet(name, "ring", unix.ETHTOOL_MSG_RINGS_SET, index, set); err != nil {
			return err
		}
	}
	if c := e.Coalesce; c != nil {
		if cur.coalesce == nil {
			return notSupported("%s: the device has no interrupt coalescing (ethtool.coalesce)", name)
		}
		var set [][2]any
		have := coalesceFields(cur.coalesce)
		for attr, f := range coalesceFields(c) {
			if *f.p == nil {
				continue
			}
			if *have[attr].p == nil {
				return notSupported("%s: the device does not support ethtool.coalesce.%s", name, f.key)
			}
			set = append(set, [2]any{attr, **f.p})
		}
		for _, f := range []struct {
			attr       uint16
			want, have *bool
			key        string
		}{
			{unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, c.AdaptiveRX, cur.coalesce.AdaptiveRX, "adaptive-rx"},
			{unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX, c.AdaptiveTX, cur.coalesce.AdaptiveTX, "adaptive-tx"},
		} {
			if f.want == nil {
				continue
			}
			if f.have == nil {
				return notSupported("%s: the device does not support ethtool.coalesce.%s", name, f.key)
			}
			set = append(set, [2]any{f.attr, boolU8(*f.want)})
		}
		sort.Slice(set, func(i, j int) bool { return set[i][0].(uint16) < set[j][0].(uint16) })
		if err := b.ethtoolSet(name, "coalesce", unix.ETHTOOL_MSG_COALESCE_SET, index, set); err != nil {
			return err
		}
	}
	if p := e.Pause; p != nil {
		if cur.pause == nil {
			return notSupported("%s: the device has no pause frame settings (ethtool.pause)", name)
		}
		var set [][2]any
		for _, f := range []struct {
			attr uint16
			want *bool
		}{{unix.ETHTOOL_A_PAUSE_AUTONEG, p.Autoneg}, {unix.ETHTOOL_A_PAUSE_RX, p.RX}, {unix.ETHTOOL_A_PAUSE_TX, p.TX}} {
			if f.want != nil {
				set = append(set, [2]any{f.attr, boolU8(*f.want)})
			}
		}
		if err := b.ethtoolSet(name, "pause", unix.ETHTOOL_MSG_PAUSE_SET, index, set); err != nil {
			return err
		}
	}
	return nil
}

func boolU8(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

// ethtoolSet sends one *_SET request of u32/u8 attributes.
func (b *Backend) ethtoolSet(name, what string, cmd uint8, index int, set [][2]any) error {
	if len(set) == 0 {
		return nil
	}
	_, err := b.ethtoolRequest(cmd, index, false, func(ae *netlink.AttributeEncoder) {
		for _, s := range set {
			switch v := s[1].(type) {
			case uint32:
				ae.Uint32(s[0].(uint16), v)
			case uint8:
				ae.Uint8(s[0].(uint16), v)
			}
		}
	}, unix.ETHTOOL_FLAG_OMIT_REPLY)
	if err != nil {
		return fmt.Errorf("setting ethtool %s of %s: %w", what, name, classify(err))
	}
	return nil
}

// setFeatures sends the wanted features as a verbose bitset with a mask
// (the listed bits); a fixed feature already at its value is left out,
// and one the device does not have, or cannot change, is an error.
func (b *Backend) setFeatures(name string, index int, cur *ethtoolInfo, want map[string]bool) error {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	var send []string
	for _, n := range names {
		v, changeable := cur.features[n]
		switch {
		case changeable && v == want[n]:
		case changeable:
			send = append(send, n)
		case cur.fixed[n] == want[n]:
			// Fixed (or absent, when false) and already as wanted.
		case cur.fixed[n]:
			return &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("%s: ethtool feature %s is fixed on by the device", name, n)}
		default:
			return &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("%s: ethtool feature %s is not a changeable feature of the device", name, n)}
		}
	}
	if len(send) == 0 {
		return nil
	}
	_, err := b.ethtoolRequest(unix.ETHTOOL_MSG_FEATURES_SET, index, false, func(ae *netlink.AttributeEncoder) {
		ae.Nested(unix.ETHTOOL_A_FEATURES_WANTED, func(bs *netlink.AttributeEncoder) error {
			bs.Nested(unix.ETHTOOL_A_BITSET_BITS, func(bits *netlink.AttributeEncoder) error {
				for _, n := range send {
					bits.Nested(unix.ETHTOOL_A_BITSET_BITS_BIT, func(bit *netlink.AttributeEncoder) error {
						bit.String(unix.ETHTOOL_A_BITSET_BIT_NAME, n)
						bit.Flag(unix.ETHTOOL_A_BITSET_BIT_VALUE, want[n])
						return nil
					})
				}
				return nil
			})
			return nil
		})
	}, unix.ETHTOOL_FLAG_OMIT_REPLY)
	if err != nil {
		return fmt.Errorf("setting ethtool features %v of %s: %w", send, name, classify(err))
	}
	return nil
}
