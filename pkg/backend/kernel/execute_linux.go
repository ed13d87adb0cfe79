package kernel

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Execute carries out the plan's operations in order and stops at the
// first error, which is wrapped with the operation's text. Every operation
// is idempotent: creating what exists with the same kind converges it,
// deleting what is gone succeeds, adds are replaces.
func (b *Backend) Execute(ctx context.Context, p *nmstate.Plan) error {
	if p == nil {
		return nil
	}
	ex := &executor{b: b, links: linkCache{b: b}}
	for i := 0; i < len(p.Ops); {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A run of sysctl writes shares one namespace switch.
		if n := sysctlRun(p.Ops[i:]); n > 0 {
			if err := b.sysctlSetAll(p.Ops[i : i+n]); err != nil {
				return err
			}
			i += n
			continue
		}
		op := p.Ops[i]
		if err := ex.run(op); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		i++
	}
	return nil
}

// executor holds what one Execute call caches between operations.
type executor struct {
	b *Backend
	// links resolves interface names (see linkCache).
	links linkCache
	// routes is the static route table read on the first route operation
	// that needs it, and kept up to date by this executor's own changes.
	routes []knownRoute
	// weights remembers the weight of next hops this executor installed:
	// a multipath route with one next hop is stored as a plain route,
	// which forgets it before the second next hop arrives.
	weights map[routeIdentity]uint16
	// bondPorts holds ports-config entries for ports not yet attached to
	// their bond.
	bondPorts map[string]pendingPortConfig
}

func (ex *executor) run(op nmstate.Op) error {
	b := ex.b
	switch o := op.(type) {
	case nmstate.LinkDelete:
		if err := ex.linkDelete(o.Name); err != nil {
			return err
		}
		return ex.b.removeSupplicant(o.Name)
	case nmstate.LinkCreate:
		return ex.linkCreate(o.Iface)
	case nmstate.LinkModify:
		return ex.linkModify(o.Iface)
	case nmstate.LinkSetController:
		return ex.linkSetController(o.Name, o.Controller)
	case nmstate.BridgePortSet:
		return ex.bridgePortSet(o.Bridge, o.Port)
	case nmstate.BridgeVLANSet:
		return ex.bridgeVLANSet(o.Bridge, o.Name, o.VLAN)
	case nmstate.BridgeVLANFiltering:
		return ex.bridgeVLANFiltering(o.Bridge, o.On)
	case nmstate.LinkSetState:
		return ex.linkSetState(o.Name, o.Up)
	case nmstate.SysctlSet:
		return b.sysctlSet(o.Iface, o.Key, o.Value)
	case nmstate.AddrAdd:
		return ex.addrAdd(o.Iface, o.Address)
	case nmstate.AddrDelete:
		return ex.addrDelete(o.Iface, o.Address)
	case nmstate.RouteReplace:
		return ex.routeReplace(o.Route)
	case nmstate.RouteDelete:
		return ex.routeDelete(o.Route)
	case nmstate.RuleAdd:
		return b.ruleAdd(o.Rule)
	case nmstate.RuleDelete:
		return b.ruleDelete(o.Rule)
	case nmstate.DNSWrite:
		if b.opts.ResolvConf == "" {
			return notSupported("no resolv.conf file configured for this backend")
		}
		return classify(b.writeDNS(o.Config))
	case nmstate.HostnameSet:
		if b.uts < 0 {
			return notSupported("no UTS namespace configured for this backend")
		}
		return classify(b.setHostname(o.Name))
	case nmstate.HostnameDynamic:
		return classify(b.setHostnameDynamic())
	}
	return &kernelError{kind: nmstate.Bug, msg: fmt.Sprintf("unknown operation %T", op)}
}

// linkByName finds a link; ok is false when it does not exist.
func (b *Backend) linkByName(name string) (netlink.Link, bool, error) {
	l, err := b.h.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return nil, false, nil
		}
		return nil, false, classify(err)
	}
	return l, true, nil
}

// mustLink finds a link that has to exist.
func (b *Backend) mustLink(name string) (netlink.Link, error) {
	l, ok, err := b.linkByName(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &kernelError{kind: nmstate.Dependency, msg: "interface " + name + " does not exist"}
	}
	return l, nil
}

func (ex *executor) linkSetState(name string, up bool) error {
	l, err := ex.links.mustLink(name)
	if err != nil {
		return err
	}
	if up {
		return classify(ex.b.h.LinkSetUp(l))
	}
	return classify(ex.b.h.LinkSetDown(l))
}

