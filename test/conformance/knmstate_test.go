package conformance

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// bondVLANFile is kubernetes-nmstate's docs/examples/bond-vlan.yaml, an
// NNCP whose spec.desiredState uses DHCP; the lane has no DHCP server, so
// staticBondVLAN swaps DHCP for fixed addresses.
const bondVLANFile = "testdata/knmstate-examples/bond-vlan.yaml"

// bondVLANAddresses are the static IPv4 addresses that replace DHCP.
var bondVLANAddresses = map[string]string{
	"bond0":     "192.0.2.1/24",
	"bond0.102": "198.51.100.1/24",
}

// bondVLANCleanup removes what the bond-vlan policy creates.
const bondVLANCleanup = `
interfaces:
- {name: bond0.102, type: vlan, state: absent}
- {name: bond0, type: bond, state: absent}
`

// vrfNameFile is kubernetes-nmstate's VRF e2e state that names the route's
// VRF with nmstate 2.2.55's `vrf-name` instead of a table-id.
const vrfNameFile = "testdata/knmstate-examples/vrf-name.yaml"

// vrfNameCleanup removes what the vrf-name policy creates (vrfAbsent of
// the upstream test) and eth1's address.
const vrfNameCleanup = `
interfaces:
- {name: vrf103, type: vrf, state: absent}
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}}
`

// policyState decodes the spec.desiredState of the policy in file.
func policyState(t *testing.T, file string) *nmstate.State {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Spec struct {
			DesiredState json.RawMessage `json:"desiredState"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &policy); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	s, err := nmstate.Decode(policy.Spec.DesiredState)
	if err != nil {
		t.Fatalf("%s: spec.desiredState: %v", file, err)
	}
	return s
}

// TestVRFNameExamplePlan plans the vrf-name policy against a node with
// eth1 and no VRF: the route goes to the VRF's table 103.
func TestVRFNameExamplePlan(t *testing.T) {
	cur, err := nmstate.Decode([]byte(`
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: false}}
`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := nmstate.Merge(policyState(t, vrfNameFile), cur)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Routes) != 1 || m.Routes[0].TableID == nil || *m.Routes[0].TableID != 103 || m.Routes[0].VRFName != nil {
		t.Fatalf("merged routes = %+v, want the route in table 103 without vrf-name", m.Routes)
	}
}

// staticBondVLAN reads the policy's spec.desiredState and replaces every
// DHCPv4 configuration by the static address of bondVLANAddresses.
func staticBondVLAN(t *testing.T) *nmstate.State {
	t.Helper()
	data, err := os.ReadFile(bondVLANFile)
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Spec struct {
			DesiredState json.RawMessage `json:"desiredState"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &policy); err != nil {
		t.Fatalf("%s: %v", bondVLANFile, err)
	}
	s, err := nmstate.Decode(policy.Spec.DesiredState)
	if err != nil {
		t.Fatalf("%s: spec.desiredState: %v", bondVLANFile, err)
	}
	for i := range s.Interfaces {
		ifc := &s.Interfaces[i]
		if !ifc.IPv4.IsAuto() {
			continue
		}
		addr, ok := bondVLANAddresses[ifc.Name]
		if !ok {
			t.Fatalf("%s: no static address for %s", bondVLANFile, ifc.Name)
		}
		p := netip.MustParsePrefix(addr)
		on, off := true, false
		ifc.IPv4 = &nmstate.IPConfig{Enabled: &on, DHCP: &off,
			Address: []nmstate.Address{{IP: p.Addr(), PrefixLength: uint8(p.Bits())}}}
	}
	return s
}

// TestBondVLANExampleWithStaticAddresses checks the rewrite the qemu lane
// applies: the same interfaces, no DHCP left, the static addresses in.
func TestBondVLANExampleWithStaticAddresses(t *testing.T) {
	s := staticBondVLAN(t)
	got := map[string]string{}
	for _, ifc := range s.Interfaces {
		if ifc.IPv4 == nil || ifc.IPv4.IsAuto() || len(ifc.IPv4.Address) != 1 {
			t.Errorf("%s: ipv4 is not one static address: %+v", ifc.Name, ifc.IPv4)
			continue
		}
		a := ifc.IPv4.Address[0]
		got[ifc.Name] = fmt.Sprintf("%s/%d", a.IP, a.PrefixLength)
	}
	if diff := cmp.Diff(bondVLANAddresses, got); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if err := nmstate.Validate(s, nil); err != nil {
		t.Errorf("rewritten state does not validate: %v", err)
	}
}
