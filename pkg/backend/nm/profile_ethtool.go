package nm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// kernelFeatureToNM is nmstate's table of kernel feature names whose
// NetworkManager property is not feature-<kernel name>.
var kernelFeatureToNM = map[string]string{
	"rx-checksum":             "feature-rx",
	"tx-scatter-gather":       "feature-sg",
	"tx-tcp-segmentation":     "feature-tso",
	"rx-gro":                  "feature-gro",
	"tx-generic-segmentation": "feature-gso",
	"rx-hashing":              "feature-rxhash",
	"rx-lro":                  "feature-lro",
	"rx-ntuple-filter":        "feature-ntuple",
	"rx-vlan-hw-parse":        "feature-rxvlan",
	"tx-vlan-hw-insert":       "feature-txvlan",
}

// nmFeatures are the feature properties of NetworkManager 1.42's ethtool
// setting (nm-ethtool-utils: NM_ETHTOOL_OPTNAME_FEATURE_*); nmstate hands
// any other name to NetworkManager, which refuses it, so it is refused
// here first, naming the key.
var nmFeatures = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`esp-hw-offload esp-tx-csum-hw-offload fcoe-mtu gro gso highdma hw-tc-offload l2-fwd-offload loopback lro 
		macsec-hw-offload ntuple rx rx-all rx-fcs rx-gro-hw rx-gro-list rx-udp-gro-forwarding 
		rx-udp_tunnel-port-offload rx-vlan-filter rx-vlan-stag-filter rx-vlan-stag-hw-parse rxhash rxvlan sg 
		tls-hw-record tls-hw-rx-offload tls-hw-tx-offload tso tx tx-checksum-fcoe-crc tx-checksum-ip-generic 
		tx-checksum-ipv4 tx-checksum-ipv6 tx-checksum-sctp tx-esp-segmentation tx-fcoe-segmentation 
		tx-gre-csum-segmentation tx-gre-segmentation tx-gso-list tx-gso-partial tx-gso-robust tx-ipxip4-segmentation 
		tx-ipxip6-segmentation tx-nocache-copy tx-scatter-gather tx-scatter-gather-fraglist tx-sctp-segmentation 
		tx-tcp-ecn-segmentation tx-tcp-segmentation tx-tcp6-segmentation tx-udp-segmentation tx-udp_tnl-segmentation 
		tx-vlan-stag-hw-insert txvlan`) {
		nmFeatures["feature-"+f] = true
	}
}

// ethtoolSettings maps the ethtool section to NetworkManager's ethtool
// setting (applied by NetworkManager at activation, and restored when the
// profile goes down): features, ring sizes, coalescing, and pause (rx/tx
// only with autoneg off, as nmstate maps them).
func ethtoolSettings(s Settings, in ProfileInput) error {
	out := previousSection(in, "ethtool")
	var e *nmstate.Ethtool
	if in.Desired != nil {
		e = in.Desired.Ethtool
	}
	if e != nil {
		if p := e.Pause; p != nil {
			if p.Autoneg != nil {
				out["pause-autoneg"] = dbus.MakeVariant(*p.Autoneg)
				if !*p.Autoneg {
					setBool(out, "pause-rx", p.RX)
					setBool(out, "pause-tx", p.TX)
				}
			}
		}
		names := make([]string, 0, len(e.Feature))
		for k := range e.Feature {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			nk, ok := kernelFeatureToNM[k]
			if !ok {
				nk = "feature-" + k
			}
			if !nmFeatures[nk] {
				if in.Current != nil && in.Current.Ethtool != nil {
					if v, ok := in.Current.Ethtool.Feature[k]; ok && v == e.Feature[k] {
						// Nothing to change: a state read back
						// from this node (a rollback's revert, a
						// copied NNS) lists every feature the
						// kernel reports, NetworkManager's or
						// not.
						continue
					}
				}
				return &nmstate.Error{Kind: nmstate.NotSupported, Path: nmstate.Path("ethtool.feature." + k),
					Detail: fmt.Sprintf("NetworkManager has no ethtool property %s for this feature", nk)}
			}
			out[nk] = dbus.MakeVariant(e.Feature[k])
		}
		if c := e.Coalesce; c != nil {
			// NetworkManager's adaptive coalescing properties are
			// numbers (0/1), not booleans.
			for k, v := range map[string]*bool{"coalesce-adaptive-rx": c.AdaptiveRX, "coalesce-adaptive-tx": c.AdaptiveTX} {
				if v != nil {
					n := uint32(0)
					if *v {
						n = 1
					}
					out[k] = dbus.MakeVariant(n)
				}
			}
			for k, v := range map[string]*uint32{
				"coalesce-pkt-rate-high": c.PktRateHigh, "coalesce-pkt-rate-low": c.PktRateLow,
				"coalesce-rx-frames": c.RXFrames, "coalesce-rx-frames-high": c.RXFramesHigh,
				"coalesce-rx-frames-low": c.RXFramesLow, "coalesce-rx-frames-irq": c.RXFramesIRQ,
				"coalesce-tx-frames": c.TXFrames, "coalesce-tx-frames-high": c.TXFramesHigh,
				"coalesce-tx-frames-low": c.TXFramesLow, "coalesce-tx-frames-irq": c.TXFramesIRQ,
				"coalesce-rx-usecs": c.RXUsecs, "coalesce-rx-usecs-high": c.RXUsecsHigh,
				"coalesce-rx-usecs-low": c.RXUsecsLow, "coalesce-rx-usecs-irq": c.RXUsecsIRQ,
				"coalesce-tx-usecs": c.TXUsecs, "coalesce-tx-usecs-high": c.TXUsecsHigh,
				"coalesce-tx-usecs-low": c.TXUsecsLow, "coalesce-tx-usecs-irq": c.TXUsecsIRQ,
				"coalesce-sample-interval": c.RateSampleInterval, "coalesce-stats-block-usecs": c.StatsBlockUsecs,
			} {
				setUint(out, k, v)
			}
		}
		if r := e.Ring; r != nil {
			setUint(out, "ring-rx", r.RX)
			setUint(out, "ring-rx-jumbo", r.RXJumbo)
			setUint(out, "ring-rx-mini", r.RXMini)
			setUint(out, "ring-tx", r.TX)
		}
	}
	if len(out) > 0 {
		s["ethtool"] = out
	}
	return nil
}

func setBool(m map[string]dbus.Variant, k string, v *bool) {
	if v != nil {
		m[k] = dbus.MakeVariant(*v)
	}
}

func setUint(m map[string]dbus.Variant, k string, v *uint32) {
	if v != nil {
		m[k] = dbus.MakeVariant(*v)
	}
}