// sysctlSet writes a per-namespace sysctl under /proc/sys/net from a thread
// inside the namespace (the file shows the opener's namespace). Only net.*
// keys are accepted: the others are not per namespace and would change
// the host. The interface part of the key is kept verbatim, since
// interface names may contain dots.
func (b *Backend) sysctlSet(iface, key, value string) error {
	path, err := sysctlPath(iface, key)
	if err != nil {
		return err
	}
	return classify(b.inNetNS(func() error { return writeSysctl(path, value) }))
}

func writeSysctl(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// sysctlRun is the number of SysctlSet operations at the start of ops.
func sysctlRun(ops []nmstate.Op) int {
	n := 0
	for _, op := range ops {
		if _, ok := op.(nmstate.SysctlSet); !ok {
			break
		}
		n++
	}
	return n
}

// sysctlSetAll writes a run of SysctlSet operations in order from one
// thread switched into the namespace once (a switch per write costs more
// than the write). It stops at the first failure, wrapped with that
// operation's text as Execute does.
func (b *Backend) sysctlSetAll(ops []nmstate.Op) error {
	paths := make([]string, len(ops))
	for i, op := range ops {
		o := op.(nmstate.SysctlSet)
		path, err := sysctlPath(o.Iface, o.Key)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		paths[i] = path
	}
	failed := -1
	err := b.inNetNS(func() error {
		for i, op := range ops {
			if err := writeSysctl(paths[i], op.(nmstate.SysctlSet).Value); err != nil {
				failed = i
				return err
			}
		}
		return nil
	})
	if err == nil {
		return nil
	}
	if failed < 0 {
		return fmt.Errorf("%s: %w", ops[0], classify(err))
	}
	return fmt.Errorf("%s: %w", ops[failed], classify(err))
}

func sysctlPath(iface, key string) (string, error) {
	if !strings.HasPrefix(key, "net.") || strings.Contains(key, "/") || strings.Contains(key, "..") {
		return "", &kernelError{kind: nmstate.InvalidArgument, msg: fmt.Sprintf("sysctl %q is not a per-namespace net.* key", key)}
	}
	rel := strings.ReplaceAll(key, ".", "/")
	if iface != "" {
		if i := strings.Index(key, "."+iface+"."); i >= 0 {
			rel = strings.ReplaceAll(key[:i], ".", "/") + "/" + iface + "/" + strings.ReplaceAll(key[i+len(iface)+2:], ".", "/")
		}
	}
	return filepath.Join("/proc/sys", rel), nil
}

func (ex *executor) addrAdd(iface string, a nmstate.Address) error {
	l, err := ex.links.mustLink(iface)
	if err != nil {
		return err
	}
	na := addressToAddr(a)
	// Explicit infinite lifetimes: replacing a leased address makes it
	// static.
	na.ValidLft, na.PreferedLft = lifetimeForever, lifetimeForever
	return classify(ex.b.h.AddrReplace(l, na))
}

func (ex *executor) addrDelete(iface string, a nmstate.Address) error {
	l, ok, err := ex.links.lookup(iface)
	if err != nil || !ok {
		return err // a missing link has no addresses left
	}
	err = ex.b.h.AddrDel(l, addressToAddr(a))
	if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
		return nil
	}
	return classify(err)
}

// routeReplace installs the route with protocol static, then removes
// static routes of the same nmstate identity (which ignores the metric)
// left with another metric, so a metric change does not leave the old
// route behind. The static routes are read once per Execute, on the
// first replace, and then follow this executor's changes.
func (ex *executor) routeReplace(r nmstate.Route) error {
	if r.Weight != nil {
		return ex.multipathSet(r, false)
	}
	b := ex.b
	req, err := b.routeRequest(r, false, ex.links.ifindex)
	if err != nil {
		return classify(err)
	}
	if _, err := b.rawRequest(req, 0); err != nil {
		return classify(err)
	}
	if err := ex.loadRoutes(); err != nil {
		return err
	}
	want, err := ex.identity(r)
	if err != nil {
		return err
	}
	installed := installedRoute(r, want)
	keep := ex.routes[:0]
	var stale []kernelRoute
	for _, kr := range ex.routes {
		if kr.id == want {
			stale = append(stale, kr.kernelRoute)
			continue
		}
		keep = append(keep, kr)
	}
	ex.routes = append(keep, knownRoute{installed, installed.identity()})
	for _, kr := range stale {
		if kr.metric == installed.metric {
			continue
		}
		if err := b.deleteKernelRoute(kr); err != nil {
			return err
		}
	}
	return nil
}

