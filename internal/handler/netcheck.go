package handler

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// nodeNetworkWait is how long a handler started in its own namespace (a
// host-network pod) waits for the node's address to show before it gives
// up.
const nodeNetworkWait = 30 * time.Second

// nodeAddresses are the Node's InternalIP addresses.
func nodeAddresses(n *corev1.Node) []netip.Addr {
	var out []netip.Addr
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, ip)
		}
	}
	return out
}

// showsAny reports whether any interface of st has one of addrs.
func showsAny(st *nmstate.State, addrs []netip.Addr) bool {
	for _, i := range st.Interfaces {
		for _, ipc := range []*nmstate.IPConfig{i.IPv4, i.IPv6} {
			if ipc == nil {
				continue
			}
			for _, a := range ipc.Address {
				if slices.Contains(addrs, a.IP) {
					return true
				}
			}
		}
	}
	return false
}

// checkNodeNetwork makes sure that a handler running in the network
// namespace it was started in (a host-network pod) sees the node's own
// network: one of the Node's InternalIP addresses on one of its
// interfaces. A container that was restarted into a namespace of its own
// (seen once in the kubelet lab after its container was killed:
// test/faults) would otherwise apply policies to an empty namespace and
// report them Available. It waits nodeNetworkWait for the address (a
// node still coming up), then fails, so the kubelet starts the container
// again. A Node without an InternalIP cannot be checked and passes.
func checkNodeNetwork(ctx context.Context, c client.Client, b shower, node string) error {
	n := &corev1.Node{}
	if err := c.Get(ctx, types.NamespacedName{Name: node}, n); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading node %s for its addresses: %w", node, err)
	}
	addrs := nodeAddresses(n)
	if len(addrs) == 0 {
		return nil
	}
	deadline := time.Now().Add(nodeNetworkWait)
	for {
		st, err := b.Show(ctx)
		if err == nil && showsAny(st, addrs) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the network this handler sees has none of node %s's addresses %v after %v: it does not run in the node's network namespace (hostNetwork), so it applies nothing", node, addrs, nodeNetworkWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
