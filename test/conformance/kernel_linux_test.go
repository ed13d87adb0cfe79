package conformance

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// kernelKinds maps nmstate interface types to the kernel's link kinds.
// eth1/eth2 ("ethernet" in the examples) are veths in this test bed.
var kernelKinds = map[nmstate.InterfaceType]string{
	nmstate.TypeEthernet:    "veth",
	nmstate.TypeVeth:        "veth",
	nmstate.TypeLinuxBridge: "bridge",
	nmstate.TypeBond:        "bond",
	nmstate.TypeVLAN:        "vlan",
	nmstate.TypeMacVlan:     "macvlan",
	nmstate.TypeMacVtap:     "macvtap",
	nmstate.TypeIPVlan:      "ipvlan",
	nmstate.TypeVRF:         "vrf",
	nmstate.TypeHSR:         "hsr",
}

// checkKernel looks at the namespace through netlink (and the node's
// resolv.conf and UTS namespace) directly, not through the backend's Show,
// so a reading bug that mirrors a writing bug cannot hide: every interface
// of desired exists (or is gone, for absent and down virtual ones) with the
// right kind, admin state, controller, static addresses and bridge port
// VLANs; desired routes and rules are installed and absent route patterns
// left no static route behind; resolv.conf and the hostname say what was
// asked.
func (n *node) checkKernel(desired *nmstate.State) error {
	h := n.ns.Netlink
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	controllerOf := map[string]string{}
	for _, ifc := range desired.Interfaces {
		var ports []string
		if br := ifc.LinuxBridge; br != nil {
			for _, p := range br.Port {
				ports = append(ports, p.Name)
			}
		}
		if b := ifc.LinkAggregation; b != nil {
			ports = append(ports, b.Port...)
		}
		if v := ifc.VRF; v != nil {
			ports = append(ports, v.Port...)
		}
		for _, p := range ports {
			controllerOf[p] = ifc.Name
		}
	}
	for _, ifc := range desired.Interfaces {
		l, err := h.LinkByName(ifc.Name)
		var notFound netlink.LinkNotFoundError
		gone := errors.As(err, &notFound)
		if err != nil && !gone {
			bad("%s: reading the link: %v", ifc.Name, err)
			continue
		}
		// An OVS bridge is no kernel link (ovs-vswitchd makes none
		// unless a port carries the bridge's name), nor is a patch
		// port: checkOVS looks at them in OVSDB.
		if ifc.Type == nmstate.TypeOVSBridge || ifc.Patch != nil {
			continue
		}
		switch {
		case ifc.State == nmstate.StateAbsent || ifc.State == nmstate.StateDown && ifc.Type.IsVirtual():
			if !gone {
				bad("%s: still in the kernel (state %s)", ifc.Name, ifc.State)
			}
			continue
		case gone:
			bad("%s: not in the kernel", ifc.Name)
			continue
		}
		if want, ok := kernelKinds[ifc.Type]; ok && l.Type() != want && !(n.devices[ifc.Name] && l.Type() == "device") {
			bad("%s: kernel kind %s, want %s", ifc.Name, l.Type(), want)
		}
		up := l.Attrs().Flags&net.FlagUp != 0
		if want := ifc.State != nmstate.StateDown; up != want {
			bad("%s: admin up %v, want %v", ifc.Name, up, want)
		}
		if want, ok := controllerOf[ifc.Name]; ok {
			n.checkController(l, want, bad)
			delete(controllerOf, ifc.Name)
		}
		for fam, cfg := range map[int]*nmstate.IPConfig{unix.AF_INET: ifc.IPv4, unix.AF_INET6: ifc.IPv6} {
			if cfg == nil || len(cfg.Address) == 0 {
				continue
			}
			addrs, err := h.AddrList(l, fam)
			if err != nil {
				bad("%s: listing addresses: %v", ifc.Name, err)
				continue
			}
			var have []string
			for _, a := range addrs {
				have = append(have, a.IPNet.String())
			}
			for _, a := range cfg.Address {
				if !slices.Contains(have, a.Prefix().String()) {
					bad("%s: address %s not in the kernel", ifc.Name, a.Prefix())
				}
			}
		}
	}
	for _, ifc := range desired.Interfaces {
		if br := ifc.LinuxBridge; br != nil && ifc.State != nmstate.StateAbsent {
			for _, p := range br.Port {
				if p.VLAN != nil {
					errs = append(errs, n.checkBridgeVLAN(p.Name, p.VLAN))
				}
			}
		}
	}
	// Ports named only in their controller's port list.
	for port, want := range controllerOf {
		l, err := h.LinkByName(port)
		if err != nil {
			bad("%s: port of %s: %v", port, want, err)
			continue
		}
		n.checkController(l, want, bad)
	}
	if desired.RouteRules != nil {
		for _, r := range desired.RouteRules.Config {
			if !r.IsAbsent() {
				if err := n.checkRule(r); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if d := desired.DNSResolver; d != nil && d.Config != nil {
		if err := n.checkResolvConf(d.Config); err != nil {
			errs = append(errs, err)
		}
	}
	if desired.Routes != nil {
		for _, r := range desired.Routes.Config {
			var err error
			switch {
			case r.IsAbsent():
				err = n.checkRouteGone(r)
			case r.Destination != nil:
				err = n.checkRoute(r)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if h := desired.Hostname; h != nil && h.Running != nil {
		got, err := n.hostname()
		switch {
		case err != nil:
			errs = append(errs, err)
		case got != *h.Running:
			errs = append(errs, fmt.Errorf("hostname %q, want %q", got, *h.Running))
		}
	}
	return errors.Join(errs...)
}

// checkController reports when l's controller is not want.
func (n *node) checkController(l netlink.Link, want string, bad func(string, ...any)) {
	got := ""
	if m := l.Attrs().MasterIndex; m != 0 {
		if ml, err := n.ns.Netlink.LinkByIndex(m); err == nil {
			got = ml.Attrs().Name
		}
	}
	if got != want {
		bad("%s: controller %q, want %q", l.Attrs().Name, got, want)
	}
}

// checkBridgeVLAN compares a bridge port's VLAN membership with the
// desired access or trunk configuration.
func (n *node) checkBridgeVLAN(port string, v *nmstate.BridgeVLAN) error {
	l, err := n.ns.Netlink.LinkByName(port)
	if err != nil {
		return fmt.Errorf("%s: %w", port, err)
	}
	all, err := n.ns.Netlink.BridgeVlanList()
	if err != nil {
		return fmt.Errorf("listing bridge vlans: %w", err)
	}
	got := map[uint16]string{} // vid -> "tagged", "untagged", "pvid untagged"...
	var begin uint16
	for _, info := range all[int32(l.Attrs().Index)] {
		kind := "tagged"
		if info.EngressUntag() {
			kind = "untagged"
		}
		if info.PortVID() {
			kind = "pvid " + kind
		}
		switch {
		case info.Flags&nl.BRIDGE_VLAN_INFO_RANGE_BEGIN != 0:
			begin = info.Vid
		case info.Flags&nl.BRIDGE_VLAN_INFO_RANGE_END != 0:
			for vid := begin; vid <= info.Vid; vid++ {
				got[vid] = kind
			}
		default:
			got[info.Vid] = kind
		}
	}
	want := map[uint16]string{}
	native := v.EnableNative != nil && *v.EnableNative
	if v.Mode != nil && *v.Mode == "access" || native {
		if v.Tag != nil {
			want[*v.Tag] = "pvid untagged"
		}
	}
	for _, tt := range v.TrunkTags {
		if tt.ID != nil {
			want[*tt.ID] = "tagged"
		}
		if r := tt.IDRange; r != nil {
			for vid := r.Min; vid <= r.Max; vid++ {
				want[vid] = "tagged"
			}
		}
	}
	if !maps.Equal(want, got) {
		return fmt.Errorf("%s: bridge vlans %v, want %v", port, got, want)
	}
	return nil
}

// checkRouteGone checks no static route matches an absent pattern (by
// next-hop interface, destination and table, where the pattern gives them).
func (n *node) checkRouteGone(r nmstate.Route) error {
	filter := &netlink.Route{Protocol: unix.RTPROT_STATIC, Table: unix.RT_TABLE_UNSPEC}
	mask := netlink.RT_FILTER_PROTOCOL | netlink.RT_FILTER_TABLE
	if r.TableID != nil && *r.TableID != 0 {
		filter.Table = int(*r.TableID)
	}
	if r.NextHopInterface != nil {
		l, err := n.ns.Netlink.LinkByName(*r.NextHopInterface)
		if err != nil {
			return nil // the interface is gone, and its routes with it
		}
		filter.LinkIndex = l.Attrs().Index
		mask |= netlink.RT_FILTER_OIF
	}
	routes, err := n.ns.Netlink.RouteListFiltered(unix.AF_UNSPEC, filter, mask)
	if err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	var left []string
	for _, k := range routes {
		if r.Destination != nil && (k.Dst == nil || k.Dst.String() != r.Destination.String()) {
			continue
		}
		left = append(left, k.String())
	}
	if len(left) > 0 {
		return fmt.Errorf("static routes left after an absent pattern: %v", left)
	}
	return nil
}

// hostname reads the hostname of the node's UTS namespace, on a locked
// thread switched into it and back (left locked, so discarded, if the
// switch back fails).
func (n *node) hostname() (string, error) {
	type result struct {
		name string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		name, back, err := unameIn(n.uts)
		if back {
			runtime.UnlockOSThread()
		}
		ch <- result{name, err}
	}()
	r := <-ch
	return r.name, r.err
}

func unameIn(path string) (name string, back bool, err error) {
	orig, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/uts", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", true, err
	}
	defer unix.Close(orig)
	target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", true, err
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWUTS); err != nil {
		return "", true, fmt.Errorf("entering uts namespace: %w", err)
	}
	var u unix.Utsname
	err = unix.Uname(&u)
	back = unix.Setns(orig, unix.CLONE_NEWUTS) == nil
	return unix.ByteSliceToString(u.Nodename[:]), back, err
}

// checkRoute finds a desired route in its table (a vrf-name's: the VRF
// link's) by destination, gateway and, for blackhole and similar types,
// route type.
func (n *node) checkRoute(r nmstate.Route) error {
	table := unix.RT_TABLE_MAIN
	if r.TableID != nil && *r.TableID != 0 {
		table = int(*r.TableID)
	}
	if r.VRFName != nil {
		l, err := n.ns.Netlink.LinkByName(*r.VRFName)
		if err != nil {
			return fmt.Errorf("vrf-name %s: %w", *r.VRFName, err)
		}
		vrf, ok := l.(*netlink.Vrf)
		if !ok {
			return fmt.Errorf("vrf-name %s: a %s link, not a vrf", *r.VRFName, l.Type())
		}
		table = int(vrf.Table)
	}
	_, dst, err := net.ParseCIDR(r.Destination.String())
	if err != nil {
		return err
	}
	filter := &netlink.Route{Table: table, Dst: dst}
	mask := netlink.RT_FILTER_TABLE | netlink.RT_FILTER_DST
	if r.NextHopAddress != nil && r.NextHopAddress.IsValid() {
		filter.Gw = net.IP(r.NextHopAddress.AsSlice())
		mask |= netlink.RT_FILTER_GW
	}
	fam := unix.AF_INET
	if r.Destination.Addr().Is6() {
		fam = unix.AF_INET6
	}
	routes, err := n.ns.Netlink.RouteListFiltered(fam, filter, mask)
	if err != nil {
		return fmt.Errorf("route %s: listing: %w", r.Destination, err)
	}
	want := unix.RTN_UNICAST
	if r.RouteType != nil && *r.RouteType == "blackhole" {
		want = unix.RTN_BLACKHOLE
	}
	for _, got := range routes {
		if got.Type == want {
			return nil
		}
	}
	return fmt.Errorf("route %s (table %d) not in the kernel (found %d candidates)", r.Destination, table, len(routes))
}

// checkRule finds a desired rule by priority, table, selectors and mark.
func (n *node) checkRule(r nmstate.RouteRule) error {
	fam := unix.AF_INET
	for _, p := range []*netip.Prefix{r.IPFrom, r.IPTo} {
		if p != nil && p.IsValid() && p.Addr().Is6() {
			fam = unix.AF_INET6
		}
	}
	rules, err := n.ns.Netlink.RuleList(fam)
	if err != nil {
		return fmt.Errorf("listing rules: %w", err)
	}
	prefix := func(ipn *net.IPNet) string {
		if ipn == nil {
			return ""
		}
		return ipn.String()
	}
	want := func(p *netip.Prefix) string {
		if p == nil || !p.IsValid() {
			return ""
		}
		return p.String()
	}
	for _, k := range rules {
		switch {
		case r.Priority != nil && int64(k.Priority) != *r.Priority,
			r.RouteTable != nil && uint32(k.Table) != *r.RouteTable,
			prefix(k.Src) != want(r.IPFrom), prefix(k.Dst) != want(r.IPTo),
			r.FWMark != nil && k.Mark != uint32(*r.FWMark),
			r.FWMask != nil && (k.Mask == nil || *k.Mask != uint32(*r.FWMask)):
			continue
		}
		return nil
	}
	return fmt.Errorf("rule from %s to %s not in the kernel (%d rules)", want(r.IPFrom), want(r.IPTo), len(rules))
}

// checkResolvConf reads the node's resolv.conf: the desired servers in
// order, the search domains and options as given.
func (n *node) checkResolvConf(c *nmstate.DNSConfig) error {
	data, err := os.ReadFile(n.resolv)
	if err != nil {
		return err
	}
	var servers, search, options []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			servers = append(servers, f[1:]...)
		case "search":
			search = append(search, f[1:]...)
		case "options":
			options = append(options, f[1:]...)
		}
	}
	var errs []error
	purge := c.Server == nil && c.Search == nil && c.Options == nil
	check := func(key string, want []string, got []string, given bool) {
		if (given || purge) && !slices.Equal(want, got) {
			errs = append(errs, fmt.Errorf("resolv.conf %s: %q, want %q", key, got, want))
		}
	}
	var wantServers []string
	for _, a := range c.Server {
		wantServers = append(wantServers, a.String())
	}
	check("nameserver", wantServers, servers, c.Server != nil)
	check("search", c.Search, search, c.Search != nil)
	check("options", c.Options, options, c.Options != nil)
	return errors.Join(errs...)
}
