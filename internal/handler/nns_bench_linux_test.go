package handler

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
)

// BenchmarkRefreshUnchanged measures what an event or resync costs when the
// state did not change (read, filter, encode, compare; no API call), on a
// namespace with 50 veth pairs with an address each.
func BenchmarkRefreshUnchanged(b *testing.B) {
	ns := nstest.New(b)
	for i := range 50 {
		name := fmt.Sprintf("v%d", i)
		if err := ns.Netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"}); err != nil {
			b.Fatal(err)
		}
		ns.LinkUp(b, name)
		ns.AddrAdd(b, name, fmt.Sprintf("10.%d.0.1/24", i))
	}
	be, err := kernel.Open(context.Background(), kernel.Options{NetNS: ns.Path})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	filter := FilterOptions{UnmanagedVeth: DefaultUnmanagedVeth()}
	var memo reportMemo
	refresh := func() report {
		st, err := be.Show(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		r, err := memo.report(Filter(st, filter), "v")
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	first := refresh()
	known := &view{state: first.state, obj: nnsObj("u", "1", string(first.state), "v", NoNetworkManager)}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if act := decide(known, refresh()); act != actNone {
			b.Fatalf("decide = %v on an unchanged namespace", act)
		}
	}
}

// BenchmarkFilterAndCompare is BenchmarkRefreshUnchanged without the
// kernel read: the handler's own share of a refresh.
func BenchmarkFilterAndCompare(b *testing.B) {
	ns := nstest.New(b)
	for i := range 50 {
		name := fmt.Sprintf("v%d", i)
		if err := ns.Netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"}); err != nil {
			b.Fatal(err)
		}
		ns.AddrAdd(b, name, fmt.Sprintf("10.%d.0.1/24", i))
	}
	be, err := kernel.Open(context.Background(), kernel.Options{NetNS: ns.Path})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	st, err := be.Show(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	filter := FilterOptions{UnmanagedVeth: DefaultUnmanagedVeth()}
	first, err := newReport(Filter(st, filter), "v")
	if err != nil {
		b.Fatal(err)
	}
	known := &view{state: first.state, obj: nnsObj("u", "1", string(first.state), "v", NoNetworkManager)}
	memo := reportMemo{}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := memo.report(Filter(st, filter), "v")
		if err != nil {
			b.Fatal(err)
		}
		if act := decide(known, r); act != actNone {
			b.Fatalf("decide = %v", act)
		}
	}
}

// BenchmarkRefreshLargeNode splits a refresh of the large node
// (1,500 macvlans standing in for VLANs, an address each, 3,000 static
// routes) into its steps: the kernel read, the filter, and the encoding of
// a changed state (full JSON, canonical form, compact-v1).
func BenchmarkRefreshLargeNode(b *testing.B) {
	ns := nstest.New(b)
	if err := ns.Netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "eth1"}, PeerName: "eth1p"}); err != nil {
		b.Fatal(err)
	}
	ns.LinkUp(b, "eth1")
	eth1, err := ns.Netlink.LinkByName("eth1")
	if err != nil {
		b.Fatal(err)
	}
	const ifaces, routes = 1500, 3000
	idx := make([]int, ifaces)
	for i := range ifaces {
		name := fmt.Sprintf("eth1.%d", i+1)
		mv := &netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: name, ParentIndex: eth1.Attrs().Index}, Mode: netlink.MACVLAN_MODE_BRIDGE}
		if err := ns.Netlink.LinkAdd(mv); err != nil {
			b.Fatal(err)
		}
		ns.LinkUp(b, name)
		ns.AddrAdd(b, name, fmt.Sprintf("10.%d.%d.1/24", 100+i/256, i%256))
		idx[i] = mv.Attrs().Index
	}
	for r := range routes {
		i := r % ifaces
		_, dst, _ := net.ParseCIDR(fmt.Sprintf("172.%d.%d.0/24", 16+r/256, r%256))
		rt := &netlink.Route{LinkIndex: idx[i], Dst: dst, Gw: net.ParseIP(fmt.Sprintf("10.%d.%d.2", 100+i/256, i%256)), Protocol: unix.RTPROT_STATIC}
		if err := ns.Netlink.RouteAdd(rt); err != nil {
			b.Fatal(err)
		}
	}
	be, err := kernel.Open(context.Background(), kernel.Options{NetNS: ns.Path})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	st, err := be.Show(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	filter := FilterOptions{UnmanagedVeth: DefaultUnmanagedVeth()}
	filtered := Filter(st, filter)
	b.Run("show", func(b *testing.B) {
		for b.Loop() {
			if _, err := be.Show(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("filter", func(b *testing.B) {
		for b.Loop() {
			Filter(st, filter)
		}
	})
	b.Run("report", func(b *testing.B) {
		var size int
		for b.Loop() {
			r, err := newReport(filtered, "v")
			if err != nil {
				b.Fatal(err)
			}
			size = len(r.state)
		}
		b.ReportMetric(float64(size), "state-bytes")
	})
}
