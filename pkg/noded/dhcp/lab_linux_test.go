package dhcp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/labnet/labnettest"
)

// events collects a client's events on a channel.
type events chan Event

func (e events) on(ev Event) { e <- ev }

// next waits (bounded) for the next event and checks its kind.
func (e events) next(tb testing.TB, want EventKind, within time.Duration) Event {
	tb.Helper()
	select {
	case ev := <-e:
		if ev.Kind != want {
			tb.Fatalf("event %s for %s, want %s", ev.Kind, ev.Lease.Address, want)
		}
		return ev
	case <-time.After(within):
		tb.Fatalf("no %s event within %s", want, within)
	}
	return Event{}
}

// startClient starts a client whose Stop (without release) is registered
// as cleanup, in case the test fails before stopping it itself.
func startClient(tb testing.TB, family Family, cfg Config) *Client {
	tb.Helper()
	ctx := context.Background()
	var c *Client
	var err error
	if family == IPv4 {
		c, err = Start4(ctx, cfg)
	} else {
		c, err = Start6(ctx, cfg)
	}
	if err != nil {
		tb.Fatalf("starting dhcpv%d client: %v", family, err)
	}
	tb.Cleanup(func() { _ = c.Stop(false) })
	return c
}

// install does what the runtime will do with a lease: the address with
// the lease's lifetimes. The renew reply is unicast to the leased address,
// so renewal needs it installed.
func install(tb testing.TB, node *labnet.Node, l Lease) {
	tb.Helper()
	link, err := node.NS.Netlink.LinkByName(l.Interface)
	if err != nil {
		tb.Fatal(err)
	}
	bits := 32
	if l.Address.Addr().Is6() {
		bits = 128
	}
	left := int(time.Until(l.ExpiresAt()) / time.Second)
	a := &netlink.Addr{
		IPNet:       &net.IPNet{IP: l.Address.Addr().AsSlice(), Mask: net.CIDRMask(l.Address.Bits(), bits)},
		ValidLft:    left,
		PreferedLft: left,
	}
	if err := node.NS.Netlink.AddrReplace(link, a); err != nil {
		tb.Fatalf("installing %s on %s: %v", l.Address, l.Interface, err)
	}
}

func inRange(a netip.Addr, r [2]netip.Addr) bool {
	return a.Compare(r[0]) >= 0 && a.Compare(r[1]) <= 0
}

