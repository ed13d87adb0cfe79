package nmstate_test

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// kernelLikeYAML is a small apply50-shaped pair: the desired state and
// what the kernel backend shows after applying it (every option the
// kernel reports, the peers' IP stacks disabled as bridge ports, IPv6
// enabled without addresses).
const (
	fastDesiredYAML = `
interfaces:
- name: veth0
  type: veth
  state: up
  veth: {peer: veth0p}
  ipv4: {enabled: true, dhcp: false, address: [{ip: 10.0.0.1, prefix-length: 24}]}
- name: veth0p
  type: veth
  state: up
- name: veth1
  type: veth
  state: up
  veth: {peer: veth1p}
  ipv4: {enabled: true, dhcp: false, address: [{ip: 10.0.1.1, prefix-length: 24}]}
- name: veth1p
  type: veth
  state: up
- name: br0
  type: linux-bridge
  state: up
  bridge:
    options: {stp: {enabled: false}}
    port: [{name: veth1p}, {name: veth0p}]
  ipv4: {enabled: true, dhcp: false, address: [{ip: 172.16.0.1, prefix-length: 24}]}
routes:
  config:
  - {destination: 198.18.0.0/24, next-hop-address: 10.0.0.2, next-hop-interface: veth0, metric: 100, table-id: 254}
  - {destination: 198.18.1.0/24, next-hop-address: 10.0.1.2, next-hop-interface: veth1, metric: 100}
`
	fastCurrentYAML = `
interfaces:
- name: lo
  type: loopback
  state: up
  ipv4: {enabled: true, dhcp: false, address: [{ip: 127.0.0.1, prefix-length: 8}]}
  ipv6: {enabled: true, dhcp: false, autoconf: false, address: [{ip: "::1", prefix-length: 128}]}
  mtu: 65536
- name: veth0
  type: veth
  state: up
  accept-all-mac-addresses: false
  mac-address: DE:DD:A2:19:88:4A
  mtu: 1500
  min-mtu: 68
  max-mtu: 65535
  veth: {peer: veth0p}
  ipv4: {enabled: true, dhcp: false, forwarding: false, address: [{ip: 10.0.0.1, prefix-length: 24}]}
  ipv6: {enabled: true, dhcp: false, autoconf: false, forwarding: false, address: [{ip: "fe80::dcdd:a2ff:fe19:884a", prefix-length: 64}]}
- name: veth0p
  type: veth
  state: up
  controller: br0
  mac-address: B2:13:5D:0E:90:D4
  mtu: 1500
  veth: {peer: veth0}
  ipv4: {enabled: false}
  ipv6: {enabled: false}
- name: veth1
  type: veth
  state: up
  mtu: 1500
  veth: {peer: veth1p}
  ipv4: {enabled: true, dhcp: false, address: [{ip: 10.0.1.1, prefix-length: 24}, {ip: 10.0.1.9, prefix-length: 24, valid-life-time: 30sec, preferred-life-time: 30sec}]}
  ipv6: {enabled: true, dhcp: false, autoconf: false, address: []}
- name: veth1p
  type: veth
  state: up
  controller: br0
  mtu: 1500
  veth: {peer: veth1}
  ipv4: {enabled: false}
  ipv6: {enabled: false}
- name: br0
  type: linux-bridge
  state: up
  mtu: 1500
  mac-address: 42:A5:AE:3E:EC:8A
  bridge:
    options:
      gc-timer: 8
      group-addr: 01:80:C2:00:00:00
      group-forward-mask: 0
      hash-elasticity: 16
      hash-max: 4096
      hello-timer: 0
      mac-ageing-time: 300
      multicast-last-member-count: 2
      multicast-last-member-interval: 100
      multicast-membership-interval: 26000
      multicast-querier: false
      multicast-querier-interval: 25500
      multicast-query-interval: 12500
      multicast-query-response-interval: 1000
      multicast-query-use-ifaddr: false
      multicast-router: auto
      multicast-snooping: true
      multicast-startup-query-count: 2
      multicast-startup-query-interval: 3124
      stp: {enabled: false, forward-delay: 15, hello-time: 2, max-age: 20, priority: 32768}
    port:
    - {name: veth0p, stp-hairpin-mode: false, stp-path-cost: 2, stp-priority: 32}
    - {name: veth1p, stp-hairpin-mode: false, stp-path-cost: 2, stp-priority: 32}
  ipv4: {enabled: true, dhcp: false, forwarding: false, address: [{ip: 172.16.0.1, prefix-length: 24}]}
  ipv6: {enabled: true, dhcp: false, autoconf: false, forwarding: false, address: []}
routes:
  config:
  - {destination: 198.18.1.0/24, next-hop-address: 10.0.1.2, next-hop-interface: veth1, metric: 100, table-id: 254}
  - {destination: 198.18.0.0/24, next-hop-address: 10.0.0.2, next-hop-interface: veth0, metric: 100, table-id: 254}
  - {destination: 10.0.0.0/24, next-hop-interface: veth0, metric: 0, table-id: 254}
`
)

