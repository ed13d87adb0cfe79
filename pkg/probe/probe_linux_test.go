package probe

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// lab is a switch (gateway 192.0.2.1, 2001:db8::1, dnsmasq serving
// lab.example) with one node whose eth0 has static addresses.
type lab struct {
	sw   *labnet.Switch
	node *labnet.Node
}

func newLab(t *testing.T) *lab {
	t.Helper()
	ctx := context.Background()
	sw, err := labnet.NewSwitch(ctx, labnet.Options{
		Records: map[string]netip.Addr{
			"probe.lab.example": netip.MustParseAddr("192.0.2.50"),
			"gw.lab.example":    netip.MustParseAddr("192.0.2.1"),
		},
	})
	t.Cleanup(func() {
		if sw != nil {
			if err := sw.Close(); err != nil {
				t.Errorf("closing switch: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatalf("switch: %v", err)
	}
	n, err := sw.AddNode("n1", "eth0")
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	l, err := n.NS.Netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"192.0.2.10/24", "2001:db8::10/64"} {
		addr, _ := netlink.ParseAddr(a)
		addr.Flags = unix.IFA_F_NODAD
		if err := n.NS.Netlink.AddrAdd(l, addr); err != nil {
			t.Fatalf("adding %s: %v", a, err)
		}
	}
	return &lab{sw: sw, node: n}
}

// switchLinkLocal returns the switch bridge's link-local address once DAD
// is done.
func (l *lab) switchLinkLocal(t *testing.T, ctx context.Context) netip.Addr {
	t.Helper()
	br, err := l.sw.NS.Netlink.LinkByName(labnet.BridgeName)
	if err != nil {
		t.Fatal(err)
	}
	var ll netip.Addr
	if err := Poll(ctx, 30*time.Second, 100*time.Millisecond, func(context.Context) error {
		addrs, err := l.sw.NS.Netlink.AddrList(br, netlink.FAMILY_V6)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.IsLinkLocalUnicast() && a.Flags&unix.IFA_F_TENTATIVE == 0 {
				ll = ip
				return nil
			}
		}
		return errors.New("no usable link-local address on the switch bridge yet")
	}); err != nil {
		t.Fatal(err)
	}
	return ll
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestPingInsideNamespace(t *testing.T) {
	l := newLab(t)
	ctx := ctxT(t)
	gw4, gw6 := l.sw.Gateways()
	// Neighbour resolution of a fresh veth may take a moment: poll.
	for _, gw := range []netip.Addr{gw4, gw6} {
		if err := Poll(ctx, 30*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
			return Ping(ctx, l.node.NS.Path, gw, "eth0")
		}); err != nil {
			t.Errorf("ping %s: %v", gw, err)
		}
	}
	// The gateway's link-local address, as a router advertisement gives it.
	ll := l.switchLinkLocal(t, ctx)
	if err := Poll(ctx, 30*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		return Ping(ctx, l.node.NS.Path, ll, "eth0")
	}); err != nil {
		t.Errorf("ping %s%%eth0: %v", ll, err)
	}
	// Nobody has this address: no reply.
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := Ping(actx, l.node.NS.Path, netip.MustParseAddr("192.0.2.77"), "eth0"); err == nil {
		t.Error("ping of an absent address passed")
	}
	// The socket is bound to the device in the given namespace: the switch
	// namespace has no eth0.
	actx2, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	if err := Ping(actx2, l.sw.NS.Path, gw4, "eth0"); err == nil {
		t.Error("ping bound to a device the namespace lacks passed")
	}
}

func TestResolveInsideNamespace(t *testing.T) {
	l := newLab(t)
	ctx := ctxT(t)
	gw4, gw6 := l.sw.Gateways()
	if err := Resolve(ctx, l.node.NS.Path, []netip.Addr{gw4}, "probe.lab.example"); err != nil {
		t.Errorf("resolve through %s: %v", gw4, err)
	}
	if err := Resolve(ctx, l.node.NS.Path, []netip.Addr{netip.MustParseAddr("192.0.2.77"), gw6}, "probe.lab.example"); err != nil {
		t.Errorf("resolve through a dead server and %s: %v", gw6, err)
	}
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := Resolve(actx, l.node.NS.Path, []netip.Addr{netip.MustParseAddr("192.0.2.77")}, "probe.lab.example"); err == nil {
		t.Error("resolve through a dead server passed")
	}
	ll := l.switchLinkLocal(t, ctx).WithZone("eth0")
	if err := Poll(ctx, 30*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		return Resolve(ctx, l.node.NS.Path, []netip.Addr{ll}, "probe.lab.example")
	}); err != nil {
		t.Errorf("resolve through %s: %v", ll, err)
	}
	// Names the switch does not serve: a definitive answer, not a timeout.
	for _, name := range []string{"missing.lab.example", DefaultDNSHost} {
		if err := Resolve(ctx, l.node.NS.Path, []netip.Addr{gw4, gw6}, name); !errors.Is(err, errAnswered) {
			t.Errorf("resolve %s = %v, want an answered no", name, err)
		}
	}
	if err := Resolve(ctx, l.node.NS.Path, nil, "probe.lab.example"); err == nil || !strings.Contains(err.Error(), "no name servers") {
		t.Errorf("resolve without servers = %v, want no name servers", err)
	}
}

