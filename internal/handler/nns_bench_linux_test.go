package handler

import (
	"context"
	"fmt"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/nstest"
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