func decodeText(t *testing.T, text string) *nmstate.State {
	t.Helper()
	s, err := nmstate.Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVerifyFastPathAccepts checks that the fast path decides the common
// case alone (so the agreement test below is not vacuous): every desired
// interface and the route list of an apply50-shaped state.
func TestVerifyFastPathAccepts(t *testing.T) {
	desired, current := decodeText(t, fastDesiredYAML), decodeText(t, fastCurrentYAML)
	if err := nmstate.VerifyGeneric(desired, current); err != nil {
		t.Fatalf("generic verify of the matching pair: %v", err)
	}
	ifaces, routes := nmstate.VerifyFastAccepted(desired, current)
	want := []string{"veth0", "veth0p", "veth1", "veth1p", "br0"}
	if diff := cmp.Diff(want, ifaces); diff != "" {
		t.Errorf("interfaces accepted by the fast path (-want +got):\n%s", diff)
	}
	if !routes {
		t.Errorf("the fast path does not accept the routes")
	}
}

// mutation edits one interface (index i) or route of a state; false = not
// applicable to it.
type mutation struct {
	name string
	f    func(s *nmstate.State, i int) bool
}

func ifaceMut(name string, f func(i *nmstate.Interface) bool) mutation {
	return mutation{name, func(s *nmstate.State, i int) bool {
		if i >= len(s.Interfaces) {
			return false
		}
		return f(&s.Interfaces[i])
	}}
}

func ipMut(name string, f func(c *nmstate.IPConfig) bool) []mutation {
	return []mutation{
		ifaceMut("ipv4 "+name, func(i *nmstate.Interface) bool { return i.IPv4 != nil && f(i.IPv4) }),
		ifaceMut("ipv6 "+name, func(i *nmstate.Interface) bool { return i.IPv6 != nil && f(i.IPv6) }),
	}
}

func routeMut(name string, f func(r *nmstate.Route) bool) mutation {
	return mutation{name, func(s *nmstate.State, i int) bool {
		if s.Routes == nil || i >= len(s.Routes.Config) {
			return false
		}
		return f(&s.Routes.Config[i])
	}}
}

func addr(s string) nmstate.Address {
	p := netip.MustParsePrefix(s)
	return nmstate.Address{IP: p.Addr(), PrefixLength: uint8(p.Bits())}
}

// verifyMutations are edits that each touch one rule of the comparison;
// applied to either side of a matching pair they make the generic path
// pass or fail in every way the fast path models (or must refuse).
func verifyMutations() []mutation {
	ms := []mutation{
		ifaceMut("mtu+1", func(i *nmstate.Interface) bool {
			if i.MTU == nil {
				i.MTU = st.Ptr(uint64(1500))
			} else {
				i.MTU = st.Ptr(*i.MTU + 1)
			}
			return true
		}),
		ifaceMut("mtu unset", func(i *nmstate.Interface) bool { i.MTU = nil; return true }),
		ifaceMut("state down", func(i *nmstate.Interface) bool { i.State = nmstate.StateDown; return true }),
		ifaceMut("state unset", func(i *nmstate.Interface) bool { i.State = ""; return true }),
		ifaceMut("state ignore", func(i *nmstate.Interface) bool { i.State = nmstate.StateIgnore; return true }),
		ifaceMut("type dummy", func(i *nmstate.Interface) bool { i.Type = nmstate.TypeDummy; return true }),
		ifaceMut("type unset", func(i *nmstate.Interface) bool { i.Type = ""; return true }),
		ifaceMut("type ethernet", func(i *nmstate.Interface) bool { i.Type = nmstate.TypeEthernet; return true }),
		ifaceMut("controller empty", func(i *nmstate.Interface) bool { i.Controller = st.Ptr(""); return true }),
		ifaceMut("controller unset", func(i *nmstate.Interface) bool { i.Controller = nil; return true }),
		ifaceMut("controller other", func(i *nmstate.Interface) bool { i.Controller = st.Ptr("brX"); return true }),
		ifaceMut("mac lower", func(i *nmstate.Interface) bool {
			if i.MACAddress == nil {
				return false
			}
			i.MACAddress = st.Ptr(nmstate.MAC(fmt.Sprintf("%x", i.MACAddress.Bytes())))
			i.MACAddress = st.Ptr(nmstate.MAC("de:dd:a2:19:88:4a"))
			return true
		}),
		ifaceMut("mac set", func(i *nmstate.Interface) bool { i.MACAddress = st.Ptr(nmstate.MAC("DE:DD:A2:19:88:4A")); return true }),
		ifaceMut("description", func(i *nmstate.Interface) bool { i.Description = st.Ptr("x"); return true }),
		ifaceMut("min-mtu", func(i *nmstate.Interface) bool { i.MinMTU = st.Ptr(uint64(1)); return true }),
		ifaceMut("ipv4 unset", func(i *nmstate.Interface) bool { i.IPv4 = nil; return true }),
		ifaceMut("ipv4 empty", func(i *nmstate.Interface) bool { i.IPv4 = &nmstate.IPConfig{}; return true }),
		ifaceMut("ipv4 empty list", func(i *nmstate.Interface) bool {
			i.IPv4 = &nmstate.IPConfig{Address: []nmstate.Address{}}
			return true
		}),
		ifaceMut("ipv6 unset", func(i *nmstate.Interface) bool { i.IPv6 = nil; return true }),
		ifaceMut("veth unset", func(i *nmstate.Interface) bool { i.Veth = nil; return true }),
		ifaceMut("veth peer", func(i *nmstate.Interface) bool {
			if i.Veth == nil {
				return false
			}
			i.Veth = &nmstate.Veth{Peer: i.Veth.Peer + "x"}
			return true
		}),
		ifaceMut("veth empty peer", func(i *nmstate.Interface) bool { i.Veth = &nmstate.Veth{}; return true }),
		ifaceMut("lldp neighbors", func(i *nmstate.Interface) bool {
			i.LLDP = &nmstate.LLDP{Enabled: st.Ptr(true), Neighbors: []any{map[string]any{"x": "y"}}}
			return true
		}),
		ifaceMut("lldp bad opaque", func(i *nmstate.Interface) bool {
			i.LLDP = &nmstate.LLDP{Neighbors: []any{3}}
			return true
		}),
		ifaceMut("ovs and linux bridge", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil {
				return false
			}
			i.OVSBridge = &nmstate.OVSBridge{}
			return true
		}),
		ifaceMut("bridge unset", func(i *nmstate.Interface) bool { i.LinuxBridge = nil; return i.Type == nmstate.TypeLinuxBridge }),
		ifaceMut("bridge empty", func(i *nmstate.Interface) bool {
			i.LinuxBridge = &nmstate.LinuxBridge{}
			return i.Type == nmstate.TypeLinuxBridge
		}),
		ifaceMut("bridge no ports", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil {
				return false
			}
			i.LinuxBridge.Port = []nmstate.LinuxBridgePort{}
			return true
		}),
		ifaceMut("bridge ports unset", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil {
				return false
			}
			i.LinuxBridge.Port = nil
			return true
		}),
		ifaceMut("bridge drop port", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil || len(i.LinuxBridge.Port) == 0 {
				return false
			}
			i.LinuxBridge.Port = i.LinuxBridge.Port[1:]
			return true
		}),
		ifaceMut("bridge duplicate port", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil || len(i.LinuxBridge.Port) == 0 {
				return false
			}
			i.LinuxBridge.Port = append(i.LinuxBridge.Port[1:], i.LinuxBridge.Port[0], i.LinuxBridge.Port[0])
			return true
		}),
		ifaceMut("bridge port stp", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil || len(i.LinuxBridge.Port) == 0 {
				return false
			}
			i.LinuxBridge.Port[0].STPPriority = st.Ptr(uint16(7))
			return true
		}),
		ifaceMut("bridge port renamed", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil || len(i.LinuxBridge.Port) == 0 {
				return false
			}
			i.LinuxBridge.Port[0].Name = "zz"
			return true
		}),
		ifaceMut("bridge options unset", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil {
				return false
			}
			i.LinuxBridge.Options = nil
			return true
		}),
		ifaceMut("bridge options empty", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil {
				return false
			}
			i.LinuxBridge.Options = &nmstate.LinuxBridgeOptions{}
			return true
		}),
		ifaceMut("bridge stp empty", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil {
				return false
			}
			i.LinuxBridge.Options = &nmstate.LinuxBridgeOptions{STP: &nmstate.LinuxBridgeSTP{}}
			return true
		}),
		ifaceMut("bridge stp on", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil {
				return false
			}
			o := nmstate.LinuxBridgeOptions{}
			if i.LinuxBridge.Options != nil {
				o = *i.LinuxBridge.Options
			}
			o.STP = &nmstate.LinuxBridgeSTP{Enabled: st.Ptr(true)}
			i.LinuxBridge.Options = &o
			return true
		}),
		ifaceMut("bridge hash-max", func(i *nmstate.Interface) bool {
			if i.LinuxBridge == nil || i.LinuxBridge.Options == nil {
				return false
			}
			o := *i.LinuxBridge.Options
			o.HashMax = st.Ptr(uint32(512))
			i.LinuxBridge.Options = &o
			return true
		}),
	}
	for _, m := range [][]mutation{
		ipMut("disabled", func(c *nmstate.IPConfig) bool { c.Enabled = st.Ptr(false); return true }),
		ipMut("enabled unset", func(c *nmstate.IPConfig) bool { c.Enabled = nil; return true }),
		ipMut("dhcp on", func(c *nmstate.IPConfig) bool { c.DHCP = st.Ptr(true); return true }),
		ipMut("dhcp off", func(c *nmstate.IPConfig) bool { c.DHCP = st.Ptr(false); return true }),
		ipMut("dhcp unset", func(c *nmstate.IPConfig) bool { c.DHCP = nil; return true }),
		ipMut("autoconf off", func(c *nmstate.IPConfig) bool { c.Autoconf = st.Ptr(false); return true }),
		ipMut("autoconf unset", func(c *nmstate.IPConfig) bool { c.Autoconf = nil; return true }),
		ipMut("allow extra", func(c *nmstate.IPConfig) bool { c.AllowExtraAddress = st.Ptr(true); return true }),
		ipMut("no extra", func(c *nmstate.IPConfig) bool { c.AllowExtraAddress = st.Ptr(false); return true }),
		ipMut("forwarding", func(c *nmstate.IPConfig) bool { c.Forwarding = st.Ptr(true); return true }),
		ipMut("addresses unset", func(c *nmstate.IPConfig) bool { c.Address = nil; return true }),
		ipMut("addresses empty", func(c *nmstate.IPConfig) bool { c.Address = []nmstate.Address{}; return true }),
		ipMut("drop address", func(c *nmstate.IPConfig) bool {
			if len(c.Address) == 0 {
				return false
			}
			c.Address = c.Address[1:]
			return true
		}),
		ipMut("extra address", func(c *nmstate.IPConfig) bool {
			c.Address = append(c.Address, addr("192.0.2.99/24"))
			return true
		}),
		ipMut("extra v6 address", func(c *nmstate.IPConfig) bool {
			c.Address = append(c.Address, addr("2001:db8::99/64"))
			return true
		}),
		ipMut("link-local address", func(c *nmstate.IPConfig) bool {
			c.Address = append([]nmstate.Address{addr("fe80::1/64")}, c.Address...)
			return true
		}),
		ipMut("zoned link-local", func(c *nmstate.IPConfig) bool {
			c.Address = append(c.Address, nmstate.Address{IP: netip.MustParseAddr("fe80::2%eth0"), PrefixLength: 64})
			return true
		}),
		ipMut("v4-mapped", func(c *nmstate.IPConfig) bool {
			c.Address = append(c.Address, addr("::ffff:10.0.0.1/120"))
			return true
		}),
		ipMut("duplicate address", func(c *nmstate.IPConfig) bool {
			if len(c.Address) == 0 {
				return false
			}
			c.Address = append(c.Address, c.Address[0])
			return true
		}),
		ipMut("dynamic address", func(c *nmstate.IPConfig) bool {
			if len(c.Address) == 0 {
				return false
			}
			a := c.Address[0]
			a.ValidLifetime, a.PreferredLifetime = st.Ptr("30sec"), st.Ptr("30sec")
			c.Address = append([]nmstate.Address{a}, c.Address[1:]...)
			return true
		}),
		ipMut("forever address", func(c *nmstate.IPConfig) bool {
			if len(c.Address) == 0 {
				return false
			}
			a := c.Address[0]
			a.ValidLifetime, a.PreferredLifetime = st.Ptr("forever"), st.Ptr("forever")
			c.Address = append([]nmstate.Address{a}, c.Address[1:]...)
			return true
		}),
		ipMut("prefix length", func(c *nmstate.IPConfig) bool {
			if len(c.Address) == 0 {
				return false
			}
			c.Address = append([]nmstate.Address{}, c.Address...)
			c.Address[0].PrefixLength++
			return true
		}),
		ipMut("reversed", func(c *nmstate.IPConfig) bool {
			if len(c.Address) < 2 {
				return false
			}
			c.Address = append([]nmstate.Address{}, c.Address...)
			c.Address[0], c.Address[len(c.Address)-1] = c.Address[len(c.Address)-1], c.Address[0]
			return true
		}),
	} {
		ms = append(ms, m...)
	}
	ms = append(ms,
		routeMut("table 0", func(r *nmstate.Route) bool { r.TableID = st.Ptr(uint32(0)); return true }),
		routeMut("table unset", func(r *nmstate.Route) bool { r.TableID = nil; return true }),
		routeMut("table 100", func(r *nmstate.Route) bool { r.TableID = st.Ptr(uint32(100)); return true }),
		routeMut("metric", func(r *nmstate.Route) bool { r.Metric = st.Ptr(int64(7)); return true }),
		routeMut("metric unset", func(r *nmstate.Route) bool { r.Metric = nil; return true }),
		routeMut("gateway", func(r *nmstate.Route) bool { r.NextHopAddress = st.Ptr(netip.MustParseAddr("10.9.9.9")); return true }),
		routeMut("gateway empty", func(r *nmstate.Route) bool { r.NextHopAddress = &netip.Addr{}; return true }),
		routeMut("gateway unset", func(r *nmstate.Route) bool { r.NextHopAddress = nil; return true }),
		routeMut("interface", func(r *nmstate.Route) bool { r.NextHopInterface = st.Ptr("veth9"); return true }),
		routeMut("interface empty", func(r *nmstate.Route) bool { r.NextHopInterface = st.Ptr(""); return true }),
		routeMut("interface unset", func(r *nmstate.Route) bool { r.NextHopInterface = nil; return true }),
		routeMut("destination", func(r *nmstate.Route) bool {
			r.Destination = st.Ptr(netip.MustParsePrefix("203.0.113.0/24"))
			return true
		}),
		routeMut("destination unset", func(r *nmstate.Route) bool { r.Destination = nil; return true }),
		routeMut("destination invalid", func(r *nmstate.Route) bool { r.Destination = &netip.Prefix{}; return true }),
		routeMut("weight", func(r *nmstate.Route) bool { r.Weight = st.Ptr(uint16(2)); return true }),
		routeMut("absent", func(r *nmstate.Route) bool { r.State = st.Ptr(nmstate.RouteState("absent")); return true }),
		routeMut("blackhole", func(r *nmstate.Route) bool { r.RouteType = st.Ptr(nmstate.RouteType("blackhole")); return true }),
		mutation{"drop route", func(s *nmstate.State, i int) bool {
			if s.Routes == nil || i >= len(s.Routes.Config) {
				return false
			}
			s.Routes.Config = append(s.Routes.Config[:i:i], s.Routes.Config[i+1:]...)
			return true
		}},
		mutation{"routes unset", func(s *nmstate.State, i int) bool {
			if s.Routes == nil || i > 0 {
				return false
			}
			s.Routes = nil
			return true
		}},
	)
	return ms
}

