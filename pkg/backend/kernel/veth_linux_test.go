package kernel

import (
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
)

// vethFacts is what the kernel reports of one end of a veth pair that the
// way it was created decides.
type vethFacts struct {
	MTU, TxQLen, NumTxQueues, NumRxQueues int
	GSOMaxSize, GSOMaxSegs, GROMaxSize    uint32
	Flags                                 net.Flags
	Group                                 uint32
	OperState                             netlink.LinkOperState
	MAC                                   string
	PeerIsOtherEnd                        bool
}

func factsOf(t *testing.T, b *Backend, name, peer string, withMAC bool) vethFacts {
	t.Helper()
	l, err := b.h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.h.LinkByName(peer)
	if err != nil {
		t.Fatal(err)
	}
	a := l.Attrs()
	f := vethFacts{MTU: a.MTU, TxQLen: a.TxQLen, NumTxQueues: a.NumTxQueues, NumRxQueues: a.NumRxQueues,
		GSOMaxSize: a.GSOMaxSize, GSOMaxSegs: a.GSOMaxSegs, GROMaxSize: a.GROMaxSize, Flags: a.Flags,
		Group: a.Group, OperState: a.OperState, PeerIsOtherEnd: a.ParentIndex == p.Attrs().Index}
	if withMAC {
		f.MAC = a.HardwareAddr.String()
	}
	return f
}

// addVeth replaces the library's LinkAdd for plain veth pairs; both ends
// must come out exactly as the library makes them.
func TestAddVethMakesTheLibrarysPair(t *testing.T) {
	_, b := openNS(t, Options{})
	mac, err := net.ParseMAC("02:00:00:00:00:21")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		mtu int
		mac net.HardwareAddr
	}{{0, nil}, {1400, mac}, {9000, nil}} {
		mk := func(name string) *netlink.Veth {
			a := netlink.NewLinkAttrs()
			a.Name, a.MTU, a.HardwareAddr = name, c.mtu, c.mac
			return &netlink.Veth{LinkAttrs: a, PeerName: name + "p"}
		}
		lib, ours := mk("lib"+string(rune('0'+i))), mk("our"+string(rune('0'+i)))
		if !plainVeth(ours) {
			t.Fatalf("case %d: plainVeth refuses what newLink builds", i)
		}
		if err := b.h.LinkAdd(lib); err != nil {
			t.Fatal(err)
		}
		if err := b.addVeth(ours); err != nil {
			t.Fatal(err)
		}
		if ours.Index != 0 {
			t.Errorf("case %d: addVeth set the index %d; the cache relies on 0 (pending)", i, ours.Index)
		}
		for _, end := range [][2]string{{lib.Name, lib.PeerName}, {lib.PeerName, lib.Name}} {
			withMAC := end[0] == lib.Name && c.mac != nil // otherwise random
			theirs := factsOf(t, b, end[0], end[1], withMAC)
			o := [2]string{ours.Name, ours.PeerName}
			if end[0] != lib.Name {
				o = [2]string{ours.PeerName, ours.Name}
			}
			got := factsOf(t, b, o[0], o[1], withMAC)
			if diff := cmp.Diff(theirs, got); diff != "" {
				t.Errorf("case %d: %s vs %s (-library +addVeth):\n%s", i, end[0], o[0], diff)
			}
		}
	}
	// Anything beyond a plain pair still goes through the library.
	a := netlink.NewLinkAttrs()
	a.Name, a.TxQLen = "x0", 5
	if plainVeth(&netlink.Veth{LinkAttrs: a, PeerName: "x0p"}) {
		t.Errorf("plainVeth accepts a veth with a transmit queue length")
	}
	if plainVeth(&netlink.Veth{LinkAttrs: netlink.NewLinkAttrs(), PeerName: "x0p", PeerMTU: 1300}) {
		t.Errorf("plainVeth accepts a veth with a peer MTU")
	}
}
