package bench

import (
	"fmt"
	"strings"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Workload is one desired state and the iproute2 batch that makes the
// same kernel objects (links, ports, up states, addresses, routes) in an
// empty namespace.
type Workload struct {
	Name  string
	State *nmstate.State
	// Batch holds `ip -batch` lines, in an order iproute2 accepts.
	Batch []string
}

// routeMetric is the metric both sides give every generated route, so
// they install identical routes.
const routeMetric = 100

// builder accumulates the YAML of a state and the equivalent batch.
type builder struct {
	ifaces, routes strings.Builder
	links, ports   []string
	ups, addrs     []string
	routeLines     []string
}

// veth adds a veth pair; addr ("" = none) is an IPv4 CIDR on name.
func (b *builder) veth(name, peer, addr string) {
	fmt.Fprintf(&b.ifaces, "- name: %s\n  type: veth\n  state: up\n  veth: {peer: %s}\n", name, peer)
	b.ipv4(name, addr)
	fmt.Fprintf(&b.ifaces, "- name: %s\n  type: veth\n  state: up\n", peer)
	b.links = append(b.links, fmt.Sprintf("link add %s type veth peer name %s", name, peer))
	b.ups = append(b.ups, "link set "+name+" up", "link set "+peer+" up")
}

// bridge adds a linux bridge with STP off, ports and an IPv4 CIDR.
func (b *builder) bridge(name string, ports []string, addr string) {
	fmt.Fprintf(&b.ifaces, "- name: %s\n  type: linux-bridge\n  state: up\n  bridge:\n    options: {stp: {enabled: false}}\n    port:\n", name)
	for _, p := range ports {
		fmt.Fprintf(&b.ifaces, "    - name: %s\n", p)
		b.ports = append(b.ports, fmt.Sprintf("link set %s master %s", p, name))
	}
	b.ipv4(name, addr)
	b.links = append(b.links, fmt.Sprintf("link add %s type bridge stp_state 0", name))
	b.ups = append(b.ups, "link set "+name+" up")
}

func (b *builder) ipv4(name, addr string) {
	if addr == "" {
		return
	}
	ip, plen, _ := strings.Cut(addr, "/")
	fmt.Fprintf(&b.ifaces, "  ipv4:\n    enabled: true\n    dhcp: false\n    address:\n    - {ip: %s, prefix-length: %s}\n", ip, plen)
	b.addrs = append(b.addrs, fmt.Sprintf("addr add %s dev %s", addr, name))
}

// route adds a main-table route through a gateway.
func (b *builder) route(dst, via, dev string) {
	fmt.Fprintf(&b.routes, "  - {destination: %s, next-hop-address: %s, next-hop-interface: %s, metric: %d, table-id: 254}\n", dst, via, dev, routeMetric)
	b.routeLines = append(b.routeLines, fmt.Sprintf("route add %s via %s dev %s metric %d table 254 proto static", dst, via, dev, routeMetric))
}

// workload decodes the accumulated state; the batch creates links, then
// attaches ports, brings links up, adds addresses and routes (the order the
// engine's plan uses).
func (b *builder) workload(name string) (*Workload, error) {
	doc := "interfaces:\n" + b.ifaces.String()
	if b.routes.Len() > 0 {
		doc += "routes:\n  config:\n" + b.routes.String()
	}
	s, err := nmstate.Decode([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", name, err)
	}
	var batch []string
	for _, l := range [][]string{b.links, b.ports, b.ups, b.addrs, b.routeLines} {
		batch = append(batch, l...)
	}
	return &Workload{Name: name, State: s, Batch: batch}, nil
}

// Apply50 is the 50-interface state: 25 veth pairs, 5 bridges
// each with 5 of the peers as ports, an address on every bridge and on
// every veth that is not a port, and 50 routes through those veths.
func Apply50() (*Workload, error) {
	var b builder
	const pairs, bridges, routes = 25, 5, 50
	for i := range pairs {
		b.veth(fmt.Sprintf("veth%d", i), fmt.Sprintf("veth%dp", i), fmt.Sprintf("10.0.%d.1/24", i))
	}
	for k := range bridges {
		var ports []string
		for i := k * pairs / bridges; i < (k+1)*pairs/bridges; i++ {
			ports = append(ports, fmt.Sprintf("veth%dp", i))
		}
		b.bridge(fmt.Sprintf("br%d", k), ports, fmt.Sprintf("172.16.%d.1/24", k))
	}
	for r := range routes {
		i := r % pairs
		b.route(fmt.Sprintf("198.18.%d.0/24", r), fmt.Sprintf("10.0.%d.2", i), fmt.Sprintf("veth%d", i))
	}
	return b.workload("apply50")
}

// Bridges is n linux bridges, each with one veth port (the peer of the
// pair stays outside the bridge) and an IPv4 address (the later bench
// issue's engine.bridges1000 with n = 1000).
func Bridges(n int) (*Workload, error) {
	if n > 250*256 {
		return nil, fmt.Errorf("bridges: %d is more than the address plan holds", n)
	}
	var b builder
	for i := range n {
		b.veth(fmt.Sprintf("v%d", i), fmt.Sprintf("v%dp", i), "")
	}
	for i := range n {
		b.bridge(fmt.Sprintf("br%d", i), []string{fmt.Sprintf("v%dp", i)}, fmt.Sprintf("10.%d.%d.1/24", 1+i/256, i%256))
	}
	return b.workload(fmt.Sprintf("bridges%d", n))
}

// ShowSetup is the iproute2 batch that fills a namespace for the Show
// comparison: links/2 veth pairs (all up), an address on every
// addressed-th first end, and routes static routes spread over the
// addressed veths.
func ShowSetup(links, routes int) []string {
	const every = 4 // one pair in four carries an address and routes
	var lines, ups, addrs []string
	var gw []string
	for i := range links / 2 {
		v, p := fmt.Sprintf("s%d", i), fmt.Sprintf("s%dp", i)
		lines = append(lines, fmt.Sprintf("link add %s type veth peer name %s", v, p))
		ups = append(ups, "link set "+v+" up", "link set "+p+" up")
		if i%every == 0 {
			n := len(gw)
			addrs = append(addrs, fmt.Sprintf("addr add 10.%d.%d.1/24 dev %s", 1+n/256, n%256, v))
			gw = append(gw, fmt.Sprintf("10.%d.%d.2 dev %s", 1+n/256, n%256, v))
		}
	}
	lines = append(append(lines, ups...), addrs...)
	for r := range routes {
		lines = append(lines, fmt.Sprintf("route add 100.%d.%d.0/24 via %s metric %d proto static", 64+r/256, r%256, gw[r%len(gw)], routeMetric))
	}
	return lines
}
