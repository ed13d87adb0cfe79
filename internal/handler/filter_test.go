package handler

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// withLifetimes gives every address of ifc finite lifetimes, as a leased
// address shows them.
// stateCmp compares states: netip values by equality.
var stateCmp = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

func withLifetimes(valid, preferred string) st.IfaceOption {
	return st.With(func(i *nmstate.Interface) {
		for _, c := range []*nmstate.IPConfig{i.IPv4, i.IPv6} {
			if c == nil {
				continue
			}
			for j := range c.Address {
				c.Address[j].ValidLifetime = st.Ptr(valid)
				c.Address[j].PreferredLifetime = st.Ptr(preferred)
			}
		}
	})
}

func bridgeTimers(gc, hello uint64) st.IfaceOption {
	return st.With(func(i *nmstate.Interface) {
		if i.LinuxBridge.Options == nil {
			i.LinuxBridge.Options = &nmstate.LinuxBridgeOptions{}
		}
		i.LinuxBridge.Options.GCTimer = &gc
		i.LinuxBridge.Options.HelloTimer = &hello
		i.LinuxBridge.Options.MACAgeingTime = st.Ptr[uint32](300)
	})
}

func iifRule(iif string, table uint32) nmstate.RouteRule {
	r := st.Rule("", "", table)
	r.IIF = &iif
	return r
}