// leaseRecord polls dnsmasq's lease database (bounded) until cond holds
// for the record of addr (nil when it has none).
func leaseRecord(tb testing.TB, sw *labnet.Switch, addr netip.Addr, cond func(*labnet.LeaseRecord) bool) *labnet.LeaseRecord {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := sw.Leases()
		if err != nil {
			tb.Fatal(err)
		}
		var rec *labnet.LeaseRecord
		for i := range recs {
			if recs[i].Addr == addr {
				rec = &recs[i]
			}
		}
		if cond(rec) {
			return rec
		}
		if time.Now().After(deadline) {
			tb.Fatalf("dnsmasq lease record for %s: condition not met within 10s (last %+v)", addr, rec)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStart4UnknownInterface(t *testing.T) {
	_, node := labnettest.New(t, labnet.Options{})
	_, err := Start4(context.Background(), Config{Namespace: node.NS.Handle, Interface: "eth9"})
	if err == nil {
		t.Fatal("Start4 on a missing interface succeeded")
	}
	if want := "dhcpv4 client on eth9: "; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("error %q, want it to start with %q", err, want)
	}
}

func TestDHCPv4LeaseAndRelease(t *testing.T) {
	sw, node := labnettest.New(t, labnet.Options{DnsmasqExtra: []string{
		"dhcp-option=option:classless-static-route,198.51.100.0/24,192.0.2.1",
		"dhcp-option=option:mtu,1400",
	}})
	ev := make(events, 16)
	c := startClient(t, IPv4, Config{Namespace: node.NS.Handle, Interface: "eth0", ClientID: "ll",
		SendHostname: true, Hostname: "node1", OnEvent: ev.on})
	l := ev.next(t, LeaseBound, 30*time.Second).Lease

	gw4, _ := sw.Gateways()
	if !inRange(l.Address.Addr(), sw.Options.Range4) || l.Address.Bits() != 24 {
		t.Errorf("address %s, want one in %v with /24", l.Address, sw.Options.Range4)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"family", l.Family, IPv4},
		{"interface", l.Interface, "eth0"},
		{"server", l.Server, gw4},
		{"routers", fmt.Sprint(l.Routers), fmt.Sprint([]netip.Addr{gw4})},
		{"dns", fmt.Sprint(l.DNS), fmt.Sprint([]netip.Addr{gw4})},
		{"search", fmt.Sprint(l.SearchDomains), "[lab.example]"},
		{"domain", l.DomainName, "lab.example"},
		{"routes", fmt.Sprint(l.Routes), fmt.Sprint([]Route{{netip.MustParsePrefix("198.51.100.0/24"), gw4}})},
		{"mtu", l.MTU, 1400},
		{"lifetime", l.Lifetime, 2 * time.Minute},
		{"t1", l.T1, time.Minute},
		{"t2", l.T2, 105 * time.Second},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got, ok := c.Lease(); !ok || got.Address != l.Address || c.State() != Bound {
		t.Errorf("client holds %v (%v) in state %s, want %s bound", got.Address, ok, c.State(), l.Address)
	}
	link, err := node.NS.Netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	wantCID := "01:" + link.Attrs().HardwareAddr.String()
	leaseRecord(t, sw, l.Address.Addr(), func(r *labnet.LeaseRecord) bool {
		return r != nil && r.Hostname == "node1" && r.ClientID == wantCID
	})
	// The client must not configure the interface itself.
	addrs, err := node.NS.Netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 0 {
		t.Errorf("eth0 has IPv4 addresses %v; the client must not install any", addrs)
	}

	if err := c.Stop(true); err != nil {
		t.Fatalf("Stop(release): %v", err)
	}
	if got := ev.next(t, LeaseReleased, time.Second).Lease.Address; got != l.Address {
		t.Errorf("released %s, want %s", got, l.Address)
	}
	leaseRecord(t, sw, l.Address.Addr(), func(r *labnet.LeaseRecord) bool { return r == nil })
}

func TestDHCPv4RenewsAtT1(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past T1 of a 2 minute lease (about 65 s)")
	}
	t.Parallel() // with the DHCPv6 renewal: both mostly wait
	sw, node := labnettest.New(t, labnet.Options{LeaseTime: 2 * time.Minute})
	ev := make(events, 16)
	c := startClient(t, IPv4, Config{Namespace: node.NS.Handle, Interface: "eth0", OnEvent: ev.on})
	first := ev.next(t, LeaseBound, 30*time.Second).Lease
	install(t, node, first)
	rec := leaseRecord(t, sw, first.Address.Addr(), func(r *labnet.LeaseRecord) bool { return r != nil })

	renewed := ev.next(t, LeaseRenewed, 90*time.Second).Lease
	install(t, node, renewed)
	if renewed.Address != first.Address {
		t.Errorf("renewed address %s, want %s", renewed.Address, first.Address)
	}
	if !renewed.Start.After(first.RenewAt().Add(-time.Second)) {
		t.Errorf("renewed at %s, before T1 %s", renewed.Start, first.RenewAt())
	}
	if !renewed.ExpiresAt().After(first.ExpiresAt()) {
		t.Errorf("expiry %s did not move forward from %s", renewed.ExpiresAt(), first.ExpiresAt())
	}
	leaseRecord(t, sw, first.Address.Addr(), func(r *labnet.LeaseRecord) bool {
		return r != nil && r.Expiry.After(rec.Expiry)
	})
	if s := c.State(); s != Bound {
		t.Errorf("state after renewal %s, want bound", s)
	}
}

func TestDHCPv4SameClientGetsSameAddressAfterRelease(t *testing.T) {
	_, node := labnettest.New(t, labnet.Options{})
	ev := make(events, 16)
	cfg := Config{Namespace: node.NS.Handle, Interface: "eth0", ClientID: "iaid+duid", OnEvent: ev.on}
	c := startClient(t, IPv4, cfg)
	first := ev.next(t, LeaseBound, 30*time.Second).Lease
	if err := c.Stop(true); err != nil {
		t.Fatal(err)
	}
	ev.next(t, LeaseReleased, time.Second)
	startClient(t, IPv4, cfg)
	if again := ev.next(t, LeaseBound, 30*time.Second).Lease; again.Address != first.Address {
		t.Errorf("after release got %s, want %s again", again.Address, first.Address)
	}
}

