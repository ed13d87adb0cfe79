package kernel

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// One Execute deletes a veth (the kernel takes its peer and the macvlan
// on the peer with it) and re-creates all three with an address on the new
// macvlan, with or without deleting the others explicitly: the link cache
// must not answer from the links that went away.
func TestExecuteCacheFollowsCascadingDeletes(t *testing.T) {
	create := []nmstate.Op{
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "v0", Type: nmstate.TypeVeth, Veth: &nmstate.Veth{Peer: "v0p"}}},
		nmstate.LinkCreate{Iface: nmstate.Interface{Name: "mv0", Type: nmstate.TypeMacVlan, MacVlan: &nmstate.MacVlan{BaseIface: str("v0p"), Mode: statetest.Ptr(nmstate.MacVlanMode("bridge"))}}},
	}
	for _, c := range []struct {
		name    string
		deletes []nmstate.Op
	}{
		{"only the veth", []nmstate.Op{nmstate.LinkDelete{Name: "v0", Type: nmstate.TypeVeth}}},
		{"all three, then released and addresses removed", []nmstate.Op{
			nmstate.LinkDelete{Name: "v0", Type: nmstate.TypeVeth},
			nmstate.LinkDelete{Name: "mv0", Type: nmstate.TypeMacVlan},
			nmstate.LinkDelete{Name: "v0p", Type: nmstate.TypeVeth},
			nmstate.LinkSetController{Name: "v0p", Controller: ""},
			nmstate.AddrDelete{Iface: "mv0", Address: staticAddr("192.0.2.9/24")},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, b := openNS(t, Options{})
			execute(t, b, create...)
			before := findIface(t, show(t, b), "mv0")
			ops := append(append([]nmstate.Op{}, c.deletes...), create...)
			ops = append(ops,
				nmstate.LinkSetState{Name: "v0p", Up: true},
				nmstate.LinkSetState{Name: "mv0", Up: true},
				nmstate.AddrAdd{Iface: "mv0", Address: staticAddr("192.0.2.9/24")},
			)
			execute(t, b, ops...)
			after := findIface(t, show(t, b), "mv0")
			if after.State != nmstate.StateUp || len(after.IPv4.Address) != 1 || after.IPv4.Address[0].IP.String() != "192.0.2.9" {
				t.Errorf("re-created mv0: state %s ipv4 %+v, want up with 192.0.2.9", after.State, after.IPv4)
			}
			if after.MACAddress != nil && before.MACAddress != nil && *after.MACAddress == *before.MACAddress {
				t.Errorf("mv0 kept MAC %s: not re-created", *after.MACAddress)
			}
		})
	}
}

// A plan that creates more links than the cache resolves one by one uses
// them all afterwards (ports, up, addresses, routes through them).
func TestExecuteManyCreatedLinksThenUsed(t *testing.T) {
	_, b := openNS(t, Options{})
	const pairs = 12
	var ops []nmstate.Op
	ops = append(ops, nmstate.LinkCreate{Iface: nmstate.Interface{Name: "br0", Type: nmstate.TypeLinuxBridge}})
	for i := range pairs {
		ops = append(ops, nmstate.LinkCreate{Iface: nmstate.Interface{Name: fmt.Sprintf("a%d", i), Type: nmstate.TypeVeth, Veth: &nmstate.Veth{Peer: fmt.Sprintf("a%dp", i)}}})
	}
	for i := range pairs {
		ops = append(ops, nmstate.LinkSetController{Name: fmt.Sprintf("a%dp", i), Controller: "br0"})
	}
	for i := range pairs {
		ops = append(ops,
			nmstate.LinkSetState{Name: fmt.Sprintf("a%d", i), Up: true},
			nmstate.AddrAdd{Iface: fmt.Sprintf("a%d", i), Address: staticAddr(fmt.Sprintf("10.9.%d.1/24", i))},
			nmstate.RouteReplace{Route: nmstate.Route{Destination: statetest.Ptr(prefix(fmt.Sprintf("198.18.%d.0/24", i))),
				NextHopInterface: str(fmt.Sprintf("a%d", i)), NextHopAddress: statetest.Ptr(addr(fmt.Sprintf("10.9.%d.2", i))), Metric: statetest.Ptr[int64](100)}},
		)
	}
	execute(t, b, ops...)
	execute(t, b, ops...) // again: converges
	st := show(t, b)
	var ports []string
	for _, p := range findIface(t, st, "br0").LinuxBridge.Port {
		ports = append(ports, p.Name)
	}
	var want []string
	for i := range pairs {
		want = append(want, fmt.Sprintf("a%dp", i))
	}
	if diff := cmp.Diff(len(want), len(ports)); diff != "" {
		t.Errorf("br0 ports %v, want %v", ports, want)
	}
	routes := 0
	for _, r := range st.Routes.Config {
		if r.Destination != nil && strings.HasPrefix(r.Destination.String(), "198.18.") {
			routes++
		}
	}
	if routes != pairs {
		t.Errorf("%d routes through the new veths, want %d", routes, pairs)
	}
}

// A run of sysctl writes shares one namespace switch; a failing one is
// still reported with its own operation text, after the ones before it
// took effect.
func TestExecuteSysctlRunReportsTheFailingOp(t *testing.T) {
	_, b := openNS(t, Options{})
	execute(t, b, nmstate.LinkCreate{Iface: nmstate.Interface{Name: "v0", Type: nmstate.TypeVeth, Veth: &nmstate.Veth{Peer: "v0p"}}})
	bad := nmstate.SysctlSet{Iface: "nosuch0", Key: "net.ipv6.conf.nosuch0.disable_ipv6", Value: "1"}
	err := b.Execute(context.Background(), &nmstate.Plan{Ops: []nmstate.Op{
		nmstate.SysctlSet{Iface: "v0", Key: "net.ipv6.conf.v0.disable_ipv6", Value: "1"},
		bad,
		nmstate.SysctlSet{Iface: "v0p", Key: "net.ipv6.conf.v0p.disable_ipv6", Value: "1"},
	}})
	if err == nil || !strings.HasPrefix(err.Error(), bad.String()+": ") {
		t.Fatalf("error %v, want it to start with %q", err, bad.String())
	}
	st := show(t, b)
	if v6 := findIface(t, st, "v0").IPv6; v6 == nil || v6.Enabled == nil || *v6.Enabled {
		t.Errorf("v0 ipv6 %+v, want disabled (written before the failure)", v6)
	}
	if v6 := findIface(t, st, "v0p").IPv6; v6 == nil || v6.Enabled == nil || !*v6.Enabled {
		t.Errorf("v0p ipv6 %+v, want enabled (after the failure)", v6)
	}
}