func TestFilter(t *testing.T) {
	defaults := FilterOptions{UnmanagedVeth: DefaultUnmanagedVeth()}
	tests := []struct {
		name string
		opts FilterOptions
		in   *nmstate.State
		want *nmstate.State
	}{
		{
			name: "unmanaged veth with peer outside the namespace is dropped with its routes and rules",
			opts: defaults,
			in: st.State(
				st.Interfaces(st.Ethernet("eth0", st.IPv4("192.0.2.10/24")), st.Veth("veth1a2b3c", "eth0"), st.Iface("cali0123", nmstate.TypeVeth)),
				st.Routes(st.Route("10.244.0.5/32", "veth1a2b3c", ""), st.Route("10.244.0.6/32", "cali0123", ""), st.Route("0.0.0.0/0", "eth0", "192.0.2.1")),
				st.Rules(iifRule("veth1a2b3c", 100), st.Rule("10.0.0.0/8", "", 200)),
			),
			want: st.State(
				st.Interfaces(st.Ethernet("eth0", st.IPv4("192.0.2.10/24"))),
				st.Routes(st.Route("0.0.0.0/0", "eth0", "192.0.2.1")),
				st.Rules(st.Rule("10.0.0.0/8", "", 200)),
			),
		},
		{
			name: "running routes via an unmanaged veth are dropped too",
			opts: defaults,
			in: func() *nmstate.State {
				s := st.State(st.Interfaces(st.Ethernet("eth0"), st.Veth("lxc99", "eth0")))
				s.Routes = &nmstate.Routes{
					Running: []nmstate.Route{st.Route("10.0.1.0/24", "lxc99", ""), st.Route("10.0.2.0/24", "eth0", "")},
					Config:  []nmstate.Route{},
				}
				return s
			}(),
			want: func() *nmstate.State {
				s := st.State(st.Interfaces(st.Ethernet("eth0")))
				s.Routes = &nmstate.Routes{Running: []nmstate.Route{st.Route("10.0.2.0/24", "eth0", "")}, Config: []nmstate.Route{}}
				return s
			}(),
		},
		{
			name: "veth pair with both ends in the namespace is managed and kept",
			opts: defaults,
			in: st.State(
				st.Interfaces(st.Veth("veth0", "veth1"), st.Veth("veth1", "veth0")),
				st.Routes(st.Route("198.51.100.0/24", "veth0", "")),
			),
			want: st.State(
				st.Interfaces(st.Veth("veth0", "veth1"), st.Veth("veth1", "veth0")),
				st.Routes(st.Route("198.51.100.0/24", "veth0", "")),
			),
		},
		{
			name: "peer name shared with a local interface that does not name it back",
			opts: defaults,
			// The pod side of veth9 is called eth0, as is the node's NIC.
			in:   st.State(st.Interfaces(st.Veth("eth0", "node-eth0"), st.Veth("veth9", "eth0"))),
			want: st.State(st.Interfaces(st.Veth("eth0", "node-eth0"))),
		},
		{
			name: "veths with other names (lab NICs) are kept",
			opts: defaults,
			in:   st.State(st.Interfaces(st.Veth("eth0", "sw-node1-eth0"), st.Veth("eth1", ""))),
			want: st.State(st.Interfaces(st.Veth("eth0", "sw-node1-eth0"), st.Veth("eth1", ""))),
		},
		{
			name: "non-veth interfaces matching the patterns are kept",
			opts: defaults,
			in:   st.State(st.Interfaces(st.Dummy("veth-dummy"))),
			want: st.State(st.Interfaces(st.Dummy("veth-dummy"))),
		},
		{
			name: "no patterns: nothing dropped",
			opts: FilterOptions{},
			in:   st.State(st.Interfaces(st.Veth("veth1a2b3c", "eth0"))),
			want: st.State(st.Interfaces(st.Veth("veth1a2b3c", "eth0"))),
		},
		{
			name: "custom patterns",
			opts: FilterOptions{UnmanagedVeth: []string{"pod-*"}},
			in:   st.State(st.Interfaces(st.Veth("pod-1", "eth0"), st.Veth("veth1a2b3c", "eth0"))),
			want: st.State(st.Interfaces(st.Veth("veth1a2b3c", "eth0"))),
		},
		{
			name: "dropped veths leave controllers' port lists",
			opts: defaults,
			in: st.State(st.Interfaces(
				st.LinuxBridge("cni0", st.Ports("veth1", "eth1")),
				st.Bond("bond0", st.Mode("active-backup"), st.Ports("veth2", "eth2")),
				st.VRF("vrf0", 10, st.Ports("veth3", "eth3")),
				st.Veth("veth1", "eth0"), st.Veth("veth2", "eth0"), st.Veth("veth3", "eth0"),
			)),
			want: st.State(st.Interfaces(
				st.LinuxBridge("cni0", st.Ports("eth1")),
				st.Bond("bond0", st.Mode("active-backup"), st.Ports("eth2")),
				st.VRF("vrf0", 10, st.Ports("eth3")),
			)),
		},
		{
			name: "bridge timers are stripped, other bridge options kept",
			opts: defaults,
			in:   st.State(st.Interfaces(st.LinuxBridge("br0", bridgeTimers(1234, 56)))),
			want: st.State(st.Interfaces(st.LinuxBridge("br0", st.With(func(i *nmstate.Interface) {
				i.LinuxBridge.Options = &nmstate.LinuxBridgeOptions{MACAgeingTime: st.Ptr[uint32](300)}
			})))),
		},
		{
			name: "address lifetimes are stripped",
			opts: defaults,
			in:   st.State(st.Interfaces(st.Ethernet("eth0", st.IPv4("192.0.2.7/24"), st.IPv6("2001:db8::7/64"), withLifetimes("3600sec", "1800sec")))),
			want: st.State(st.Interfaces(st.Ethernet("eth0", st.IPv4("192.0.2.7/24"), st.IPv6("2001:db8::7/64")))),
		},
		{
			name: "other sections are kept",
			opts: defaults,
			in: func() *nmstate.State {
				s := st.State(st.DNS([]string{"192.0.2.53"}, []string{"lab.example"}, nil), st.Rules(st.Rule("10.0.0.0/8", "", 200)))
				s.Hostname = &nmstate.Hostname{Running: st.Ptr("node1")}
				return s
			}(),
			want: func() *nmstate.State {
				s := st.State(st.DNS([]string{"192.0.2.53"}, []string{"lab.example"}, nil), st.Rules(st.Rule("10.0.0.0/8", "", 200)))
				s.Hostname = &nmstate.Hostname{Running: st.Ptr("node1")}
				return s
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.Clone()
			got := Filter(tc.in, tc.opts)
			if diff := cmp.Diff(tc.want, got, stateCmp); diff != "" {
				t.Errorf("Filter (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.in, stateCmp); diff != "" {
				t.Errorf("Filter modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestFilterNil(t *testing.T) {
	if got := Filter(nil, FilterOptions{}); got != nil {
		t.Errorf("Filter(nil) = %v, want nil", got)
	}
}
