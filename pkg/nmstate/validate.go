package nmstate

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Validate checks a desired state on its own and, when current is not nil,
// against the current state. It returns every problem found (nil when the
// state is valid), each with the path of the offending value.
//
// current == nil means "the current state is unknown" (an admission webhook,
// `nmstatectl validate FILE`): checks that need to know whether an
// interface already exists are skipped. A non-nil but empty current means
// "nothing exists", so every interface is new.
func Validate(desired, current *State) ErrorList {
	if desired == nil {
		return nil
	}
	v := &validator{desired: desired, current: current}
	v.index()
	v.interfaces()
	v.controllers()
	v.routes()
	v.routeRules()
	v.dns()
	v.hostname()
	v.ovn()
	return v.errs
}

type validator struct {
	desired, current *State
	errs             ErrorList
	// byName indexes desired interfaces by name (several only when kernel
	// and user-space interfaces share a name).
	byName map[string][]int
	// curByName indexes current interfaces by name, in current order, and
	// vethPeers the names desired veths (not absent) give as their peer:
	// per-interface checks look names up instead of scanning both lists,
	// which kept validation linear in the interface count.
	curByName map[string][]int
	vethPeers map[string]bool
}

func (v *validator) fail(k Kind, p Path, format string, args ...any) {
	v.errs = append(v.errs, &Error{Kind: k, Path: p, Detail: fmt.Sprintf(format, args...)})
}

func (v *validator) invalid(p Path, format string, args ...any) {
	v.fail(InvalidArgument, p, format, args...)
}

func ifacePath(i int) Path { return Path("interfaces").Index(i) }

func (v *validator) index() {
	v.byName = make(map[string][]int, len(v.desired.Interfaces))
	v.vethPeers = map[string]bool{}
	for i := range v.desired.Interfaces {
		d := &v.desired.Interfaces[i]
		v.byName[d.Name] = append(v.byName[d.Name], i)
		if d.Veth != nil && d.State != StateAbsent {
			v.vethPeers[d.Veth.Peer] = true
		}
	}
	if v.current == nil {
		return
	}
	v.curByName = make(map[string][]int, len(v.current.Interfaces))
	for i := range v.current.Interfaces {
		n := v.current.Interfaces[i].Name
		v.curByName[n] = append(v.curByName[n], i)
	}
}

// desiredIface returns the first desired interface with this name.
func (v *validator) desiredIface(name string) *Interface {
	if idx, ok := v.byName[name]; ok {
		return &v.desired.Interfaces[idx[0]]
	}
	return nil
}

// currentIface returns the current interface with this name, preferring a
// kernel interface, or nil (also when current is unknown).
func (v *validator) currentIface(name string) *Interface {
	if v.current == nil {
		return nil
	}
	var found *Interface
	for _, i := range v.curByName[name] {
		c := &v.current.Interfaces[i]
		if found == nil || found.Type.IsUserSpace() {
			found = c
		}
	}
	return found
}

// markedAbsent reports whether the desired state removes the interface.
func (v *validator) markedAbsent(name string) bool {
	d := v.desiredIface(name)
	return d != nil && d.State == StateAbsent
}

// mayExist reports whether name will exist after apply as far as the
// validator can tell: desired (not absent), or current, or unknown current.
func (v *validator) mayExist(name string) bool {
	if v.markedAbsent(name) {
		return false
	}
	if v.desiredIface(name) != nil || v.current == nil {
		return true
	}
	return v.currentIface(name) != nil
}

// isNew reports whether ifc will be created; false when current is unknown.
func (v *validator) isNew(ifc *Interface) bool {
	if v.current == nil {
		return false
	}
	for _, i := range v.curByName[ifc.Name] {
		c := &v.current.Interfaces[i]
		if ifc.Type == "" || c.Type == ifc.Type ||
			(ifc.Type == TypeVeth && c.Type == TypeEthernet) || (ifc.Type == TypeEthernet && c.Type == TypeVeth) {
			return false
		}
	}
	return true
}

// ifaceType is the desired type, or the current one for untyped interfaces.
func (v *validator) ifaceType(ifc *Interface) InterfaceType {
	if ifc.Type != "" {
		return ifc.Type
	}
	if c := v.currentIface(ifc.Name); c != nil {
		return c.Type
	}
	return ""
}

var ifaceNameRE = regexp.MustCompile(`^[^/\s:]+$`)

func (v *validator) interfaces() {
	type key struct {
		name   string
		kernel bool
	}
	seen := map[key]int{}
	for i := range v.desired.Interfaces {
		ifc := &v.desired.Interfaces[i]
		p := ifacePath(i)
		// Two kernel interfaces cannot share a name; a user-space one (OVS
		// bridge row, ipsec connection) may share it with a kernel one.
		k := key{ifc.Name, !ifc.Type.IsUserSpace()}
		if j, dup := seen[k]; dup {
			other := v.desired.Interfaces[j]
			if ifc.Type == "" || other.Type == "" || ifc.Type == other.Type || k.kernel {
				v.invalid(p.Key("name"), "duplicate interface %s (also interfaces[%d])", ifc.Name, j)
			}
		} else {
			seen[k] = i
		}
		v.iface(i, ifc)
	}
}