// installedRoute is the route the kernel holds after a replace of r, as
// far as its identity and metric go: an unset metric is the family's
// default.
func installedRoute(r nmstate.Route, id routeIdentity) kernelRoute {
	kr := kernelRoute{family: unix.AF_INET, dst: r.Destination.Masked(), table: id.table, typ: id.typ, oif: id.oif, protocol: unix.RTPROT_STATIC}
	if kr.dst.Addr().Is6() {
		kr.family = unix.AF_INET6
	}
	if id.gw != "" {
		kr.gw, _ = netip.ParseAddr(id.gw)
	}
	kr.metric = defaultMetric(kr.family)
	if r.Metric != nil && *r.Metric >= 0 {
		kr.metric = uint32(*r.Metric)
	}
	return kr
}

func defaultMetric(family uint8) uint32 {
	if family == unix.AF_INET6 {
		return 1024
	}
	return 0
}

func (ex *executor) routeDelete(r nmstate.Route) error {
	if r.Weight != nil {
		return ex.multipathSet(r, true)
	}
	b := ex.b
	req, err := b.routeRequest(r, true, func(name string) (int, error) {
		l, ok, err := ex.links.lookup(name)
		if err != nil || !ok {
			return 0, errLinkGone
		}
		return l.Attrs().Index, nil
	})
	if errors.Is(err, errLinkGone) {
		return nil // the route went with its interface
	}
	if err != nil {
		return classify(err)
	}
	_, err = b.rawRequest(req, 0)
	ex.routes = nil
	if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
		return nil
	}
	return classify(err)
}

var errLinkGone = errors.New("link gone")

// loadRoutes reads the static and boot routes once per Execute.
func (ex *executor) loadRoutes() error {
	if ex.routes != nil {
		return nil
	}
	all, err := ex.b.dumpRoutes()
	if err != nil {
		return classify(err)
	}
	ex.routes = []knownRoute{}
	for _, r := range all {
		if routeShown(r, false) {
			ex.routes = append(ex.routes, knownRoute{r, r.identity()})
		}
	}
	return nil
}

// knownRoute is a route of the executor's table with its identity, which
// every replace compares against.
type knownRoute struct {
	kernelRoute
	id routeIdentity
}

// routeIdentity is nmstate's route identity minus the metric.
type routeIdentity struct {
	dst   string
	table uint32
	oif   int
	gw    string
	typ   uint8
}

func (r kernelRoute) identity() routeIdentity {
	gw := ""
	if r.gw.IsValid() && !r.gw.IsUnspecified() {
		gw = r.gw.Unmap().String()
	}
	return routeIdentity{dst: r.dst.Masked().String(), table: r.table, oif: r.oif, gw: gw, typ: r.typ}
}

func (ex *executor) identity(r nmstate.Route) (routeIdentity, error) {
	id := routeIdentity{dst: r.Destination.Masked().String(), table: unix.RT_TABLE_MAIN, typ: unix.RTN_UNICAST}
	if r.TableID != nil && *r.TableID != 0 {
		id.table = *r.TableID
	}
	if r.RouteType != nil {
		for t, name := range routeTypes {
			if name == *r.RouteType {
				id.typ = t
			}
		}
		return id, nil
	}
	if r.NextHopInterface != nil && *r.NextHopInterface != "" {
		idx, err := ex.links.ifindex(*r.NextHopInterface)
		if err != nil {
			return id, err
		}
		id.oif = idx
	}
	if r.NextHopAddress != nil && r.NextHopAddress.IsValid() && !r.NextHopAddress.IsUnspecified() {
		id.gw = r.NextHopAddress.Unmap().String()
	}
	return id, nil
}

