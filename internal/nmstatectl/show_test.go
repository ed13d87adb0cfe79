package nmstatectl

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

func encode(t *testing.T, s *nmstate.State) string {
	t.Helper()
	b, err := nmstate.EncodeYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestShowIfaceKeepsInterfaceRoutesAndTheirRules(t *testing.T) {
	s := st.State(
		st.Interfaces(st.Ethernet("eth1", st.MTU(1500)), st.Ethernet("eth2", st.MTU(9000))),
		st.Routes(
			st.Route("198.51.100.0/24", "eth1", "192.0.2.254", st.Table(100)),
			st.Route("203.0.113.0/24", "eth2", "192.0.2.253")),
		st.Rules(st.Rule("192.0.2.0/24", "", 100), st.Rule("192.0.2.0/24", "", 200)),
		st.DNS([]string{"192.0.2.53"}, nil, nil),
	)
	want := st.State(
		st.Interfaces(st.Ethernet("eth1", st.MTU(1500))),
		st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.254", st.Table(100))),
		st.Rules(st.Rule("192.0.2.0/24", "", 100)),
	)
	if diff := cmp.Diff(encode(t, want), encode(t, onlyInterfaces(s, []string{"eth1"}))); diff != "" {
		t.Errorf("show eth1 (-want +got):\n%s", diff)
	}
}

func TestRunningConfigDropsDynamicState(t *testing.T) {
	dyn := nmstate.Address{IP: mustAddr(t, "192.0.2.77"), PrefixLength: 24, ValidLifetime: st.Ptr("300sec"), PreferredLifetime: st.Ptr("300sec")}
	s := st.State(
		st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24"), st.With(func(i *nmstate.Interface) {
			i.IPv4.Address = append(i.IPv4.Address, dyn)
			i.LLDP = &nmstate.LLDP{Enabled: st.Ptr(true), Neighbors: []any{[]any{map[string]any{"type": "1"}}}}
		}))),
		st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.254")),
		st.DNS([]string{"192.0.2.53"}, nil, nil),
	)
	s.Routes.Running = []nmstate.Route{st.Route("0.0.0.0/0", "eth1", "192.0.2.1")}
	s.DNSResolver.Running = &nmstate.DNSConfig{Server: s.DNSResolver.Config.Server}
	want := st.State(
		st.Interfaces(st.Ethernet("eth1", st.IPv4("192.0.2.1/24"), st.With(func(i *nmstate.Interface) {
			i.LLDP = &nmstate.LLDP{Enabled: st.Ptr(true)}
		}))),
		st.Routes(st.Route("198.51.100.0/24", "eth1", "192.0.2.254")),
		st.DNS([]string{"192.0.2.53"}, nil, nil),
	)
	if diff := cmp.Diff(encode(t, want), encode(t, runningConfig(s))); diff != "" {
		t.Errorf("show -r (-want +got):\n%s", diff)
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
