package extension

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The address pool: `knmstate.io/ipv4-pool: "CIDR IFACE"` gives every node
// the policy selects its own address of CIDR on interface IFACE of the
// desired state (added to its ipv4.address, with CIDR's prefix length).
// The controller, the one writer, assigns the addresses and records them
// on the policy (PoolAddressesAnnotation: "node=address,..."), so a node's
// address never moves (handler restarts, policy updates) and two nodes
// never share one.
const (
	PoolAnnotation          = Prefix + "ipv4-pool"
	PoolAddressesAnnotation = Prefix + "ipv4-pool-addresses"
)

// WaitingPoolReason is the Waiting condition's reason while a node has no
// address of the pool yet.
const WaitingPoolReason = "AddressPool"

// Pool is a parsed PoolAnnotation with its record.
type Pool struct {
	Prefix netip.Prefix
	Iface  string
	// Addresses are the addresses assigned so far, by node.
	Addresses map[string]netip.Addr
}

func parsePool(annotations map[string]string) (*Pool, field.ErrorList) {
	v, ok := annotations[PoolAnnotation]
	rec, recOK := annotations[PoolAddressesAnnotation]
	if !ok {
		if recOK {
			return nil, field.ErrorList{field.Forbidden(annotationPath(PoolAddressesAnnotation), "set by the controller for "+PoolAnnotation+", which the policy does not have")}
		}
		return nil, nil
	}
	path := annotationPath(PoolAnnotation)
	cidr, iface, _ := strings.Cut(strings.TrimSpace(v), " ")
	iface = strings.TrimSpace(iface)
	prefix, err := netip.ParsePrefix(cidr)
	switch {
	case err != nil || !prefix.Addr().Is4():
		return nil, field.ErrorList{field.Invalid(path, v, `expected "CIDR IFACE", an IPv4 network and the interface of desiredState to give the addresses, e.g. "192.0.2.64/26 br1"`)}
	case prefix.Bits() > 30:
		return nil, field.ErrorList{field.Invalid(path, v, fmt.Sprintf("%s holds no address for a node (at most /30)", prefix))}
	case iface == "" || strings.ContainsAny(iface, " \t"):
		return nil, field.ErrorList{field.Invalid(path, v, `expected "CIDR IFACE": no interface named`)}
	}
	p := &Pool{Prefix: prefix.Masked(), Iface: iface, Addresses: map[string]netip.Addr{}}
	var errs field.ErrorList
	owner := map[netip.Addr]string{}
	if recOK && strings.TrimSpace(rec) != "" {
		for _, item := range strings.Split(rec, ",") {
			node, addr, _ := strings.Cut(strings.TrimSpace(item), "=")
			a, err := netip.ParseAddr(addr)
			switch {
			case node == "" || err != nil:
				errs = append(errs, field.Invalid(annotationPath(PoolAddressesAnnotation), item, "expected NODE=ADDRESS"))
			case !p.usable(a):
				errs = append(errs, field.Invalid(annotationPath(PoolAddressesAnnotation), item, fmt.Sprintf("%s is not a node address of %s", a, p.Prefix)))
			case owner[a] != "":
				errs = append(errs, field.Invalid(annotationPath(PoolAddressesAnnotation), item, fmt.Sprintf("%s is %s's already", a, owner[a])))
			default:
				owner[a] = node
				p.Addresses[node] = a
			}
		}
	}
	return p, errs
}

// usable reports whether a is a node address of the pool: inside it, not
// its network or broadcast address.
func (p *Pool) usable(a netip.Addr) bool {
	if !p.Prefix.Contains(a) || a == p.Prefix.Addr() {
		return false
	}
	return a.Next().IsValid() && p.Prefix.Contains(a.Next())
}

// Assign gives every node of nodes without an address the lowest free
// one, in the order given; nodes left without one (the pool is full) are
// returned. Addresses already assigned never change.
func (p *Pool) Assign(nodes []string) (full []string) {
	used := map[netip.Addr]bool{}
	for _, a := range p.Addresses {
		used[a] = true
	}
	next := p.Prefix.Addr().Next()
	for _, n := range nodes {
		if _, ok := p.Addresses[n]; ok {
			continue
		}
		for p.usable(next) && used[next] {
			next = next.Next()
		}
		if !p.usable(next) {
			full = append(full, n)
			continue
		}
		p.Addresses[n] = next
		used[next] = true
	}
	return full
}

// Record is PoolAddressesAnnotation's value: "node=address", by node name.
func (p *Pool) Record() string {
	var items []string
	for _, n := range slices.Sorted(maps.Keys(p.Addresses)) {
		items = append(items, n+"="+p.Addresses[n].String())
	}
	return strings.Join(items, ",")
}

// FillPool adds a node's address of the pool to the pool's interface of a
// desiredState document (ipv4 enabled, the address with the pool's prefix
// length). doc is not modified.
func FillPool(doc any, p *Pool, addr netip.Addr) (any, error) {
	out := walkStrings(doc, "", func(_, s string) string { return s }) // a copy
	root, _ := out.(map[string]any)
	ifaces, _ := root["interfaces"].([]any)
	for _, i := range ifaces {
		iface, ok := i.(map[string]any)
		if !ok || iface["name"] != p.Iface {
			continue
		}
		ipv4, _ := iface["ipv4"].(map[string]any)
		if ipv4 == nil {
			ipv4 = map[string]any{}
			iface["ipv4"] = ipv4
		}
		ipv4["enabled"] = true
		addrs, _ := ipv4["address"].([]any)
		ipv4["address"] = append(addrs, map[string]any{"ip": addr.String(), "prefix-length": int64(p.Prefix.Bits())})
		return out, nil
	}
	return nil, fmt.Errorf("%s: interface %q of the address pool is not in desiredState.interfaces", PoolAnnotation, p.Iface)
}
