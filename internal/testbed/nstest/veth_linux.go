package nstest

import (
	"testing"

	"github.com/vishvananda/netlink"
)

// Veth creates a veth pair with end name in n and end peerName in peer, and
// brings both ends up. A typical node "NIC" is Veth(t, node, "eth1", sw,
// "node1-eth1"). The pair disappears with either namespace.
func Veth(t testing.TB, n *NS, name string, peer *NS, peerName string) {
	t.Helper()
	v := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: name},
		PeerName:      peerName,
		PeerNamespace: netlink.NsFd(int(peer.Handle)),
	}
	// Created through n's handle, so the first end is born inside n and the
	// peer is moved straight into peer: the host namespace never sees either.
	if err := n.Netlink.LinkAdd(v); err != nil {
		t.Fatalf("nstest: creating veth %s (%s) <-> %s (%s): %v", name, n.Name, peerName, peer.Name, err)
	}
	n.LinkUp(t, name)
	peer.LinkUp(t, peerName)
}