// verifyPairs are matching (or nearly matching) desired/current pairs:
// the kernel-like pair above and every golden case before and after a
// simulated apply.
func verifyPairs(t *testing.T) map[string][2]*nmstate.State {
	pairs := map[string][2]*nmstate.State{
		"kernel-like": {decodeText(t, fastDesiredYAML), decodeText(t, fastCurrentYAML)},
	}
	dirs, err := filepath.Glob("testdata/cases/*/desired.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		before := verifyCaseState(t, filepath.Join(dir, "current.yaml"))
		desired := verifyCaseState(t, filepath.Join(dir, "desired.yaml"))
		m, err := nmstate.Merge(desired.Clone(), before)
		if err != nil {
			t.Fatalf("%s: Merge: %v", dir, err)
		}
		after := nmstate.Simulate(before, m)
		name := filepath.Base(dir)
		pairs[name+"/after"] = [2]*nmstate.State{m.Desired, after}
		pairs[name+"/before"] = [2]*nmstate.State{m.Desired, before}
		pairs[name+"/given"] = [2]*nmstate.State{desired, after}
	}
	return pairs
}

func mismatches(t *testing.T, err error) nmstate.Mismatches {
	t.Helper()
	if err == nil {
		return nil
	}
	var l nmstate.Mismatches
	if !errors.As(err, &l) {
		t.Fatalf("error %T is not Mismatches: %v", err, err)
	}
	return l
}