func TestDHCPv6RenewsAtT1(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past T1 of a 2 minute lease (about 65 s)")
	}
	t.Parallel() // with the DHCPv4 renewal: both mostly wait
	sw, node := labnettest.New(t, labnet.Options{LeaseTime: 2 * time.Minute})
	ev := make(events, 16)
	c := startClient(t, IPv6, Config{Namespace: node.NS.Handle, Interface: "eth0", OnEvent: ev.on})
	first := ev.next(t, LeaseBound, 30*time.Second).Lease
	rec := leaseRecord(t, sw, first.Address.Addr(), func(r *labnet.LeaseRecord) bool { return r != nil })
	renewed := ev.next(t, LeaseRenewed, 90*time.Second).Lease
	if renewed.Address != first.Address {
		t.Errorf("renewed address %s, want %s", renewed.Address, first.Address)
	}
	if !renewed.ExpiresAt().After(first.ExpiresAt()) {
		t.Errorf("expiry %s did not move forward from %s", renewed.ExpiresAt(), first.ExpiresAt())
	}
	leaseRecord(t, sw, first.Address.Addr(), func(r *labnet.LeaseRecord) bool {
		return r != nil && r.Expiry.After(rec.Expiry)
	})
	if s := c.State(); s != Bound {
		t.Errorf("state after renewal %s, want bound", s)
	}
}

func TestDHCPv6Lease(t *testing.T) {
	sw, node := labnettest.New(t, labnet.Options{})
	ev := make(events, 16)
	c := startClient(t, IPv6, Config{Namespace: node.NS.Handle, Interface: "eth0", OnEvent: ev.on})
	l := ev.next(t, LeaseBound, 30*time.Second).Lease
	_, gw6 := sw.Gateways()
	if !inRange(l.Address.Addr(), sw.Options.Range6) || l.Address.Bits() != 128 {
		t.Errorf("address %s, want one in %v with /128", l.Address, sw.Options.Range6)
	}
	if fmt.Sprint(l.DNS) != fmt.Sprint([]netip.Addr{gw6}) || fmt.Sprint(l.SearchDomains) != "[lab.example]" {
		t.Errorf("dns %v search %v, want [%s] [lab.example]", l.DNS, l.SearchDomains, gw6)
	}
	if l.Lifetime != 2*time.Minute || l.Family != IPv6 || len(l.ServerID) == 0 {
		t.Errorf("lifetime %s family %d server id %x; want 2m, 6, non-empty", l.Lifetime, l.Family, l.ServerID)
	}
	leaseRecord(t, sw, l.Address.Addr(), func(r *labnet.LeaseRecord) bool { return r != nil })
	if err := c.Stop(true); err != nil {
		t.Fatalf("Stop(release): %v", err)
	}
	ev.next(t, LeaseReleased, time.Second)
	leaseRecord(t, sw, l.Address.Addr(), func(r *labnet.LeaseRecord) bool { return r == nil })
}

// waitSLAAC polls (bounded) for a kernel-made address in prefix on ifname.
func waitSLAAC(tb testing.TB, node *labnet.Node, ifname string, prefix netip.Prefix, within time.Duration) netip.Prefix {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		link, err := node.NS.Netlink.LinkByName(ifname)
		if err != nil {
			tb.Fatal(err)
		}
		addrs, err := node.NS.Netlink.AddrList(link, netlink.FAMILY_V6)
		if err != nil {
			tb.Fatal(err)
		}
		for _, a := range addrs {
			ip, _ := netip.AddrFromSlice(a.IP)
			ones, _ := a.Mask.Size()
			// SLAAC addresses are not permanent and carry the RA's /64.
			if prefix.Contains(ip) && ones == 64 && a.Flags&unix.IFA_F_PERMANENT == 0 && a.Flags&unix.IFA_F_TENTATIVE == 0 {
				return netip.PrefixFrom(ip, ones)
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no SLAAC address in %s on %s within %s (have %v)", prefix, ifname, within, addrs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSLAAC(t *testing.T) {
	sw, node := labnettest.New(t, labnet.Options{})
	if err := EnableIPv6Autoconf(node.NS.Handle, "eth0"); err != nil {
		t.Fatal(err)
	}
	got := waitSLAAC(t, node, "eth0", sw.Options.Gateway6.Masked(), 30*time.Second)
	t.Logf("SLAAC address %s", got)
	// The setting is the node namespace's own: read it back from there.
	var v []byte
	err := node.NS.Do(func() (err error) {
		v, err = os.ReadFile("/proc/sys/net/ipv6/conf/eth0/accept_ra")
		return err
	})
	if err != nil || string(v) != "2\n" {
		t.Errorf("node accept_ra = %q (%v), want 2", v, err)
	}
}
