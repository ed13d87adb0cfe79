package conformance

import (
	"net"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// TestHostExamples runs the Scenarios the development VM's kernel can run
// without Open vSwitch (the qemu lane runs them too, on Debian's kernel).
func TestHostExamples(t *testing.T) {
	runLane(t, HostLane, false, newNode)
}

// TestCheckKernelSeesWhatIsMissing proves the direct netlink check can
// fail: against a node where nothing was applied, it reports each missing
// link, address and route.
func TestCheckKernelSeesWhatIsMissing(t *testing.T) {
	n := newNode(t)
	for file, want := range map[string][]string{
		"veth1_up.yml":         {"veth1: not in the kernel"},
		"eth1_add_route.yml":   {"eth1: address 192.0.2.251/24 not in the kernel", "route 198.51.100.0/24 (table 254) not in the kernel (found 0 candidates)", "route 198.51.200.0/24 (table 254) not in the kernel (found 0 candidates)"},
		"veth1_absent.yml":     nil,
		"vrf0_with_eth1.yml":   {"vrf0: not in the kernel", `eth1: controller "", want "vrf0"`},
		"bond_port_absent.yml": {"eth1: admin up true, want false", "eth2: admin up true, want false"},
		"eth1_add_route_rule.yml": {"eth1: address 192.0.2.251/24 not in the kernel",
			"route 198.51.100.0/24 (table 254) not in the kernel (found 0 candidates)",
			"rule from 198.51.100.0/24 to 192.0.2.0/24 not in the kernel (3 rules)"},
		"dns_edit_eth1.yml": {"eth1: address 192.0.2.10/24 not in the kernel",
			"eth1: address 2001:db8:1::a/64 not in the kernel",
			`resolv.conf nameserver: ["192.0.2.53"], want ["2001:4860:4860::8888" "8.8.8.8"]`,
			`resolv.conf options: [], want ["rotate" "debug"]`,
			`resolv.conf search: [], want ["example.com" "example.org"]`,
			"route 0.0.0.0/0 (table 254) not in the kernel (found 0 candidates)",
			"route ::/0 (table 254) not in the kernel (found 0 candidates)"},
	} {
		desired, err := nmstate.Decode(readExample(t, file))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		if err := n.checkKernel(desired); err != nil {
			got = strings.Split(err.Error(), "\n")
		}
		sort.Strings(got)
		sort.Strings(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
}

// hostname is the machine's hostname, which a fresh UTS namespace starts
// with.
func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCheckRouteGoneSeesLeftovers: a static route through eth1 survives
// no absent pattern for eth1.
func TestCheckRouteGoneSeesLeftovers(t *testing.T) {
	n := newNode(t)
	n.ns.AddrAdd(t, "eth1", "192.0.2.251/24")
	l, err := n.ns.Netlink.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	_, dst, _ := net.ParseCIDR("198.51.100.0/24")
	if err := n.ns.Netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: dst, Gw: net.ParseIP("192.0.2.1"), Protocol: unix.RTPROT_STATIC}); err != nil {
		t.Fatal(err)
	}
	desired, err := nmstate.Decode(readExample(t, "eth1_del_all_routes.yml"))
	if err != nil {
		t.Fatal(err)
	}
	err = n.checkKernel(desired)
	if err == nil || !strings.Contains(err.Error(), "static routes left after an absent pattern: [{Ifindex: ") {
		t.Errorf("got %v, want the leftover route reported", err)
	}
}

// TestCheckBridgeVLANSeesMissingMembership: eth1 is in no bridge, so an
// access port configuration cannot be found.
func TestCheckBridgeVLANSeesMissingMembership(t *testing.T) {
	n := newNode(t)
	access, tag := nmstate.BridgeVLANMode("access"), uint16(5)
	err := n.checkBridgeVLAN("eth1", &nmstate.BridgeVLAN{Mode: &access, Tag: &tag})
	want := "eth1: bridge vlans map[], want map[5:pvid untagged]"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
