package kernel

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Kernel numbering of the bonding enumerations (include/net/bonding.h and
// friends); the index is the kernel value.
var (
	bondModes          = []nmstate.BondMode{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}
	bondADSelects      = []nmstate.BondADSelect{"stable", "bandwidth", "count"}
	bondAllSlaves      = []nmstate.BondAllSlaves{"dropped", "delivered"}
	bondARPAll         = []nmstate.BondARPAll{"any", "all"}
	bondARPValidates   = []nmstate.BondARPValidate{"none", "active", "backup", "all", "filter", "filter_active", "filter_backup"}
	bondFailOverMACs   = []nmstate.BondFailOverMAC{"none", "active", "follow"}
	bondLACPRates      = []nmstate.BondLACPRate{"slow", "fast"}
	bondPrimaryResels  = []nmstate.BondPrimaryResel{"always", "better", "failure"}
	bondXmitHashPolicy = []nmstate.BondXmitHash{"layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4", "vlan+srcmac"}
)

// enumAt returns &values[i] when i is a known kernel value.
func enumAt[T any](values []T, i *uint8) *T {
	if i == nil || int(*i) >= len(values) {
		return nil
	}
	return ptr(values[*i])
}

func enumAt32[T any](values []T, i *uint32) *T {
	if i == nil || int(*i) >= len(values) {
		return nil
	}
	return ptr(values[*i])
}

// bondSection converts a bond's IFLA_BOND_* attributes and its ports. Only
// the options the kernel applies in the bond's mode are reported.
func bondSection(kl *kernelLink, v *linkView) *nmstate.Bond {
	d := kl.data
	mode := enumAt(bondModes, attrU8(d, unix.IFLA_BOND_MODE))
	o := &nmstate.BondOptions{
		ARPAllTargets:   enumAt32(bondARPAll, attrU32(d, unix.IFLA_BOND_ARP_ALL_TARGETS)),
		ARPInterval:     attrU32(d, unix.IFLA_BOND_ARP_INTERVAL),
		ARPValidate:     enumAt32(bondARPValidates, attrU32(d, unix.IFLA_BOND_ARP_VALIDATE)),
		ARPMissedMax:    attrU8(d, unix.IFLA_BOND_MISSED_MAX),
		AllSlavesActive: enumAt(bondAllSlaves, attrU8(d, unix.IFLA_BOND_ALL_SLAVES_ACTIVE)),
		DownDelay:       attrU32(d, unix.IFLA_BOND_DOWNDELAY),
		FailOverMAC:     enumAt(bondFailOverMACs, attrU8(d, unix.IFLA_BOND_FAIL_OVER_MAC)),
		LPInterval:      attrU32(d, unix.IFLA_BOND_LP_INTERVAL),
		MIIMon:          attrU32(d, unix.IFLA_BOND_MIIMON),
		MinLinks:        attrU32(d, unix.IFLA_BOND_MIN_LINKS),
		NumGratARP:      attrU8(d, unix.IFLA_BOND_NUM_PEER_NOTIF),
		NumUnsolNA:      attrU8(d, unix.IFLA_BOND_NUM_PEER_NOTIF),
		PrimaryReselect: enumAt(bondPrimaryResels, attrU8(d, unix.IFLA_BOND_PRIMARY_RESELECT)),
		ResendIGMP:      attrU32(d, unix.IFLA_BOND_RESEND_IGMP),
		UpDelay:         attrU32(d, unix.IFLA_BOND_UPDELAY),
		UseCarrier:      attrBool(d, unix.IFLA_BOND_USE_CARRIER),
	}
	var targets []string
	if raw, ok := d[unix.IFLA_BOND_ARP_IP_TARGET]; ok {
		if attrs, err := nl.ParseRouteAttr(raw); err == nil {
			for _, a := range attrs {
				if ip, ok := netip.AddrFromSlice(a.Value); ok {
					targets = append(targets, ip.Unmap().String())
				}
			}
		}
	}
	o.ARPIPTarget = ptr(strings.Join(targets, ","))
	if mode != nil {
		switch *mode {
		case "802.3ad":
			o.ADActorSysPrio = attrU16(d, unix.IFLA_BOND_AD_ACTOR_SYS_PRIO)
			o.ADUserPortKey = attrU16(d, unix.IFLA_BOND_AD_USER_PORT_KEY)
			o.ADSelect = enumAt(bondADSelects, attrU8(d, unix.IFLA_BOND_AD_SELECT))
			o.LACPRate = enumAt(bondLACPRates, attrU8(d, unix.IFLA_BOND_AD_LACP_RATE))
			if m, ok := d[unix.IFLA_BOND_AD_ACTOR_SYSTEM]; ok && len(m) == 6 {
				o.ADActorSystem = ptr(macText(net.HardwareAddr(m)))
			}
		case "balance-rr":
			o.PacketsPerSlave = attrU32(d, unix.IFLA_BOND_PACKETS_PER_SLAVE)
		case "balance-tlb":
			o.TLBDynamicLB = attrBool(d, unix.IFLA_BOND_TLB_DYNAMIC_LB)
		}
		switch *mode {
		case "balance-xor", "802.3ad", "balance-tlb":
			o.XmitHashPolicy = enumAt(bondXmitHashPolicy, attrU8(d, unix.IFLA_BOND_XMIT_HASH_POLICY))
		}
		switch *mode {
		case "active-backup", "balance-tlb", "balance-alb":
			if p := attrU32(d, unix.IFLA_BOND_PRIMARY); p != nil {
				if name := v.name(int(*p)); name != "" {
					o.Primary = ptr(name)
				}
			}
		}
	}
	return &nmstate.Bond{Mode: mode, Options: o, Port: v.portNames(kl.attrs().Index), PortsConfig: bondPortsConfig(kl, v)}
}

// Per-port bonding attributes (IFLA_BOND_SLAVE_*): queue_id exists since
// Linux 3.x, prio since 6.0 (Debian 12 has 6.1); a kernel without prio
// reports no priority.
const (
	bondSlaveQueueID = unix.IFLA_BOND_SLAVE_QUEUE_ID
	bondSlavePrio    = unix.IFLA_BOND_SLAVE_PRIO
)

// bondPortsConfig reports every port's queue-id and priority from its
// IFLA_INFO_SLAVE_DATA, in the order of the port list (by name); nil for
// a bond without ports.
func bondPortsConfig(kl *kernelLink, v *linkView) []nmstate.BondPortConfig {
	var out []nmstate.BondPortConfig
	for _, p := range v.ports[kl.attrs().Index] {
		pc := nmstate.BondPortConfig{Name: p.attrs().Name}
		if p.slaveKind == "bond" {
			pc.QueueID = attrU16(p.slaveData, bondSlaveQueueID)
			if prio := attrU32(p.slaveData, bondSlavePrio); prio != nil {
				pc.Priority = ptr(int32(*prio))
			}
		}
		out = append(out, pc)
	}
	return out
}

// pendingPortConfig is a bond port's ports-config entry waiting for the
// port to be attached to the bond (the kernel keeps it per port only while
// the port is enslaved).
type pendingPortConfig struct {
	bond string
	pc   nmstate.BondPortConfig
}

// setBondPortsConfig sets the queue-id and priority of the bond's ports
// that are attached now and keeps the others' for linkSetController.
func (ex *executor) setBondPortsConfig(bond netlink.Link, pcs []nmstate.BondPortConfig) error {
	for _, pc := range pcs {
		if pc.QueueID == nil && pc.Priority == nil {
			continue
		}
		port, ok, err := ex.links.lookup(pc.Name)
		if err != nil {
			return err
		}
		if ok {
			if port, err = ex.links.freshLink(pc.Name); err != nil {
				return err
			}
		}
		if !ok || port.Attrs().MasterIndex != bond.Attrs().Index {
			if ex.bondPorts == nil {
				ex.bondPorts = map[string]pendingPortConfig{}
			}
			ex.bondPorts[pc.Name] = pendingPortConfig{bond: bond.Attrs().Name, pc: pc}
			continue
		}
		if err := ex.b.setBondPortConfig(port, pc); err != nil {
			return err
		}
	}
	return nil
}

// attachedToBond applies the ports-config entry kept for name, if it was
// kept for this controller.
func (ex *executor) attachedToBond(name, controller string, port netlink.Link) error {
	p, ok := ex.bondPorts[name]
	if !ok || p.bond != controller {
		return nil
	}
	delete(ex.bondPorts, name)
	return ex.b.setBondPortConfig(port, p.pc)
}

// setBondPortConfig sends IFLA_INFO_SLAVE_DATA to a port (`ip link set
// PORT type bond_slave queue_id N prio P`).
func (b *Backend) setBondPortConfig(port netlink.Link, pc nmstate.BondPortConfig) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(port.Attrs().Index)
	req.AddData(msg)
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_SLAVE_KIND, nl.NonZeroTerminated("bond"))
	d := info.AddRtAttr(nl.IFLA_INFO_SLAVE_DATA, nil)
	if pc.QueueID != nil {
		d.AddRtAttr(bondSlaveQueueID, nl.Uint16Attr(*pc.QueueID))
	}
	if pc.Priority != nil {
		d.AddRtAttr(bondSlavePrio, nl.Uint32Attr(uint32(*pc.Priority)))
	}
	req.AddData(info)
	if _, err := b.rawRequest(req, 0); err != nil {
		return fmt.Errorf("%s: setting bond port queue-id/priority: %w", pc.Name, classify(err))
	}
	return nil
}