// deleteKernelRoute removes one route as read from the kernel.
func (b *Backend) deleteKernelRoute(kr kernelRoute) error {
	r := nmstate.Route{Destination: ptr(kr.dst), TableID: ptr(kr.table), Metric: ptr(int64(kr.metric))}
	if t, ok := routeTypes[kr.typ]; ok {
		r.RouteType = &t
	}
	req, err := b.routeRequest(r, true, nil)
	if err != nil {
		return classify(err)
	}
	if kr.oif != 0 {
		req.AddData(nl.NewRtAttr(unix.RTA_OIF, nl.Uint32Attr(uint32(kr.oif))))
	}
	if kr.gw.IsValid() {
		req.AddData(nl.NewRtAttr(unix.RTA_GATEWAY, kr.gw.AsSlice()))
	}
	_, err = b.rawRequest(req, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return classify(err)
}

func (b *Backend) ruleAdd(r nmstate.RouteRule) error {
	nr, err := routeRuleToRule(r)
	if err != nil {
		return classify(err)
	}
	err = b.h.RuleAdd(nr)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return classify(err)
}

func (b *Backend) ruleDelete(r nmstate.RouteRule) error {
	nr, err := routeRuleToRule(r)
	if err != nil {
		return classify(err)
	}
	err = b.h.RuleDel(nr)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return classify(err)
}

// multipathSet adds (or, with remove, takes out) one weighted next hop of
// an IPv4 ECMP route. nmstate lists each next hop as its own route with a
// weight; the kernel holds one route with RTA_MULTIPATH, so the route is
// rebuilt from its current next hops (same destination, table, metric)
// plus or minus this one. A route left with one next hop is a plain route
// to the kernel and reads back without weight.
func (ex *executor) multipathSet(r nmstate.Route, remove bool) error {
	b := ex.b
	if r.Destination == nil || !r.Destination.Addr().Is4() {
		return notSupported("route weight (ECMP) is supported for IPv4 routes only")
	}
	if err := ex.loadRoutes(); err != nil {
		return err
	}
	want, err := ex.identity(r)
	if err != nil {
		if remove && nmstate.KindOf(err) == nmstate.Dependency {
			return nil // the next hop went with its interface
		}
		return err
	}
	metric := uint32(0)
	if r.Metric != nil && *r.Metric >= 0 {
		metric = uint32(*r.Metric)
	}
	type hop struct {
		oif    int
		gw     []byte
		weight uint16
	}
	var hops []hop
	for _, kr := range ex.routes {
		id := kr.id
		if kr.typ != unix.RTN_UNICAST || id.dst != want.dst || kr.table != want.table || kr.metric != metric {
			continue
		}
		if id.oif == want.oif && id.gw == want.gw {
			continue // this next hop: replaced or removed
		}
		w := kr.weight
		if w == 0 {
			w = 1
			if rw, ok := ex.weights[id]; ok {
				w = rw
			}
		}
		var gw []byte
		if kr.gw.IsValid() {
			gw = kr.gw.Unmap().AsSlice()
		}
		hops = append(hops, hop{oif: kr.oif, gw: gw, weight: w})
	}
	if !remove {
		var gw []byte
		if r.NextHopAddress != nil && r.NextHopAddress.IsValid() && !r.NextHopAddress.IsUnspecified() {
			gw = r.NextHopAddress.Unmap().AsSlice()
		}
		hops = append(hops, hop{oif: want.oif, gw: gw, weight: *r.Weight})
		if ex.weights == nil {
			ex.weights = map[routeIdentity]uint16{}
		}
		ex.weights[want] = *r.Weight
	}
	ex.routes = nil
	base := nmstate.Route{Destination: r.Destination, TableID: ptr(want.table), Metric: ptr(int64(metric)), Source: r.Source}
	if len(hops) == 0 {
		req, err := b.routeRequest(base, true, nil)
		if err != nil {
			return classify(err)
		}
		if _, err := b.rawRequest(req, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return classify(err)
		}
		return nil
	}
	req, err := b.routeRequest(base, false, nil)
	if err != nil {
		return classify(err)
	}
	req.Data[0].(*nl.RtMsg).Scope = unix.RT_SCOPE_UNIVERSE
	var mp []byte
	for _, h := range hops {
		var attrs []byte
		if h.gw != nil {
			attrs = nl.NewRtAttr(unix.RTA_GATEWAY, h.gw).Serialize()
		}
		// struct rtnexthop { u16 len; u8 flags; u8 hops (weight-1); s32 ifindex; }
		rtnh := make([]byte, 8)
		nl.NativeEndian().PutUint16(rtnh, uint16(8+len(attrs)))
		rtnh[3] = byte(h.weight - 1)
		nl.NativeEndian().PutUint32(rtnh[4:], uint32(h.oif))
		mp = append(append(mp, rtnh...), attrs...)
	}
	req.AddData(nl.NewRtAttr(unix.RTA_MULTIPATH, mp))
	_, err = b.rawRequest(req, 0)
	return classify(err)
}
