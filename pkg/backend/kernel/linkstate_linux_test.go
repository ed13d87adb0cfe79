package kernel

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"

	"github.com/knmstate/knmstate/internal/testbed/nstest"
)

// vethPair adds the veth pair w0/w1 (both down) to ns.
func vethPair(t *testing.T, ns *nstest.NS) {
	t.Helper()
	if err := ns.Netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "w0"}, PeerName: "w1"}); err != nil {
		t.Fatalf("adding veth: %v", err)
	}
}

func openLinkReader(t *testing.T, ns *nstest.NS) *LinkReader {
	t.Helper()
	r, err := OpenLinkReader(ns.Handle)
	if err != nil {
		t.Fatalf("OpenLinkReader: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

func TestLinkReaderLink(t *testing.T) {
	ns := nstest.New(t)
	r := openLinkReader(t, ns)
	if _, err := r.Link("w0"); !errors.Is(err, ErrLinkNotFound) {
		t.Fatalf("Link of a missing link: got %v, want ErrLinkNotFound", err)
	}
	vethPair(t, ns)
	ignoreIndex := cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Index" }, cmp.Ignore())

	got, err := r.Link("w0")
	if err != nil {
		t.Fatal(err)
	}
	want := LinkStatus{Name: "w0", OperState: "down"}
	if d := cmp.Diff(want, got, ignoreIndex); d != "" {
		t.Errorf("down veth (-want +got):\n%s", d)
	}
	if got.Index == 0 {
		t.Errorf("down veth: no index")
	}

	// Up with its peer down: administratively up, operationally not.
	ns.LinkUp(t, "w0")
	// The kernel sets the operational state after the flags, from its
	// link watch (deferred, and slow under qemu's TCG): until then the
	// link shows "unknown".
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got, err = r.Link("w0"); err != nil {
			t.Fatal(err)
		}
		if got.OperState != "unknown" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	want = LinkStatus{Name: "w0", Up: true, OperState: "lower-layer-down"}
	if d := cmp.Diff(want, got, ignoreIndex); d != "" {
		t.Errorf("veth up, peer down (-want +got):\n%s", d)
	}
	// A context already ended: WaitOperUp looks once and gives up.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.WaitOperUp(ctx, "w0"); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitOperUp on a link that is not up: got %v, want context.Canceled", err)
	}
	if err := r.WaitOperUp(context.Background(), "nope"); !errors.Is(err, ErrLinkNotFound) {
		t.Errorf("WaitOperUp on a missing link: got %v, want ErrLinkNotFound", err)
	}

	ns.LinkUp(t, "w1")
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second) // hang guard
	defer cancel()
	if err := r.WaitOperUp(ctx, "w0"); err != nil {
		t.Fatalf("WaitOperUp with both ends up: %v", err)
	}
	got, err = r.Link("w0")
	if err != nil {
		t.Fatal(err)
	}
	if !got.OperUp || got.OperState != "up" {
		t.Errorf("both ends up: got %+v, want operationally up", got)
	}
}

func TestLinkReaderAddresses(t *testing.T) {
	ns := nstest.New(t)
	r := openLinkReader(t, ns)
	vethPair(t, ns)
	ns.AddrAdd(t, "w0", "192.0.2.1/24")
	ns.AddrAdd(t, "w0", "198.51.100.7/25")
	ns.AddrAdd(t, "w0", "2001:db8::5/64") // added without DAD
	ns.AddrAdd(t, "w1", "192.0.2.2/24")

	tests := []struct {
		family int
		want   []LinkAddress
	}{
		{4, []LinkAddress{
			{Prefix: netip.MustParsePrefix("192.0.2.1/24")},
			{Prefix: netip.MustParsePrefix("198.51.100.7/25")},
		}},
		{6, []LinkAddress{{Prefix: netip.MustParsePrefix("2001:db8::5/64")}}},
	}
	for _, tt := range tests {
		got, err := r.Addresses("w0", tt.family)
		if err != nil {
			t.Fatalf("Addresses(w0, %d): %v", tt.family, err)
		}
		if d := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
			t.Errorf("Addresses(w0, %d) (-want +got):\n%s", tt.family, d)
		}
	}
	if _, err := r.Addresses("nope", 6); !errors.Is(err, ErrLinkNotFound) {
		t.Errorf("Addresses of a missing link: got %v, want ErrLinkNotFound", err)
	}
}

// nextLinkEvent returns the next event about name; the bound is a hang
// guard, not a latency requirement.
func nextLinkEvent(t *testing.T, ch <-chan LinkEvent, name string) LinkEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("waiting for an event of %s: channel closed", name)
			}
			if ev.Link.Name == name {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event of %s", name)
		}
	}
}

func TestWatchLinks(t *testing.T) {
	ns := nstest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var subErrs []error
	ch, err := WatchLinks(ctx, ns.Handle, func(err error) { subErrs = append(subErrs, err) })
	if err != nil {
		t.Fatalf("WatchLinks: %v", err)
	}

	vethPair(t, ns)
	if ev := nextLinkEvent(t, ch, "w0"); ev.Deleted || ev.Link.Up {
		t.Errorf("link added: got %+v, want a present link that is down", ev)
	}
	ns.LinkUp(t, "w0")
	for {
		ev := nextLinkEvent(t, ch, "w0")
		if ev.Deleted {
			t.Fatalf("setting w0 up: got a deletion %+v", ev)
		}
		if ev.Link.Up {
			break
		}
	}
	l, err := ns.Netlink.LinkByName("w0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Netlink.LinkDel(l); err != nil {
		t.Fatal(err)
	}
	for !nextLinkEvent(t, ch, "w0").Deleted {
	}

	// Ending ctx closes the channel, and the read failure that closing
	// the subscription causes is not reported.
	cancel()
	for range ch {
	}
	if len(subErrs) != 0 {
		t.Errorf("subscription errors: %v", subErrs)
	}
}
