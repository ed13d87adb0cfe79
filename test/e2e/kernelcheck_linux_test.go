package e2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// Checks of what the policies of the guest's kernel (bonding, 802.1q, VRF,
// bridge VLAN filtering) leave in a node, read with iproute2 inside it as
// an administrator would: `ip -d link`, `bridge vlan`, `ip route show
// table`.

// bridgeVLANs checks that bridge filters VLANs and that the ports of want
// have exactly those VLANs, as `bridge -compressvlans vlan show` prints them ("1 PVID
// untagged", "2-4094").
func bridgeVLANs(t *testing.T, node, bridge string, want map[string][]string) {
	t.Helper()
	if f, _ := links(t, node)[bridge].LinkInfo.Data["vlan_filtering"].(float64); f != 1 {
		t.Errorf("node %s: %s vlan_filtering %v, want 1", node, bridge, f)
	}
	got := portVLANs(t, node)
	for port, w := range want {
		if diff := cmp.Diff(w, got[port]); diff != "" {
			t.Errorf("node %s: VLANs of %s (-want +got):\n%s", node, port, diff)
		}
	}
}

// portVLANs reads `bridge -j -compressvlans vlan show` of a node: each port's VLANs.
func portVLANs(t *testing.T, node string) map[string][]string {
	t.Helper()
	var list []struct {
		Name  string `json:"ifname"`
		VLANs []struct {
			VLAN    int      `json:"vlan"`
			VLANEnd int      `json:"vlanEnd"`
			Flags   []string `json:"flags"`
		} `json:"vlans"`
	}
	out := c.lab.MustExec(t, node, "bridge", "-j", "-compressvlans", "vlan", "show")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("node %s: bridge -j -compressvlans vlan show: %v\n%.500s", node, err, out)
	}
	got := map[string][]string{}
	for _, p := range list {
		for _, v := range p.VLANs {
			s := fmt.Sprint(v.VLAN)
			if v.VLANEnd != 0 {
				s += fmt.Sprintf("-%d", v.VLANEnd)
			}
			if slices.Contains(v.Flags, "PVID") {
				s += " PVID"
			}
			if slices.Contains(v.Flags, "Egress Untagged") {
				s += " untagged"
			}
			got[p.Name] = append(got[p.Name], s)
		}
	}
	return got
}

// bond checks that name is a bond in mode with miimon and exactly ports,
// and returns the node's links.
func bond(t *testing.T, node, name, mode string, miimon int, ports ...string) map[string]ipLink {
	t.Helper()
	l := links(t, node)
	b, ok := l[name]
	if !ok {
		t.Errorf("node %s: no %s", node, name)
		return l
	}
	if b.LinkInfo.Kind != "bond" || b.LinkInfo.Data["mode"] != mode || b.LinkInfo.Data["miimon"] != float64(miimon) {
		t.Errorf("node %s: %s is a %q with mode %v miimon %v, want a bond in %s with miimon %d",
			node, name, b.LinkInfo.Kind, b.LinkInfo.Data["mode"], b.LinkInfo.Data["miimon"], mode, miimon)
	}
	portsAre(t, node, l, name, ports)
	return l
}

// vlanOn checks that name is an 802.1Q VLAN id on base.
func vlanOn(t *testing.T, node, name, base string, id int) {
	t.Helper()
	v, ok := links(t, node)[name]
	if !ok {
		t.Errorf("node %s: no %s", node, name)
		return
	}
	if v.LinkInfo.Kind != "vlan" || v.LinkInfo.Data["id"] != float64(id) || v.LinkInfo.Data["protocol"] != "802.1Q" || v.Link != base {
		t.Errorf("node %s: %s is a %q on %q with %v, want an 802.1Q VLAN %d on %s", node, name, v.LinkInfo.Kind, v.Link, v.LinkInfo.Data, id, base)
	}
}

// vlanLease waits until iface holds a lease of the switch's VLAN id:
// 10.ID.0.100-199 (the lab's guest mode serves VLANs 102 and 103).
func vlanLease(t *testing.T, node, iface string, id int) {
	t.Helper()
	lo := netip.AddrFrom4([4]byte{10, byte(id), 0, 100})
	hi := netip.AddrFrom4([4]byte{10, byte(id), 0, 199})
	suite.Eventually(t, 30*time.Second*c.slowdown, fmt.Sprintf("node %s: DHCPv4 lease of VLAN %d on %s", node, id, iface), func() error {
		addrs := links(t, node)[iface].ipv4()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a); err == nil && p.Addr().Compare(lo) >= 0 && p.Addr().Compare(hi) <= 0 {
				return nil
			}
		}
		return fmt.Errorf("IPv4 %v, want one of %s-%s", addrs, lo, strings.TrimPrefix(hi.String(), "10."+fmt.Sprint(id)+"."))
	})
}