// setBondOptions applies mode and options through IFLA_BOND_* attributes
// (the kernel's own numbering, the reverse of bondSection).
func (ex *executor) setBondOptions(l netlink.Link, bond *nmstate.Bond) error {
	var attrs []*nl.RtAttr
	// The kernel refuses a mode write (even of the same mode) while the
	// bond has ports, so only a change is sent.
	cur, _ := l.(*netlink.Bond)
	if bond.Mode != nil && (cur == nil || cur.Mode.String() != string(*bond.Mode)) {
		if i := indexOf(bondModes, *bond.Mode); i >= 0 {
			attrs = append(attrs, nl.NewRtAttr(unix.IFLA_BOND_MODE, []byte{byte(i)}))
		}
	}
	if o := bond.Options; o != nil {
		more, err := ex.bondOptionAttrs(o)
		if err != nil {
			return err
		}
		attrs = append(attrs, more...)
	}
	if err := ex.b.changeLink(l, "bond", attrs); err != nil {
		return err
	}
	return ex.setBondPortsConfig(l, bond.PortsConfig)
}

func (ex *executor) bondOptionAttrs(o *nmstate.BondOptions) ([]*nl.RtAttr, error) {
	var out []*nl.RtAttr
	u8 := func(t int, v *uint8) {
		if v != nil {
			out = append(out, nl.NewRtAttr(t, []byte{*v}))
		}
	}
	u16 := func(t int, v *uint16) {
		if v != nil {
			out = append(out, nl.NewRtAttr(t, nl.Uint16Attr(*v)))
		}
	}
	u32 := func(t int, v *uint32) {
		if v != nil {
			out = append(out, nl.NewRtAttr(t, nl.Uint32Attr(*v)))
		}
	}
	flag := func(t int, v *bool) {
		if v != nil {
			out = append(out, nl.NewRtAttr(t, boolAttr(*v)))
		}
	}
	enum8 := func(t, i int) {
		if i >= 0 {
			out = append(out, nl.NewRtAttr(t, []byte{byte(i)}))
		}
	}
	enum32 := func(t, i int) {
		if i >= 0 {
			out = append(out, nl.NewRtAttr(t, nl.Uint32Attr(uint32(i))))
		}
	}
	u32(unix.IFLA_BOND_MIIMON, o.MIIMon)
	u32(unix.IFLA_BOND_UPDELAY, o.UpDelay)
	u32(unix.IFLA_BOND_DOWNDELAY, o.DownDelay)
	flag(unix.IFLA_BOND_USE_CARRIER, o.UseCarrier)
	u32(unix.IFLA_BOND_ARP_INTERVAL, o.ARPInterval)
	if o.ARPIPTarget != nil {
		targets := nl.NewRtAttr(unix.IFLA_BOND_ARP_IP_TARGET, nil)
		n := 0
		for _, s := range strings.Split(*o.ARPIPTarget, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			ip, err := netip.ParseAddr(s)
			if err != nil || !ip.Is4() {
				return nil, &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("arp_ip_target %q is not an IPv4 address", s)}
			}
			targets.AddRtAttr(n, ip.AsSlice())
			n++
		}
		out = append(out, targets)
	}
	if o.ARPValidate != nil {
		enum32(unix.IFLA_BOND_ARP_VALIDATE, indexOf(bondARPValidates, *o.ARPValidate))
	}
	if o.ARPAllTargets != nil {
		enum32(unix.IFLA_BOND_ARP_ALL_TARGETS, indexOf(bondARPAll, *o.ARPAllTargets))
	}
	if o.Primary != nil {
		idx := 0
		if *o.Primary != "" {
			var err error
			if idx, err = ex.links.ifindex(*o.Primary); err != nil {
				return nil, err
			}
		}
		out = append(out, nl.NewRtAttr(unix.IFLA_BOND_PRIMARY, nl.Uint32Attr(uint32(idx))))
	}
	if o.PrimaryReselect != nil {
		enum8(unix.IFLA_BOND_PRIMARY_RESELECT, indexOf(bondPrimaryResels, *o.PrimaryReselect))
	}
	if o.FailOverMAC != nil {
		enum8(unix.IFLA_BOND_FAIL_OVER_MAC, indexOf(bondFailOverMACs, *o.FailOverMAC))
	}
	if o.XmitHashPolicy != nil {
		enum8(unix.IFLA_BOND_XMIT_HASH_POLICY, indexOf(bondXmitHashPolicy, *o.XmitHashPolicy))
	}
	u32(unix.IFLA_BOND_RESEND_IGMP, o.ResendIGMP)
	// num_grat_arp and num_unsol_na are one kernel setting.
	if o.NumGratARP != nil {
		u8(unix.IFLA_BOND_NUM_PEER_NOTIF, o.NumGratARP)
	} else {
		u8(unix.IFLA_BOND_NUM_PEER_NOTIF, o.NumUnsolNA)
	}
	if o.AllSlavesActive != nil {
		enum8(unix.IFLA_BOND_ALL_SLAVES_ACTIVE, indexOf(bondAllSlaves, *o.AllSlavesActive))
	}
	u32(unix.IFLA_BOND_MIN_LINKS, o.MinLinks)
	u32(unix.IFLA_BOND_LP_INTERVAL, o.LPInterval)
	u32(unix.IFLA_BOND_PACKETS_PER_SLAVE, o.PacketsPerSlave)
	if o.LACPRate != nil {
		enum8(unix.IFLA_BOND_AD_LACP_RATE, indexOf(bondLACPRates, *o.LACPRate))
	}
	if o.ADSelect != nil {
		enum8(unix.IFLA_BOND_AD_SELECT, indexOf(bondADSelects, *o.ADSelect))
	}
	u16(unix.IFLA_BOND_AD_ACTOR_SYS_PRIO, o.ADActorSysPrio)
	u16(unix.IFLA_BOND_AD_USER_PORT_KEY, o.ADUserPortKey)
	if o.ADActorSystem != nil {
		out = append(out, nl.NewRtAttr(unix.IFLA_BOND_AD_ACTOR_SYSTEM, o.ADActorSystem.Bytes()))
	}
	flag(unix.IFLA_BOND_TLB_DYNAMIC_LB, o.TLBDynamicLB)
	u8(unix.IFLA_BOND_MISSED_MAX, o.ARPMissedMax)
	if o.BalanceSLB != nil {
		return nil, notSupported("bond option balance_slb is not supported by the kernel backend")
	}
	return out, nil
}

func indexOf[T comparable](values []T, v T) int {
	for i, x := range values {
		if x == v {
			return i
		}
	}
	return -1
}
