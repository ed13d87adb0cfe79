package handler

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/pkg/nnsencoding"
)

// TestNNSOverEtcdLimitIsRefused shows why the compact encoding exists: a
// currentState over etcd's 1.5 MiB request limit is refused by the API
// server, and the NodeNetworkState would stay stale.
func TestNNSOverEtcdLimitIsRefused(t *testing.T) {
	n := newNode(t, "nns-too-large")
	ctx := context.Background()
	obj := &nmstatev1beta1.NodeNetworkState{}
	obj.Name = n.name
	if err := n.c.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	var routes []string
	for i := 0; len(routes)*120 < 1700<<10; i++ {
		routes = append(routes, fmt.Sprintf(`{"destination":"10.%d.%d.0/24","metric":0,"next-hop-address":"192.0.2.2","next-hop-interface":"eth1","table-id":254}`, i/256, i%256))
	}
	obj.Status.CurrentState = shared.State{Raw: []byte(`{"routes":{"config":[],"running":[` + strings.Join(routes, ",") + `]}}`)}
	err := n.c.Status().Update(ctx, obj)
	if err == nil {
		t.Fatalf("a %d-byte currentState was accepted", len(obj.Status.CurrentState.Raw))
	}
	t.Logf("%d-byte currentState refused: %v", len(obj.Status.CurrentState.Raw), err)
}

// TestNNSLargeNodeIsWrittenCompact: a node whose full state exceeds the
// budget gets a compact-v1 NodeNetworkState, marked by the annotation and
// expanding to every route; back under the budget, the full state returns
// and the mark goes.
func TestNNSLargeNodeIsWrittenCompact(t *testing.T) {
	n := newNode(t, "nns-large")
	n.veth(t, "eth1", "eth1p")
	n.ns.LinkUp(t, "eth1")
	n.ns.AddrAdd(t, "eth1", "192.0.2.1/24")
	eth1, err := n.ns.Netlink.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	const routes = 4500
	var dsts []*net.IPNet
	for i := range routes {
		_, dst, _ := net.ParseCIDR(fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256))
		dsts = append(dsts, dst)
		r := &netlink.Route{LinkIndex: eth1.Attrs().Index, Dst: dst, Gw: net.ParseIP("192.0.2.2"), Protocol: unix.RTPROT_STATIC}
		if err := n.ns.Netlink.RouteAdd(r); err != nil {
			t.Fatalf("adding route %d: %v", i, err)
		}
	}
	w := n.watchNNS(t, "")
	n.start(t, nil)
	const last = `"172.33.147.0/24"` // the 4,500th route
	obj := waitFor(t, w, "compact state with every route", func(o *nmstatev1beta1.NodeNetworkState) bool {
		return o.Annotations[nnsencoding.Annotation] == nnsencoding.CompactV1 && strings.Contains(string(o.Status.CurrentState.Raw), last)
	})
	raw := obj.Status.CurrentState.Raw
	if len(raw) > nnsencoding.Budget {
		t.Errorf("compact state is %d bytes, over the budget %d", len(raw), nnsencoding.Budget)
	}
	full, err := nnsencoding.Expand(obj.Annotations, raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(full), last); got != 2 {
		t.Errorf("expanded state holds the last route %d times, want 2 (config and running)", got)
	}
	t.Logf("compact currentState %d bytes, expanded %d bytes", len(raw), len(full))

	// Under the budget again: the full state, then no mark.
	for _, dst := range dsts[500:] {
		if err := n.ns.Netlink.RouteDel(&netlink.Route{LinkIndex: eth1.Attrs().Index, Dst: dst, Gw: net.ParseIP("192.0.2.2")}); err != nil {
			t.Fatal(err)
		}
	}
	obj = waitFor(t, w, "full state without the mark", func(o *nmstatev1beta1.NodeNetworkState) bool {
		return o.Annotations[nnsencoding.Annotation] == "" && !strings.Contains(string(o.Status.CurrentState.Raw), last)
	})
	if got := strings.Count(string(obj.Status.CurrentState.Raw), `"172.17.243.0/24"`); got != 2 {
		t.Errorf("full state holds the 500th route %d times, want 2 (config and running)", got)
	}
}