func (v *validator) iface(i int, ifc *Interface) {
	p := ifacePath(i)
	if ifc.Name == "" {
		v.invalid(p.Key("name"), "must not be empty")
	} else if !ifc.Type.IsUserSpace() {
		if len(ifc.Name) > 15 {
			v.invalid(p.Key("name"), "%q is longer than 15 characters", ifc.Name)
		} else if !ifaceNameRE.MatchString(ifc.Name) && !strings.HasPrefix(ifc.Name, "sriov:") {
			v.invalid(p.Key("name"), "%q is not a valid interface name", ifc.Name)
		}
	}
	if ifc.State == StateUnknown {
		v.invalid(p.Key("state"), "unknown is reported by query only")
		return
	}
	if ifc.Type == "" && v.current != nil && ifc.State != StateAbsent {
		var types []string
		for _, j := range v.curByName[ifc.Name] {
			types = append(types, string(v.current.Interfaces[j].Type))
		}
		switch {
		case len(types) == 0:
			v.invalid(p, "interface %s has no type and is not in the current state", ifc.Name)
		case len(types) > 1:
			v.invalid(p, "interface %s has no type and matches %d current interfaces (%s)", ifc.Name, len(types), strings.Join(types, ", "))
		}
	}
	if ifc.State == StateAbsent || ifc.State == StateIgnore {
		return
	}
	typ := v.ifaceType(ifc)
	if typ == TypeTeam {
		v.fail(NotSupported, p.Key("type"), "team is not supported (removed in nmstate 2); use a bond")
	}
	v.mtu(p, ifc)
	v.ip(p.Key("ipv4"), ifc, ifc.IPv4, false)
	v.ip(p.Key("ipv6"), ifc, ifc.IPv6, true)
	if ifc.WaitIP != nil {
		w := *ifc.WaitIP
		if (w == "ipv4" || w == "ipv4+ipv6") && ifc.IPv4 != nil && isFalse(ifc.IPv4.Enabled) {
			v.invalid(p.Key("wait-ip"), "%s needs ipv4 enabled", w)
		}
		if (w == "ipv6" || w == "ipv4+ipv6") && ifc.IPv6 != nil && isFalse(ifc.IPv6.Enabled) {
			v.invalid(p.Key("wait-ip"), "%s needs ipv6 enabled", w)
		}
	}
	if ifc.CopyMACFrom != nil {
		switch typ {
		case TypeBond, TypeLinuxBridge, TypeOVSInterface:
		default:
			v.invalid(p.Key("copy-mac-from"), "is only supported for bond, linux-bridge and ovs-interface")
		}
		if src := *ifc.CopyMACFrom; !v.mayExist(src) {
			v.invalid(p.Key("copy-mac-from"), "interface %s does not exist", src)
		}
	}
	if ifc.Dispatch != nil && typ.IsUserSpace() {
		v.invalid(p.Key("dispatch"), "is not supported for %s interfaces", typ)
	}
	if ifc.MPTCP != nil {
		v.mptcpFlags(p.Key("mptcp").Key("address-flags"), ifc.MPTCP.AddressFlags)
	}
	if ifc.AltNames != nil {
		v.altNames(p.Key("alt-names"), ifc)
	}
	if typ == TypeLoopback {
		for _, fam := range []struct {
			key string
			c   *IPConfig
		}{{"ipv4", ifc.IPv4}, {"ipv6", ifc.IPv6}} {
			if fam.c == nil {
				continue
			}
			if isFalse(fam.c.Enabled) {
				v.invalid(p.Key(fam.key).Key("enabled"), "loopback cannot have %s disabled", fam.key)
			}
			if fam.c.IsAuto() {
				v.invalid(p.Key(fam.key), "loopback cannot use DHCP or autoconf")
			}
		}
	}
	isNew := v.isNew(ifc)
	if typ == TypeEthernet && isNew && ifc.Veth == nil && ifc.EffectiveState() == StateUp && !v.isVethPeer(ifc.Name) {
		v.fail(Dependency, p, "ethernet interface %s does not exist", ifc.Name)
	}
	v.typeSpecific(p, ifc, typ, isNew)
}

func (v *validator) isVethPeer(name string) bool { return v.vethPeers[name] }

// altNames checks an interface's alternative names: valid link names of
// at most 127 bytes (the kernel's ALTIFNAMSIZ), listed once, not the
// interface's own name, and not the name of another interface, nor one of
// its alternative names, in the desired or the current state.
func (v *validator) altNames(p Path, ifc *Interface) {
	seen := map[string]bool{}
	for j, a := range *ifc.AltNames {
		ap := p.Index(j).Key("name")
		switch {
		case a.Name == "" || a.Name == "." || a.Name == ".." || !ifaceNameRE.MatchString(a.Name):
			v.invalid(ap, "%q is not a valid interface name", a.Name)
			continue
		case len(a.Name) > 127:
			v.invalid(ap, "%q is longer than 127 characters", a.Name)
			continue
		case seen[a.Name]:
			v.invalid(ap, "%s is listed twice", a.Name)
			continue
		}
		seen[a.Name] = true
		if a.IsAbsent() {
			continue
		}
		if a.Name == ifc.Name {
			v.invalid(ap, "alternative name %s is the interface's own name", a.Name)
			continue
		}
		if owner := v.altNameOwner(a.Name, ifc.Name); owner != "" {
			v.invalid(ap, "alternative name %s of %s is already a name of interface %s", a.Name, ifc.Name, owner)
		}
	}
}

// altNameOwner is the interface other than self that uses name as its
// name or (not removed) alternative name, in the desired state, else in
// the current one; "" if none.
func (v *validator) altNameOwner(name, self string) string {
	uses := func(ifc *Interface, desired bool) bool {
		if ifc.Name == self {
			return false
		}
		if ifc.Name == name && !(desired && ifc.State == StateAbsent) {
			return true
		}
		if ifc.AltNames == nil {
			return false
		}
		for _, a := range *ifc.AltNames {
			if a.Name == name && !a.IsAbsent() {
				return true
			}
		}
		return false
	}
	for i := range v.desired.Interfaces {
		if uses(&v.desired.Interfaces[i], true) {
			return v.desired.Interfaces[i].Name
		}
	}
	if v.current != nil {
		for i := range v.current.Interfaces {
			c := &v.current.Interfaces[i]
			d := v.desiredIface(c.Name)
			if d != nil && d.State == StateAbsent {
				continue
			}
			if d != nil && d.AltNames != nil && slices.ContainsFunc(*d.AltNames, func(a AltName) bool { return a.Name == name && a.IsAbsent() }) {
				continue // removed by this state
			}
			if uses(c, false) {
				return c.Name
			}
		}
	}
	return ""
}

func isTrue(b *bool) bool  { return b != nil && *b }
func isFalse(b *bool) bool { return b != nil && !*b }