// TestTCPInsideNamespace: the connection is made from the node (the
// switch's DNS server's TCP port, by address and by a name looked up
// through the switch), not from this process's namespace (a listener on
// this machine's loopback is out of reach).
func TestTCPInsideNamespace(t *testing.T) {
	l := newLab(t)
	ctx := ctxT(t)
	gw4, _ := l.sw.Gateways()
	for _, addr := range []string{"192.0.2.1:53", "gw.lab.example:53"} {
		if err := Poll(ctx, 30*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
			return TCP(ctx, l.node.NS.Path, []netip.Addr{gw4}, addr)
		}); err != nil {
			t.Errorf("tcp %s: %v", addr, err)
		}
	}
	if err := TCP(ctx, l.node.NS.Path, []netip.Addr{gw4}, "192.0.2.1:1"); err == nil {
		t.Error("tcp to a closed port passed")
	}
	if err := TCP(ctx, l.node.NS.Path, []netip.Addr{gw4}, "missing.lab.example:53"); err == nil {
		t.Error("tcp to a name nobody serves passed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := TCP(ctx, l.node.NS.Path, nil, ln.Addr().String()); err == nil {
		t.Errorf("tcp to this machine's loopback listener %s passed from the node's namespace", ln.Addr())
	}
}

func TestProbesReadTargetsFromLiveState(t *testing.T) {
	l := newLab(t)
	ctx := ctxT(t)
	state := `routes: {running: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth0, table-id: 254}]}
dns-resolver: {running: {server: [192.0.2.1]}}`
	o := Options{
		NetNS:         l.node.NS.Path,
		DNSHost:       "probe.lab.example",
		Show:          func(context.Context) (*nmstate.State, error) { return nmstate.Decode([]byte(state)) },
		PingTimeout:   10 * time.Second,
		DNSTimeout:    10 * time.Second,
		SelectTimeout: 10 * time.Second,
		Interval:      200 * time.Millisecond,
	}
	passed := Passing(ctx, o.All(), o.WithDefaults().SelectTimeout, o.Interval)
	if !passed[PingName] || !passed[DNSName] {
		t.Fatalf("Passing = %v, want ping and dns", passed)
	}
	// The gateway moves to an address nobody answers: ping fails.
	state = `routes: {running: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.77, next-hop-interface: eth0, table-id: 254}]}`
	o.PingTimeout, o.DNSTimeout = 2*time.Second, 2*time.Second
	err := Run(ctx, Select(o.All(), passed), o.Interval)
	if err == nil || !strings.Contains(err.Error(), "probe ping") {
		t.Errorf("Run = %v, want the ping probe to fail", err)
	}
}
