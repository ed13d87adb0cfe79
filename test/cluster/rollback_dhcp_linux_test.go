package cluster

import (
	"context"
	"net/netip"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/internal/testbed/suite"
	"github.com/knmstate/knmstate/pkg/noded"
)

// nodedDir is the node runtime's state directory (its record of specs and
// leases): in kubelet mode below the node's /var/lib, as the handler pod
// sees it.
func (c *cluster) nodedDir(node string) string {
	if c.st.Kubelet {
		return filepath.Join(c.dir, "nodes", node, "var", "lib", "knmstate", "noded")
	}
	return filepath.Join(c.dir, "nodes", node, "noded")
}

// eth0Lease is the node runtime's installed DHCPv4 lease of eth0, if any.
func eth0Lease(t testing.TB, c *cluster, node string) (noded.InstalledLease, bool) {
	t.Helper()
	rec, err := noded.ReadRecord(c.nodedDir(node))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range rec.Leases {
		if l.Interface == "eth0" && l.Family == 4 && !l.OneShot {
			return l, true
		}
	}
	return noded.InstalledLease{}, false
}

// TestRollbackPrimaryNICDHCPToStatic is upstream's "connectivity to
// default gw is lost": the primary NIC goes from DHCP to a static address
// (the leased one) with a default gateway nobody answers on. The probes
// fail and the change is rolled back: eth0 is on DHCP again, its DHCP
// client runs again (a lease acquired after the rollback began, not the
// record of the old one) and holds the same address.
func TestRollbackPrimaryNICDHCPToStatic(t *testing.T) {
	c := sharedLab(t)
	before, ok := eth0Lease(t, c, rollbackNode)
	if !ok {
		t.Fatalf("%s: eth0 has no DHCP lease before the test", rollbackNode)
	}
	addr := before.Address
	if want := c.node(t, rollbackNode).Address; addr.Addr() != netip.MustParseAddr(want) {
		t.Fatalf("%s: eth0 leased %s, the lab reserved %s", rollbackNode, addr, want)
	}
	begin := time.Now()
	expectRollback(t, "primary-nic-static-bad-gateway", `
interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4:
    dhcp: false
    enabled: true
    address:
    - ip: `+addr.Addr().String()+`
      prefix-length: `+strconv.Itoa(addr.Bits())+`
routes:
  config:
  - destination: 0.0.0.0/0
    metric: 150
    next-hop-address: 192.0.2.254
    next-hop-interface: eth0
    table-id: 254
`)
	var after noded.InstalledLease
	suite.EventuallyEvery(t, time.Minute, 250*time.Millisecond, "", suite.Cond(func() bool {
		var ok bool
		after, ok = eth0Lease(t, c, rollbackNode)
		return ok && after.Expires.After(before.Expires) && after.Expires.After(begin)
	}, func() string {
		return "no DHCP lease of eth0 acquired after the rollback began (before: " + before.Expires.String() +
			", now: " + after.Expires.String() + ")"
	}))
	if after.Address != before.Address {
		t.Errorf("eth0 lease after the rollback %s, before %s", after.Address, before.Address)
	}
	suite.EventuallyEvery(t, 30*time.Second, 250*time.Millisecond, "", suite.Cond(func() bool { return nnsDHCP4(t, c, rollbackNode, "eth0") },
		func() string {
			return "the node network state does not show eth0 with ipv4 dhcp: true after the rollback"
		}))
	// And it stays on DHCP (upstream checks the flag for a while): the
	// client the rollback started renews its lease (at T1, half the lab's
	// lease time) and keeps the address, and the node still reports DHCP.
	var renewed noded.InstalledLease
	suite.EventuallyEvery(t, 3*time.Minute, time.Second, "", suite.Cond(func() bool {
		var ok bool
		renewed, ok = eth0Lease(t, c, rollbackNode)
		return ok && renewed.Expires.After(after.Expires)
	}, func() string {
		return "eth0's DHCP lease not renewed after the rollback (acquired: " + after.Expires.String() + ", now: " + renewed.Expires.String() + ")"
	}))
	if renewed.Address != before.Address {
		t.Errorf("eth0 lease renewed with %s, before the policy %s", renewed.Address, before.Address)
	}
	if !nnsDHCP4(t, c, rollbackNode, "eth0") {
		t.Error("the node network state does not show eth0 with ipv4 dhcp: true once its lease was renewed")
	}
}

// TestRollbackNameServersRemoved: upstream's DNS break "servers removed":
// auto-dns off and an empty server list leaves the node without a name
// server; the DNS probe finds none, and the change is rolled back.
func TestRollbackNameServersRemoved(t *testing.T) {
	expectRollback(t, "dns-removed", `
dns-resolver:
  config:
    search: []
    server: []
interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4:
    auto-dns: false
    dhcp: true
    enabled: true
  ipv6:
    auto-dns: false
    dhcp: true
    autoconf: true
    enabled: true
`)
}

// TestRollbackScopedLinkLocalNameServers: upstream's DNS break with
// IPv6 link-local name servers scoped to the primary NIC that nobody
// answers on; the change is rolled back.
func TestRollbackScopedLinkLocalNameServers(t *testing.T) {
	expectRollback(t, "dns-link-local", `
dns-resolver:
  config:
    search: []
    server:
    - fe80::deef:1%eth0
    - fe80::deef:2%eth0
interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4:
    auto-dns: false
    dhcp: true
    enabled: true
  ipv6:
    auto-dns: false
    dhcp: true
    autoconf: true
    enabled: true
`)
}

// nnsDHCP4 reports whether the node's NodeNetworkState shows iface with
// ipv4 dhcp: true.
func nnsDHCP4(t testing.TB, c *cluster, node, iface string) bool {
	t.Helper()
	o, err := c.dyn.Resource(nnsGVR).Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		return false
	}
	ifaces, _ := nested(o.Object, "status", "currentState", "interfaces").([]any)
	for _, i := range ifaces {
		m, _ := i.(map[string]any)
		if m["name"] == iface {
			return nested(m, "ipv4", "dhcp") == true
		}
	}
	return false
}