func (v *validator) mtu(p Path, ifc *Interface) {
	if ifc.MTU == nil {
		return
	}
	mtu := *ifc.MTU
	v6 := ifc.IPv6 != nil && isTrue(ifc.IPv6.Enabled)
	if ifc.IPv6 == nil || ifc.IPv6.Enabled == nil {
		if c := v.currentIface(ifc.Name); c != nil && c.IPv6 != nil && isTrue(c.IPv6.Enabled) {
			v6 = true
		}
	}
	if v6 && mtu < 1280 {
		v.invalid(p.Key("mtu"), "%d is too small: MTU should be >= 1280 when IPv6 is enabled", mtu)
	}
	if mtu > 65536 {
		v.invalid(p.Key("mtu"), "%d is out of range 0..65536", mtu)
	}
	if c := v.currentIface(ifc.Name); c != nil {
		if c.MaxMTU != nil && *c.MaxMTU > 0 && mtu > *c.MaxMTU {
			v.invalid(p.Key("mtu"), "%d is bigger than the maximum MTU %d of %s", mtu, *c.MaxMTU, ifc.Name)
		}
		if c.MinMTU != nil && mtu < *c.MinMTU {
			v.invalid(p.Key("mtu"), "%d is smaller than the minimum MTU %d of %s", mtu, *c.MinMTU, ifc.Name)
		}
	}
}

var lifetimeRE = regexp.MustCompile(`^(forever|[0-9]+sec)$`)

func (v *validator) ip(p Path, ifc *Interface, c *IPConfig, v6 bool) {
	if c == nil {
		return
	}
	fam, other := "ipv4", "ipv6"
	if v6 {
		fam, other = other, fam
	}
	onlyIn := func(set bool, key, family string) {
		if set {
			v.invalid(p.Key(key), "is only valid in %s", family)
		}
	}
	if v6 {
		onlyIn(c.DHCPClientID != nil, "dhcp-client-id", other)
	} else {
		onlyIn(c.Autoconf != nil, "autoconf", other)
		onlyIn(c.DHCPDUID != nil, "dhcp-duid", other)
		onlyIn(c.AddrGenMode != nil, "addr-gen-mode", other)
		onlyIn(c.Token != nil, "token", other)
	}
	bits := 32
	if v6 {
		bits = 128
	}
	for j, a := range c.Address {
		ap := p.Key("address").Index(j)
		if a.IP.Is4() == v6 {
			v.invalid(ap.Key("ip"), "%s is not an %s address", a.IP, strings.ToUpper(fam[:2])+fam[2:])
			continue
		}
		if int(a.PrefixLength) > bits {
			v.invalid(ap.Key("prefix-length"), "%d is out of range 0..%d", a.PrefixLength, bits)
		}
		if a.ValidLifetime != nil && !lifetimeRE.MatchString(*a.ValidLifetime) {
			v.invalid(ap.Key("valid-life-time"), "%q is not \"forever\" or \"<seconds>sec\"", *a.ValidLifetime)
		}
		if a.PreferredLifetime != nil && !lifetimeRE.MatchString(*a.PreferredLifetime) {
			v.invalid(ap.Key("preferred-life-time"), "%q is not \"forever\" or \"<seconds>sec\"", *a.PreferredLifetime)
		}
		v.mptcpFlags(ap.Key("mptcp-flags"), a.MPTCPFlags)
	}
	if v6 && c.Token != nil && c.Token.IsValid() {
		t := *c.Token
		b := t.As16()
		if !t.Is6() || t.Is4In6() {
			v.invalid(p.Key("token"), "%s is not an IPv6 token", t)
		} else if b != [16]byte{} {
			for _, x := range b[:8] {
				if x != 0 {
					v.invalid(p.Key("token"), "%s must have the upper 64 bits zero", t)
					break
				}
			}
			if isFalse(c.Autoconf) {
				v.invalid(p.Key("token"), "is not allowed with autoconf false")
			}
		}
	}
}

func (v *validator) mptcpFlags(p Path, flags []MPTCPFlag) {
	has := map[MPTCPFlag]bool{}
	for _, f := range flags {
		has[f] = true
	}
	if has["signal"] && has["fullmesh"] {
		v.invalid(p, "signal and fullmesh are mutually exclusive")
	}
}

