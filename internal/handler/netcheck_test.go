package handler

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

func TestShowsNodeAddress(t *testing.T) {
	addr := func(s string) nmstate.Address { return nmstate.Address{IP: netip.MustParseAddr(s), PrefixLength: 24} }
	lab := &nmstate.State{Interfaces: []nmstate.Interface{
		{Name: "lo", IPv4: &nmstate.IPConfig{Address: []nmstate.Address{addr("127.0.0.1")}}},
		{Name: "eth0", IPv4: &nmstate.IPConfig{Address: []nmstate.Address{addr("192.0.2.15")}}, IPv6: &nmstate.IPConfig{Address: []nmstate.Address{addr("2001:db8::11d")}}},
	}}
	// What the restarted container saw: its own namespace, a bridge it
	// had just made there.
	empty := &nmstate.State{Interfaces: []nmstate.Interface{
		{Name: "lo", IPv4: &nmstate.IPConfig{Address: []nmstate.Address{addr("127.0.0.1")}}},
		{Name: "fgood", IPv4: &nmstate.IPConfig{Address: []nmstate.Address{addr("10.250.0.1")}}},
	}}
	node := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "node05"},
		{Type: corev1.NodeInternalIP, Address: "192.0.2.15"},
	}}}
	v6node := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "2001:db8::11d"}}}}
	tests := []struct {
		name  string
		node  *corev1.Node
		state *nmstate.State
		want  bool
	}{
		{"the node's namespace", node, lab, true},
		{"an IPv6 node address", v6node, lab, true},
		{"a namespace of its own", node, empty, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := showsAny(tt.state, nodeAddresses(tt.node)); got != tt.want {
				t.Errorf("showsAny = %v, want %v", got, tt.want)
			}
		})
	}
}
