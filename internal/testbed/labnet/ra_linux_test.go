package labnet

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestRADefaultRouteSurvivesGatewayProbe checks that the switch behaves as
// a router towards the nodes' neighbour discovery, not only in its router
// advertisements: when a node confirms the gateway's reachability (what
// NUD does about every 30 s on an idle node), the advertisement that
// answers must keep the Router flag, or the node's kernel drops the RA
// default route until the next advertisement (a flapping route that made
// idle nodes report changed state).
func TestRADefaultRouteSurvivesGatewayProbe(t *testing.T) {
	sw := newTestSwitch(t, Options{})
	node, err := sw.AddNode("node1", "eth0")
	if err != nil {
		t.Fatalf("AddNode: %v", err)
	}
	for k, v := range map[string]string{
		"net/ipv6/conf/eth0/accept_ra":               "1",
		"net/ipv6/conf/eth0/autoconf":                "0",
		"net/ipv6/conf/eth0/forwarding":              "0",
		"net/ipv6/neigh/eth0/delay_first_probe_time": "1",
	} {
		if err := node.NS.Sysctl(k, v); err != nil {
			t.Fatal(err)
		}
	}
	nl := node.NS.Netlink
	eth0, err := nl.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	// The kernel solicits routers once eth0's link-local address is
	// usable; the switch answers at once.
	var def netlink.Route
	waitUntil(t, 30*time.Second, "an RA default route on eth0", func() (bool, error) {
		rs, err := nl.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{LinkIndex: eth0.Attrs().Index, Protocol: unix.RTPROT_RA}, netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			return false, err
		}
		for _, r := range rs {
			if r.Dst == nil || r.Dst.IP.IsUnspecified() {
				def = r
				return r.Gw != nil, nil
			}
		}
		return false, nil
	})
	gw := def.Gw

	updates := make(chan netlink.RouteUpdate, 64)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	if err := netlink.RouteSubscribeWithOptions(updates, done, netlink.RouteSubscribeOptions{Namespace: &node.NS.Handle}); err != nil {
		t.Fatalf("subscribing to the node's routes: %v", err)
	}

	// Make the node doubt the gateway and talk to it: the entry goes
	// STALE, DELAY, then PROBE, and the switch's neighbour advertisement
	// confirms it.
	gwNeigh := func() (*netlink.Neigh, error) {
		ns, err := nl.NeighList(eth0.Attrs().Index, netlink.FAMILY_V6)
		if err != nil {
			return nil, err
		}
		for i := range ns {
			if ns[i].IP.Equal(gw) {
				return &ns[i], nil
			}
		}
		return nil, fmt.Errorf("no neighbour entry for the gateway %s", gw)
	}
	n, err := gwNeigh()
	if err != nil {
		t.Fatal(err)
	}
	if n.Flags&netlink.NTF_ROUTER == 0 {
		t.Fatalf("gateway neighbour %s: flags %#x before the probe, want the router flag (learnt from the RA)", gw, n.Flags)
	}
	stale := &netlink.Neigh{LinkIndex: eth0.Attrs().Index, Family: netlink.FAMILY_V6, IP: gw,
		HardwareAddr: n.HardwareAddr, State: netlink.NUD_STALE, Flags: netlink.NTF_ROUTER}
	if err := nl.NeighSet(stale); err != nil {
		t.Fatalf("setting the gateway neighbour stale: %v", err)
	}
	// The RA can arrive (dnsmasq sends them unsolicited) while eth0's
	// link-local address is still tentative, and a datagram cannot be
	// sent from a tentative address (EADDRNOTAVAIL).
	waitUntil(t, 30*time.Second, "eth0's link-local address past duplicate address detection", func() (bool, error) {
		as, err := nl.AddrList(eth0, netlink.FAMILY_V6)
		if err != nil {
			return false, err
		}
		for _, a := range as {
			if a.IP.IsLinkLocalUnicast() && a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) == 0 {
				return true, nil
			}
		}
		return false, nil
	})
	err = node.NS.Do(func() error {
		c, err := net.Dial("udp6", fmt.Sprintf("[%s%%eth0]:9", gw))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("probe"))
		return err
	})
	if err != nil {
		t.Fatalf("sending to the gateway: %v", err)
	}
	var after *netlink.Neigh
	waitUntil(t, 30*time.Second, "the gateway neighbour confirmed (REACHABLE)", func() (bool, error) {
		n, err := gwNeigh()
		after = n
		return err == nil && n.State == netlink.NUD_REACHABLE, err
	})
	if after.Flags&netlink.NTF_ROUTER == 0 {
		t.Errorf("gateway neighbour %s: flags %#x after its confirmation, want the router flag (the switch answered as a host)", gw, after.Flags)
	}
	rs, err := nl.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{LinkIndex: eth0.Attrs().Index, Protocol: unix.RTPROT_RA}, netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Errorf("no RA route left on eth0 after the gateway's confirmation")
	}
drain:
	for {
		select {
		case u := <-updates:
			if u.Type == unix.RTM_DELROUTE && u.Protocol == unix.RTPROT_RA {
				t.Errorf("RA route deleted during the probe: %s", u.Route)
			}
		default:
			break drain
		}
	}
}

// waitUntil polls cond every 50ms until it holds, failing the test with
// what when limit passes first or cond fails.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last error: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}