func (v *validator) typeSpecific(p Path, ifc *Interface, typ InterfaceType, isNew bool) {
	switch typ {
	case TypeVLAN:
		vp := p.Key("vlan")
		c := ifc.VLAN
		if c == nil {
			c = &VLAN{}
		}
		if c.ID != nil && *c.ID > 4094 {
			v.invalid(vp.Key("id"), "%d is out of range 0..4094", *c.ID)
		}
		if isNew && c.BaseIface == nil {
			v.invalid(vp.Key("base-iface"), "is required for a new vlan")
		}
		if isNew && c.ID == nil {
			v.invalid(vp.Key("id"), "is required for a new vlan")
		}
		v.parent(vp.Key("base-iface"), ifc, c.BaseIface)
	case TypeVXLAN:
		vp := p.Key("vxlan")
		c := ifc.VXLAN
		if c == nil {
			c = &VXLAN{}
		}
		if c.ID != nil && *c.ID > 1<<24-1 {
			v.invalid(vp.Key("id"), "%d is out of range 0..16777215", *c.ID)
		}
		if isNew && c.ID == nil {
			v.invalid(vp.Key("id"), "is required for a new vxlan")
		}
		if c.Local != nil && c.Remote != nil && c.Local.Is4() != c.Remote.Is4() {
			v.invalid(vp.Key("remote"), "%s is not of the same family as local %s", c.Remote, c.Local)
		}
		v.parent(vp.Key("base-iface"), ifc, c.BaseIface)
	case TypeMacVlan, TypeMacVtap:
		key, c := "mac-vlan", ifc.MacVlan
		if typ == TypeMacVtap {
			key, c = "mac-vtap", ifc.MacVtap
		}
		if c == nil {
			c = &MacVlan{}
		}
		if isNew && c.BaseIface == nil {
			v.invalid(p.Key(key).Key("base-iface"), "is required for a new %s", typ)
		}
		v.parent(p.Key(key).Key("base-iface"), ifc, c.BaseIface)
	case TypeIPVlan:
		c := ifc.IPVlan
		if c == nil {
			c = &IPVlan{}
		}
		if isNew && c.BaseIface == nil {
			v.invalid(p.Key("ipvlan").Key("base-iface"), "is required for a new ipvlan")
		}
		if isTrue(c.Private) && isTrue(c.VEPA) {
			v.invalid(p.Key("ipvlan"), "private and vepa are mutually exclusive")
		}
		v.parent(p.Key("ipvlan").Key("base-iface"), ifc, c.BaseIface)
	case TypeBond:
		v.bond(p, ifc, isNew)
	case TypeLinuxBridge:
		v.linuxBridge(p, ifc)
	case TypeOVSBridge:
		v.ovsBridge(p, ifc)
	case TypeOVSInterface:
		if ifc.Patch != nil && ifc.Patch.Peer == ifc.Name {
			v.invalid(p.Key("patch").Key("peer"), "cannot be the interface itself")
		}
		if ifc.Patch != nil && ifc.DPDK != nil {
			v.invalid(p, "patch and dpdk are mutually exclusive")
		}
		if isNew && (ifc.Controller == nil || *ifc.Controller == "") && !v.listedByOVSBridge(ifc.Name) {
			v.invalid(p, "ovs-interface %s is not a port of any ovs-bridge", ifc.Name)
		}
	case TypeVRF:
		vp := p.Key("vrf")
		c := ifc.VRF
		if c == nil {
			c = &VRF{}
		}
		v.uniqueNames(vp.Key("port"), c.Port)
		if c.RouteTableID != nil && *c.RouteTableID == 0 {
			v.invalid(vp.Key("route-table-id"), "0 is not allowed")
		} else if isNew && c.RouteTableID == nil {
			v.invalid(vp.Key("route-table-id"), "is required (and not 0) for a new vrf")
		}
	case TypeVeth, TypeEthernet:
		if ifc.Veth != nil && ifc.Veth.Peer == ifc.Name {
			v.invalid(p.Key("veth").Key("peer"), "cannot be the interface itself")
		}
		if typ == TypeVeth && isNew && ifc.Veth == nil && !v.isVethPeer(ifc.Name) {
			v.invalid(p.Key("veth").Key("peer"), "is required to create veth %s", ifc.Name)
		}
		if ifc.Ethernet != nil && ifc.Ethernet.SRIOV != nil {
			v.sriov(p.Key("ethernet").Key("sr-iov"), ifc.Ethernet.SRIOV)
		}
	case TypeInfiniBand:
		c := ifc.InfiniBand
		if c == nil {
			break
		}
		if c.PKey != nil {
			pk := *c.PKey
			if pk == 0 || pk == 0x8000 {
				v.invalid(p.Key("infiniband").Key("pkey"), "%s is not a valid pkey", pk)
			}
			if pk != 0xffff && isNew && c.BaseIface == nil {
				v.invalid(p.Key("infiniband").Key("base-iface"), "is required for a new pkey interface")
			}
		}
		v.parent(p.Key("infiniband").Key("base-iface"), ifc, c.BaseIface)
	case TypeHSR:
		c := ifc.HSR
		if c == nil {
			c = &HSR{}
		}
		hp := p.Key("hsr")
		if isNew && c.Port1 == nil {
			v.invalid(hp.Key("port1"), "is required for a new hsr")
		}
		if isNew && c.Port2 == nil {
			v.invalid(hp.Key("port2"), "is required for a new hsr")
		}
		if c.Port1 != nil && c.Port2 != nil && *c.Port1 == *c.Port2 {
			v.invalid(hp.Key("port2"), "must differ from port1")
		}
		v.parent(hp.Key("port1"), ifc, c.Port1)
		v.parent(hp.Key("port2"), ifc, c.Port2)
	case TypeMACsec:
		c := ifc.MACsec
		if c == nil {
			c = &MACsec{}
		}
		mp := p.Key("macsec")
		if isNew && c.BaseIface == nil {
			v.invalid(mp.Key("base-iface"), "is required for a new macsec")
		}
		if c.MKACAK != nil && !isHex(*c.MKACAK, 32, 64) {
			v.invalid(mp.Key("mka-cak"), "must be 32 or 64 hex digits")
		}
		if c.MKACKN != nil && !isHex(*c.MKACKN, 2, 64) {
			v.invalid(mp.Key("mka-ckn"), "must be an even number of hex digits, 2 to 64")
		}
		if (c.MKACAK == nil) != (c.MKACKN == nil) {
			v.invalid(mp, "mka-cak and mka-ckn must be given together")
		}
		v.parent(mp.Key("base-iface"), ifc, c.BaseIface)
	}
}