// TestVerifyFastPathAgreesWithGeneric checks that the fast path never
// changes a verdict or a message: for every pair, and every pair with one
// mutation on either side, Verify returns exactly what the generic path
// alone returns.
func TestVerifyFastPathAgreesWithGeneric(t *testing.T) {
	muts := verifyMutations()
	checked, failing := 0, 0
	check := func(name string, d, c *nmstate.State) {
		want := mismatches(t, nmstate.VerifyGeneric(d, c))
		got := mismatches(t, nmstate.Verify(d, c))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Verify differs from the generic path (-generic +fast):\n%s", name, diff)
		}
		checked++
		if want != nil {
			failing++
		}
	}
	for name, p := range verifyPairs(t) {
		check(name, p[0], p[1])
		n := max(len(p[0].Interfaces), len(p[1].Interfaces))
		for _, s := range []*nmstate.State{p[0], p[1]} {
			if s.Routes != nil {
				n = max(n, len(s.Routes.Config))
			}
		}
		for _, m := range muts {
			for i := range n {
				for side := range 2 {
					q := [2]*nmstate.State{p[0].Clone(), p[1].Clone()}
					if !m.f(q[side], i) {
						continue
					}
					check(fmt.Sprintf("%s: %s on %s[%d]", name, m.name, [2]string{"desired", "current"}[side], i), q[0], q[1])
				}
			}
		}
	}
	// Both verdicts must be well represented, or the comparison proves
	// little.
	if checked < 2000 || failing < checked/4 || failing > checked*3/4 {
		t.Errorf("%d pairs checked, %d failing: the corpus is too one-sided", checked, failing)
	}
	t.Logf("%d pairs checked, %d failing verification", checked, failing)
}
