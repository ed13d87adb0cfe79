package labnet

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

// resolverIn returns a resolver whose sockets are opened inside the node
// namespace and sent to server.
func resolverIn(n *NS, server string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var c net.Conn
			err := n.Do(func() (err error) {
				var d net.Dialer
				c, err = d.DialContext(ctx, network, server)
				return err
			})
			return c, err
		},
	}
}

func TestSwitchServesLocalZoneOnly(t *testing.T) {
	sw := newTestSwitch(t, Options{Records: map[string]netip.Addr{"api.lab.example": netip.MustParseAddr("192.0.2.10")}})
	node, err := sw.AddNode("node1", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	// A static address so the node can talk to the switch; configuring
	// NICs is normally the code under test's job.
	l, err := node.NS.Netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if err := node.NS.Netlink.AddrAdd(l, &netlink.Addr{IPNet: prefixIPNet(netip.MustParsePrefix("192.0.2.50/24"))}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := resolverIn(node.NS, "192.0.2.1:53")
	got, err := r.LookupHost(ctx, "api.lab.example")
	if err != nil {
		t.Fatalf("looking up api.lab.example: %v", err)
	}
	if len(got) != 1 || got[0] != "192.0.2.10" {
		t.Errorf("api.lab.example = %v, want [192.0.2.10]", got)
	}
	// Nothing is forwarded upstream: a name outside the zone fails.
	if addrs, err := r.LookupHost(ctx, "www.example.com"); err == nil {
		t.Errorf("www.example.com resolved to %v; the switch must not forward", addrs)
	}
}