func isHex(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen || len(s)%2 != 0 {
		return false
	}
	if minLen == 32 && len(s) != 32 && len(s) != 64 {
		return false
	}
	for _, c := range strings.ToLower(s) {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// parent checks a reference from a stacked interface to its lower one.
func (v *validator) parent(p Path, ifc *Interface, base *string) {
	if base == nil {
		return
	}
	b := *base
	switch {
	case b == ifc.Name:
		v.invalid(p, "cannot be the interface itself")
	case v.markedAbsent(b):
		v.invalid(p, "interface %s cannot be %s as its parent %s is marked absent", ifc.Name, ifc.EffectiveState(), b)
	case !v.mayExist(b):
		v.fail(Dependency, p, "interface %s does not exist", b)
	}
}

func (v *validator) listedByOVSBridge(name string) bool {
	states := []*State{v.desired}
	if v.current != nil {
		states = append(states, v.current)
	}
	for _, s := range states {
		for _, b := range s.Interfaces {
			if b.OVSBridge == nil || b.State == StateAbsent {
				continue
			}
			for _, pt := range b.OVSBridge.Port {
				if pt.Name == name {
					return true
				}
			}
		}
	}
	return false
}

func (v *validator) bond(p Path, ifc *Interface, isNew bool) {
	bp := p.Key("link-aggregation")
	c := ifc.LinkAggregation
	if c == nil {
		c = &Bond{}
	}
	if isNew && c.Mode == nil {
		v.invalid(bp.Key("mode"), "is required for a new bond")
	}
	if o := c.Options; o != nil {
		op := bp.Key("options")
		if o.MIIMon != nil && *o.MIIMon > 0 && o.ARPInterval != nil && *o.ARPInterval > 0 {
			v.invalid(op.Key("arp_interval"), "miimon and arp_interval are mutually exclusive")
		}
		if o.ADActorSystem != nil {
			if b := o.ADActorSystem.Bytes(); len(b) > 0 && b[0]&1 == 1 {
				v.invalid(op.Key("ad_actor_system"), "%s is a multicast address", *o.ADActorSystem)
			}
		}
		if c.Mode != nil && *c.Mode == BondModeActiveBackup && o.FailOverMAC != nil &&
			*o.FailOverMAC == "active" && ifc.MACAddress != nil {
			v.invalid(p.Key("mac-address"), "cannot be set with fail_over_mac active in active-backup mode")
		}
		if isTrue(o.BalanceSLB) && ((c.Mode != nil && *c.Mode != BondModeXOR) ||
			(o.XmitHashPolicy != nil && *o.XmitHashPolicy != "vlan+srcmac")) {
			v.invalid(op.Key("balance_slb"), "needs mode balance-xor and xmit_hash_policy vlan+srcmac")
		}
		if o.ARPIPTarget != nil && *o.ARPIPTarget != "" {
			for _, t := range strings.Split(*o.ARPIPTarget, ",") {
				if a, err := netip.ParseAddr(strings.TrimSpace(t)); err != nil || !a.Is4() {
					v.invalid(op.Key("arp_ip_target"), "%q is not an IPv4 address", t)
				}
			}
		}
	}
	v.uniqueNames(bp.Key("port"), c.Port)
	if c.PortsConfig != nil {
		var names []string
		for j, pc := range c.PortsConfig {
			names = append(names, pc.Name)
			if c.Port != nil && !contains(c.Port, pc.Name) {
				v.invalid(bp.Key("ports-config").Index(j).Key("name"), "%s is not in the port list", pc.Name)
			}
		}
		v.uniqueNames(bp.Key("ports-config"), names)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (v *validator) uniqueNames(p Path, names []string) {
	seen := map[string]bool{}
	for j, n := range names {
		if seen[n] {
			v.invalid(p.Index(j), "%s is listed twice", n)
		}
		seen[n] = true
	}
}

func (v *validator) linuxBridge(p Path, ifc *Interface) {
	c := ifc.LinuxBridge
	if c == nil {
		return
	}
	bp := p.Key("bridge")
	if o := c.Options; o != nil {
		op := bp.Key("options")
		if o.GroupForwardMask != nil && *o.GroupForwardMask&0x7 != 0 {
			v.invalid(op.Key("group-forward-mask"), "%d sets bits 0-2, which the kernel never forwards", *o.GroupForwardMask)
		}
		if o.VlanDefaultPVID != nil && *o.VlanDefaultPVID > 4094 {
			v.invalid(op.Key("vlan-default-pvid"), "%d is out of range 0..4094", *o.VlanDefaultPVID)
		}
		if s := o.STP; s != nil {
			sp := op.Key("stp")
			rng := func(key string, val *uint8, lo, hi uint8) {
				if val != nil && (*val < lo || *val > hi) {
					v.invalid(sp.Key(key), "%d is out of range %d..%d", *val, lo, hi)
				}
			}
			rng("forward-delay", s.ForwardDelay, 2, 30)
			rng("hello-time", s.HelloTime, 1, 10)
			rng("max-age", s.MaxAge, 6, 40)
		}
	}
	var names []string
	for j, pt := range c.Port {
		pp := bp.Key("port").Index(j)
		names = append(names, pt.Name)
		if pt.STPPriority != nil && *pt.STPPriority > 63 {
			v.invalid(pp.Key("stp-priority"), "%d is out of range 0..63", *pt.STPPriority)
		}
		if pt.STPPathCost != nil && (*pt.STPPathCost < 1 || *pt.STPPathCost > 65535) {
			v.invalid(pp.Key("stp-path-cost"), "%d is out of range 1..65535", *pt.STPPathCost)
		}
		v.bridgeVLAN(pp.Key("vlan"), pt.VLAN)
	}
	v.uniqueNames(bp.Key("port"), names)
}

func (v *validator) ovsBridge(p Path, ifc *Interface) {
	c := ifc.OVSBridge
	if c == nil {
		return
	}
	bp := p.Key("bridge")
	var names []string
	for j, pt := range c.Port {
		pp := bp.Key("port").Index(j)
		names = append(names, pt.Name)
		v.bridgeVLAN(pp.Key("vlan"), pt.VLAN)
		if b := pt.LinkAggregation; b != nil {
			var bnames []string
			for _, m := range b.Port {
				bnames = append(bnames, m.Name)
			}
			v.uniqueNames(pp.Key("link-aggregation").Key("port"), bnames)
		}
	}
	v.uniqueNames(bp.Key("port"), names)
}

func (v *validator) bridgeVLAN(p Path, c *BridgeVLAN) {
	if c == nil {
		return
	}
	tagOK := func(tp Path, id uint16) {
		if id < 1 || id > 4094 {
			v.invalid(tp, "%d is out of range 1..4094", id)
		}
	}
	if c.Tag != nil {
		tagOK(p.Key("tag"), *c.Tag)
	}
	for j, t := range c.TrunkTags {
		tp := p.Key("trunk-tags").Index(j)
		switch {
		case (t.ID == nil) == (t.IDRange == nil):
			v.invalid(tp, "needs exactly one of id and id-range")
		case t.ID != nil:
			tagOK(tp.Key("id"), *t.ID)
		default:
			tagOK(tp.Key("id-range").Key("min"), t.IDRange.Min)
			tagOK(tp.Key("id-range").Key("max"), t.IDRange.Max)
			if t.IDRange.Min > t.IDRange.Max {
				v.invalid(tp.Key("id-range"), "min %d is bigger than max %d", t.IDRange.Min, t.IDRange.Max)
			}
		}
	}
	mode := BridgeVLANMode("")
	if c.Mode != nil {
		mode = *c.Mode
	}
	switch mode {
	case "access":
		if len(c.TrunkTags) > 0 {
			v.invalid(p.Key("trunk-tags"), "is not allowed in access mode")
		}
		if c.EnableNative != nil {
			v.invalid(p.Key("enable-native"), "is not allowed in access mode")
		}
	case "trunk":
		if len(c.TrunkTags) == 0 {
			v.invalid(p.Key("trunk-tags"), "must not be empty in trunk mode")
		}
		if isTrue(c.EnableNative) && c.Tag == nil {
			v.invalid(p.Key("tag"), "is required when enable-native is true")
		}
	}
}

func (v *validator) sriov(p Path, c *SRIOV) {
	seen := map[uint32]bool{}
	for j, vf := range c.VFs {
		vp := p.Key("vfs").Index(j)
		if c.TotalVFs != nil && vf.ID >= *c.TotalVFs {
			v.invalid(vp.Key("id"), "%d is out of range 0..%d (total-vfs %d)", vf.ID, int64(*c.TotalVFs)-1, *c.TotalVFs)
		}
		if seen[vf.ID] {
			v.invalid(vp.Key("id"), "VF %d is listed twice", vf.ID)
		}
		seen[vf.ID] = true
		if vf.VlanID != nil && *vf.VlanID > 4094 {
			v.invalid(vp.Key("vlan-id"), "%d is out of range 0..4094", *vf.VlanID)
		}
		if vf.QoS != nil && *vf.QoS > 7 {
			v.invalid(vp.Key("qos"), "%d is out of range 0..7", *vf.QoS)
		}
		if vf.MinTxRate != nil && vf.MaxTxRate != nil && *vf.MaxTxRate != 0 && *vf.MinTxRate > *vf.MaxTxRate {
			v.invalid(vp.Key("min-tx-rate"), "%d is bigger than max-tx-rate %d", *vf.MinTxRate, *vf.MaxTxRate)
		}
	}
}

// controllers checks port lists against each other, against the ports'
// own `controller` keys, and against what exists.
func (v *validator) controllers() {
	type owner struct {
		ctrl string
		path Path
	}
	owners := map[string]owner{}
	for i := range v.desired.Interfaces {
		ifc := &v.desired.Interfaces[i]
		if ifc.State == StateAbsent || ifc.State == StateIgnore {
			continue
		}
		ports, ok := ifc.Ports()
		if !ok {
			continue
		}
		typ := v.ifaceType(ifc)
		for j, port := range ports {
			pp := portPath(ifacePath(i), ifc, j)
			if port == ifc.Name && typ != TypeOVSBridge {
				v.invalid(pp, "an interface cannot be its own port")
				continue
			}
			if o, dup := owners[port]; dup && o.ctrl != ifc.Name {
				v.invalid(pp, "port %s is overbooked by two controllers: %s and %s", port, o.ctrl, ifc.Name)
				continue
			}
			owners[port] = owner{ifc.Name, pp}
			switch {
			case v.markedAbsent(port):
				v.invalid(pp, "port %s is marked absent", port)
			case typ != TypeOVSBridge && !v.mayExist(port):
				v.fail(Dependency, pp, "controller %s holds unknown port %s", ifc.Name, port)
			}
			if d := v.desiredIface(port); d != nil && d.Controller != nil && *d.Controller != ifc.Name {
				idx := v.byName[port][0]
				if *d.Controller == "" {
					v.invalid(ifacePath(idx).Key("controller"), "is empty (detach) but %s lists %s as a port", ifc.Name, port)
				} else {
					v.invalid(ifacePath(idx).Key("controller"), "is %s but %s lists %s as a port", *d.Controller, ifc.Name, port)
				}
			}
			if d := v.desiredIface(port); d != nil && !portMayHaveIP(typ, v.ifaceType(d)) {
				for _, fam := range []struct {
					key string
					c   *IPConfig
				}{{"ipv4", d.IPv4}, {"ipv6", d.IPv6}} {
					if fam.c != nil && isTrue(fam.c.Enabled) {
						v.invalid(ifacePath(v.byName[port][0]).Key(fam.key).Key("enabled"),
							"%s cannot have IP enabled as it is a port of %s %s", port, typ, ifc.Name)
					}
				}
			}
		}
	}
	// Port-side controller references.
	for i := range v.desired.Interfaces {
		ifc := &v.desired.Interfaces[i]
		if ifc.Controller == nil || *ifc.Controller == "" || ifc.State == StateAbsent {
			continue
		}
		ctrl := *ifc.Controller
		p := ifacePath(i).Key("controller")
		if ctrl == ifc.Name {
			// An OVS bridge's internal interface has the bridge's name
			// (br-ex on br-ex): shown so, and so in a revert state.
			br := v.ovsBridgeNamed(ctrl)
			switch {
			case v.ifaceType(ifc) != TypeOVSInterface || br == nil:
				v.invalid(p, "an interface cannot be its own controller")
			case br.State == StateAbsent:
				v.fail(Dependency, p, "controller %s does not exist", ctrl)
			default:
				if ports, ok := br.Ports(); ok && !contains(ports, ifc.Name) {
					v.invalid(p, "%s is not in the port list of %s", ifc.Name, ctrl)
				}
			}
			continue
		}
		if !v.mayExist(ctrl) {
			v.fail(Dependency, p, "controller %s does not exist", ctrl)
			continue
		}
		c := v.desiredIface(ctrl)
		if c == nil {
			c = v.currentIface(ctrl)
		}
		if c != nil {
			if t := v.ifaceType(c); t != "" && !t.IsController() {
				v.invalid(p, "%s is a %s, which cannot hold ports", ctrl, t)
				continue
			}
		}
		if d := v.desiredIface(ctrl); d != nil {
			if ports, ok := d.Ports(); ok && !contains(ports, ifc.Name) {
				v.invalid(p, "%s is not in the port list of %s", ifc.Name, ctrl)
			}
		}
	}
}

// ovsBridgeNamed returns the desired OVS bridge of this name, else the
// current one, or nil.
func (v *validator) ovsBridgeNamed(name string) *Interface {
	for _, i := range v.byName[name] {
		if d := &v.desired.Interfaces[i]; d.Type == TypeOVSBridge {
			return d
		}
	}
	if v.current == nil {
		return nil
	}
	for _, i := range v.curByName[name] {
		if c := &v.current.Interfaces[i]; c.Type == TypeOVSBridge {
			return c
		}
	}
	return nil
}

// portMayHaveIP mirrors nmstate's can_have_ip: ports lose IP except OVS
// internal interfaces and VRF ports.
func portMayHaveIP(ctrl, port InterfaceType) bool {
	return ctrl == TypeVRF || port == TypeOVSInterface
}

// portPath is the path of the j-th entry returned by ifc.Ports().
func portPath(p Path, ifc *Interface, j int) Path {
	switch {
	case ifc.LinkAggregation != nil && ifc.LinkAggregation.Port != nil:
		return p.Key("link-aggregation").Key("port").Index(j)
	case ifc.LinuxBridge != nil && ifc.LinuxBridge.Port != nil:
		return p.Key("bridge").Key("port").Index(j).Key("name")
	case ifc.OVSBridge != nil:
		k := 0
		for pi, pt := range ifc.OVSBridge.Port {
			if pt.LinkAggregation != nil {
				for bi := range pt.LinkAggregation.Port {
					if k == j {
						return p.Key("bridge").Key("port").Index(pi).Key("link-aggregation").Key("port").Index(bi).Key("name")
					}
					k++
				}
				continue
			}
			if k == j {
				return p.Key("bridge").Key("port").Index(pi).Key("name")
			}
			k++
		}
	case ifc.VRF != nil:
		return p.Key("vrf").Key("port").Index(j)
	case ifc.Team != nil:
		return p.Key("team").Key("port").Index(j).Key("name")
	}
	return p
}

var v4ZeroNet = netip.MustParsePrefix("0.0.0.0/8")

func (v *validator) routes() {
	if v.desired.Routes == nil {
		return
	}
	for j := range v.desired.Routes.Config {
		r := &v.desired.Routes.Config[j]
		p := Path("routes").Key("config").Index(j)
		if r.IsAbsent() {
			continue
		}
		if r.Destination == nil {
			v.invalid(p.Key("destination"), "is required")
			continue
		}
		dst := *r.Destination
		is4 := dst.Addr().Is4()
		famName := "IPv6"
		if is4 {
			famName = "IPv4"
		}
		if is4 && dst.Bits() >= 8 && v4ZeroNet.Contains(dst.Addr()) {
			v.invalid(p.Key("destination"), "%s is not a valid unicast destination (use 0.0.0.0/0 for the default gateway)", dst)
		}
		sameFam := func(key string, a *netip.Addr) {
			if a == nil {
				return
			}
			if !a.IsValid() {
				v.invalid(p.Key(key), "must not be empty")
			} else if a.Is4() != is4 {
				v.invalid(p.Key(key), "%s is not an %s address like destination %s", a, famName, dst)
			}
		}
		sameFam("next-hop-address", r.NextHopAddress)
		sameFam("source", r.Source)
		if r.RouteType != nil {
			if r.NextHopInterface != nil && *r.NextHopInterface != "lo" {
				v.invalid(p.Key("next-hop-interface"), "a %s route cannot have a next hop interface", *r.RouteType)
			}
			if r.NextHopAddress != nil && r.NextHopAddress.IsValid() && !r.NextHopAddress.IsUnspecified() {
				v.invalid(p.Key("next-hop-address"), "a %s route cannot have a next hop address", *r.RouteType)
			}
		} else if r.NextHopInterface == nil || *r.NextHopInterface == "" {
			v.fail(NotSupported, p.Key("next-hop-interface"), "is required: routes without a next hop interface are not supported")
		}
		if r.Weight != nil {
			if *r.Weight < 1 || *r.Weight > 256 {
				v.invalid(p.Key("weight"), "%d is out of range 1..256", *r.Weight)
			} else if !is4 {
				v.fail(NotSupported, p.Key("weight"), "is only supported for IPv4 routes")
			}
		}
		if r.Cwnd != nil && *r.Cwnd == 0 {
			v.invalid(p.Key("cwnd"), "must not be 0")
		}
		if r.LockMTU != nil && *r.LockMTU && r.MTU == nil {
			v.invalid(p.Key("lock-mtu"), "needs mtu")
		}
		if r.VRFName != nil && *r.VRFName == "" {
			v.invalid(p.Key("vrf-name"), "must not be empty")
		}
		if r.Metric != nil && (*r.Metric < -1 || *r.Metric > 1<<32-1) {
			v.invalid(p.Key("metric"), "%d is out of range -1..4294967295", *r.Metric)
		}
		if r.NextHopInterface != nil && *r.NextHopInterface != "" && r.RouteType == nil {
			nh := *r.NextHopInterface
			np := p.Key("next-hop-interface")
			switch {
			case v.markedAbsent(nh):
				v.invalid(np, "next hop interface %s is marked absent", nh)
			case !v.mayExist(nh):
				v.fail(Dependency, np, "next hop interface %s does not exist", nh)
			default:
				if d := v.desiredIface(nh); d != nil {
					c := d.IPv6
					if is4 {
						c = d.IPv4
					}
					if c != nil && isFalse(c.Enabled) {
						v.invalid(np, "next hop interface %s has %s disabled", nh, famName)
					}
				}
			}
		}
	}
}

func (v *validator) routeRules() {
	if v.desired.RouteRules == nil {
		return
	}
	for j := range v.desired.RouteRules.Config {
		r := &v.desired.RouteRules.Config[j]
		p := Path("route-rules").Key("config").Index(j)
		if r.FWMask != nil && r.FWMark == nil {
			v.invalid(p.Key("fwmask"), "needs fwmark")
		}
		if r.State != nil && *r.State == "ignore" {
			v.invalid(p.Key("state"), `"ignore" is only valid for routes`)
		}
		if r.IsAbsent() {
			continue
		}
		given := func(pf *netip.Prefix) bool { return pf != nil && pf.IsValid() }
		if !given(r.IPFrom) && !given(r.IPTo) && r.Family == nil {
			v.invalid(p, "needs at least one of ip-from, ip-to or family")
		}
		var fam4 *bool
		check := func(key string, pf *netip.Prefix) {
			if pf == nil {
				return
			}
			if !pf.IsValid() {
				v.invalid(p.Key(key), "must not be empty")
				return
			}
			is4 := pf.Addr().Is4()
			if r.Family != nil && (*r.Family == "ipv4") != is4 {
				v.invalid(p.Key(key), "%s does not match family %s", pf, *r.Family)
				return
			}
			if fam4 != nil && *fam4 != is4 {
				v.invalid(p.Key(key), "%s is not of the same family as ip-from", pf)
			}
			fam4 = &is4
		}
		check("ip-from", r.IPFrom)
		check("ip-to", r.IPTo)
		if r.Priority != nil && (*r.Priority < -1 || *r.Priority > 1<<32-1) {
			v.invalid(p.Key("priority"), "%d is out of range -1..4294967295", *r.Priority)
		}
		if r.SuppressPrefixLength != nil && *r.SuppressPrefixLength > 128 {
			v.invalid(p.Key("suppress-prefix-length"), "%d is out of range 0..128", *r.SuppressPrefixLength)
		}
		if r.Action != nil && r.RouteTable != nil {
			v.invalid(p.Key("route-table"), "is not allowed with action %s", *r.Action)
		}
	}
}

// dnsOptions are the resolv.conf options nmstate accepts; true = takes a
// numeric value ("ndots:2").
var dnsOptions = map[string]bool{
	"debug": false, "edns0": false, "inet6": false, "ip6-bytestring": false,
	"ip6-dotint": false, "no-aaaa": false, "no-check-names": false,
	"no-ip6-dotint": false, "no-reload": false, "no-tld-query": false,
	"rotate": false, "single-request": false, "single-request-reopen": false,
	"trust-ad": false, "use-vc": false,
	"ndots": true, "timeout": true, "attempts": true,
}

func (v *validator) dns() {
	if v.desired.DNSResolver == nil || v.desired.DNSResolver.Config == nil {
		return
	}
	c := v.desired.DNSResolver.Config
	p := Path("dns-resolver").Key("config")
	for j, opt := range c.Options {
		name, val, hasVal := strings.Cut(opt, ":")
		takesVal, known := dnsOptions[name]
		switch {
		case !known:
			v.invalid(p.Key("options").Index(j), "unsupported DNS option %q", opt)
		case takesVal && !hasVal:
			v.invalid(p.Key("options").Index(j), "option %s needs a value (%s:N)", name, name)
		case !takesVal && hasVal:
			v.invalid(p.Key("options").Index(j), "option %s takes no value", name)
		case takesVal:
			if n, err := strconv.ParseUint(val, 10, 8); err != nil || n > 30 {
				v.invalid(p.Key("options").Index(j), "%q is not a valid value for %s", val, name)
			}
		}
	}
	for j, s := range c.Server {
		sp := p.Key("server").Index(j)
		zone := s.Zone()
		if zone == "" {
			continue
		}
		if !s.Is6() || !s.IsLinkLocalUnicast() {
			v.invalid(sp, "%s: only IPv6 link-local servers may name an interface", s)
			continue
		}
		switch {
		case v.markedAbsent(zone):
			v.invalid(sp, "interface %s of server %s is marked absent", zone, s)
		case !v.mayExist(zone):
			v.fail(Dependency, sp, "interface %s of server %s does not exist", zone, s)
		default:
			if d := v.desiredIface(zone); d != nil && d.IPv6 != nil && isFalse(d.IPv6.Enabled) {
				v.invalid(sp, "interface %s of server %s has IPv6 disabled", zone, s)
			}
		}
	}
	for j, s := range c.Search {
		if s == "" || strings.ContainsAny(s, " \t") {
			v.invalid(p.Key("search").Index(j), "%q is not a valid search domain", s)
		}
	}
}

func (v *validator) hostname() {
	h := v.desired.Hostname
	if h == nil {
		return
	}
	if h.Running != nil && *h.Running == "" {
		v.invalid(Path("hostname").Key("running"), "must not be empty")
	}
	for _, x := range []struct {
		key string
		val *string
	}{{"running", h.Running}, {"config", h.Config}} {
		if x.val != nil && len(*x.val) > 64 {
			v.invalid(Path("hostname").Key(x.key), "is longer than 64 characters")
		}
	}
}

func (v *validator) ovn() {
	if v.desired.OVN == nil {
		return
	}
	seen := map[string]bool{}
	for j, m := range v.desired.OVN.BridgeMappings {
		p := Path("ovn").Key("bridge-mappings").Index(j)
		if m.Localnet == "" {
			v.invalid(p.Key("localnet"), "must not be empty")
		}
		if seen[m.Localnet] {
			v.invalid(p.Key("localnet"), "%s is listed twice", m.Localnet)
		}
		seen[m.Localnet] = true
		if (m.State == nil || *m.State == "present") && (m.Bridge == nil || *m.Bridge == "") {
			v.invalid(p.Key("bridge"), "is required")
		}
	}
}
