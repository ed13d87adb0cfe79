package kernel

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// FIB rule actions (FR_ACT_*, include/uapi/linux/fib_rules.h).
const (
	frActToTbl       = 1
	frActBlackhole   = 6
	frActUnreachable = 7
	frActProhibit    = 8
)

var ruleActions = map[uint8]nmstate.RouteRuleAction{
	frActBlackhole:   "blackhole",
	frActUnreachable: "unreachable",
	frActProhibit:    "prohibit",
}

// dumpRules lists the policy rules of both families. The dump is raw
// because the library does not report a rule's action (the header's
// action byte) on read.
func (b *Backend) dumpRules() ([]netlink.Rule, error) {
	return dump("rules", func() ([]netlink.Rule, error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETRULE, unix.NLM_F_DUMP)
		req.AddData(nl.NewRtMsg())
		msgs, err := b.tablesRequest(req, unix.RTM_NEWRULE)
		out := make([]netlink.Rule, 0, len(msgs))
		for _, m := range msgs {
			r, perr := parseRuleMessage(m)
			if perr != nil {
				return nil, perr
			}
			out = append(out, r)
		}
		return out, err
	})
}

// parseRuleMessage decodes one RTM_NEWRULE payload (struct fib_rule_hdr
// has the layout of struct rtmsg, the action in the type byte).
func parseRuleMessage(m []byte) (netlink.Rule, error) {
	if len(m) < unix.SizeofRtMsg {
		return netlink.Rule{}, errors.New("short rule message")
	}
	hdr := nl.DeserializeRtMsg(m)
	r := *netlink.NewRule()
	r.Priority = 0
	r.Family = int(hdr.Family)
	r.Table = int(hdr.Table)
	r.Type = hdr.Type
	attrs, err := nl.ParseRouteAttr(m[unix.SizeofRtMsg:])
	if err != nil {
		return netlink.Rule{}, fmt.Errorf("decoding rule attributes: %w", err)
	}
	ne := nl.NativeEndian()
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.FRA_TABLE:
			r.Table = int(ne.Uint32(a.Value))
		case unix.FRA_PRIORITY:
			r.Priority = int(ne.Uint32(a.Value))
		case unix.FRA_SRC:
			r.Src = &net.IPNet{IP: a.Value, Mask: net.CIDRMask(int(hdr.Src_len), 8*len(a.Value))}
		case unix.FRA_DST:
			r.Dst = &net.IPNet{IP: a.Value, Mask: net.CIDRMask(int(hdr.Dst_len), 8*len(a.Value))}
		case unix.FRA_FWMARK:
			r.Mark = ne.Uint32(a.Value)
		case unix.FRA_FWMASK:
			r.Mask = ptr(ne.Uint32(a.Value))
		case unix.FRA_IIFNAME:
			r.IifName = cString(a.Value)
		case unix.FRA_OIFNAME:
			r.OifName = cString(a.Value)
		case unix.FRA_SUPPRESS_PREFIXLEN:
			if v := ne.Uint32(a.Value); v != 0xffffffff {
				r.SuppressPrefixlen = int(v)
			}
		case unix.FRA_PROTOCOL:
			r.Protocol = a.Value[0]
		}
	}
	return r, nil
}

// isDefaultRule recognises the rules every namespace starts with (lookup
// local at 0, main at 32766, default at 32767), which nmstate leaves out.
func isDefaultRule(r netlink.Rule) bool {
	if r.Src != nil || r.Dst != nil || r.Mark != 0 || r.IifName != "" || r.OifName != "" || r.Type != frActToTbl {
		return false
	}
	switch {
	case r.Priority == 0 && r.Table == unix.RT_TABLE_LOCAL,
		r.Priority == 32766 && r.Table == unix.RT_TABLE_MAIN,
		r.Priority == 32767 && r.Table == unix.RT_TABLE_DEFAULT:
		return true
	}
	return false
}

// ruleToRouteRule converts one kernel rule; ok is false for rules nmstate
// does not show (kernel defaults, actions other than table lookup and the
// three special ones).
func ruleToRouteRule(r netlink.Rule) (nmstate.RouteRule, bool) {
	if isDefaultRule(r) {
		return nmstate.RouteRule{}, false
	}
	out := nmstate.RouteRule{Priority: ptr(int64(r.Priority))}
	switch r.Family {
	case unix.AF_INET:
		out.Family = ptr(nmstate.Family("ipv4"))
	case unix.AF_INET6:
		out.Family = ptr(nmstate.Family("ipv6"))
	default:
		return nmstate.RouteRule{}, false
	}
	switch r.Type {
	case frActToTbl:
		out.RouteTable = ptr(uint32(r.Table))
	default:
		a, ok := ruleActions[r.Type]
		if !ok {
			return nmstate.RouteRule{}, false
		}
		out.Action = &a
	}
	if p, ok := ipNetPrefix(r.Src); ok {
		out.IPFrom = &p
	}
	if p, ok := ipNetPrefix(r.Dst); ok {
		out.IPTo = &p
	}
	if r.Mark != 0 {
		out.FWMark = ptr(nmstate.Hex32(r.Mark))
		if r.Mask != nil {
			out.FWMask = ptr(nmstate.Hex32(*r.Mask))
		}
	}
	if r.IifName != "" {
		out.IIF = ptr(r.IifName)
	}
	if r.SuppressPrefixlen >= 0 {
		out.SuppressPrefixLength = ptr(uint32(r.SuppressPrefixlen))
	}
	return out, true
}

func ipNetPrefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones).Masked(), true
}

func prefixIPNet(p netip.Prefix) *net.IPNet {
	a := p.Addr().Unmap()
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(p.Bits(), a.BitLen())}
}

// routeRuleToRule converts an nmstate rule for RuleAdd/RuleDel. Unset
// fields stay unset, so a deletion matches any value of them.
func routeRuleToRule(r nmstate.RouteRule) (*netlink.Rule, error) {
	out := netlink.NewRule()
	out.Family = unix.AF_INET
	if r.Family != nil && *r.Family == "ipv6" {
		out.Family = unix.AF_INET6
	}
	if r.IPFrom != nil && r.IPFrom.IsValid() {
		out.Src = prefixIPNet(*r.IPFrom)
		out.Family = familyOf(r.IPFrom.Addr())
	}
	if r.IPTo != nil && r.IPTo.IsValid() {
		out.Dst = prefixIPNet(*r.IPTo)
		out.Family = familyOf(r.IPTo.Addr())
	}
	if r.Priority != nil && *r.Priority >= 0 {
		out.Priority = int(*r.Priority)
	}
	if r.FWMark != nil {
		out.Mark = uint32(*r.FWMark)
	}
	if r.FWMask != nil {
		out.Mask = ptr(uint32(*r.FWMask))
	}
	if r.IIF != nil {
		out.IifName = *r.IIF
	}
	if r.SuppressPrefixLength != nil {
		out.SuppressPrefixlen = int(*r.SuppressPrefixLength)
	}
	if r.Action != nil {
		switch *r.Action {
		case "blackhole":
			out.Type = frActBlackhole
		case "unreachable":
			out.Type = frActUnreachable
		case "prohibit":
			out.Type = frActProhibit
		default:
			return nil, errors.New("unknown rule action " + string(*r.Action))
		}
	} else {
		out.Type = frActToTbl
		out.Table = unix.RT_TABLE_MAIN
		if r.RouteTable != nil && *r.RouteTable != 0 {
			out.Table = int(*r.RouteTable)
		}
	}
	return out, nil
}

func familyOf(a netip.Addr) int {
	if a.Unmap().Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}
