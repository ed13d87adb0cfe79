package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

var (
	allNodes    = []string{"node01", "node02", "node03"}
	workerNodes = []string{"node02", "node03"}
	switchNet   = netip.MustParsePrefix("192.0.2.0/24")
)

// example is one kubernetes-nmstate example run on the 3-node lab.
type example struct {
	file string
	// name, when set, renames the policy and drops its node selector (the
	// same example rolled out on every node, for the timing figure).
	allNodesAs string
	nodes      []string
	// check looks at one selected node's namespace once the policy is
	// Available.
	check func(t *testing.T, c *cluster, node string)
	// figure logs create → Available; writes counts the API writes.
	figure, writes bool
	// features are the enactments' status.features (nmstate's names,
	// sorted).
	features []string
}

// TestExamples rolls the upstream examples out one after the other on the
// 3-node lab (eth1, eth2 are veth NICs on the switch): each reaches
// Available with an Available enactment on exactly the selected nodes, the
// nodes' namespaces carry the configuration, and deleting the policy
// removes its enactments (the network is left as it is, as upstream).
func TestExamples(t *testing.T) {
	c := sharedLab(t)
	examples := []example{
		{file: "linux-bridge.yaml", nodes: allNodes, check: checkBridge, figure: true},
		{file: "detach-bridge-port-and-restore-eth.yaml", nodes: allNodes, check: checkDetached},
		{file: "ethernet.yaml", nodes: allNodes, check: checkDHCP("eth1")},
		{file: "dhcp.yaml", nodes: allNodes, check: checkDHCP("eth1")},
		{file: "worker-selector.yaml", nodes: workerNodes, check: checkDHCP("eth1")},
		{file: "static-ip.yaml", nodes: []string{"node02"}, check: checkAddress("eth1", "10.244.0.2/24"), figure: true},
		{file: "static-ip.yaml", allNodesAs: "static-ip-all-nodes", nodes: allNodes, check: checkAddress("eth1", "10.244.0.2/24"), figure: true, writes: true},
		{file: "route.yaml", nodes: []string{"node02"}, check: checkRoute, features: []string{"static-route"}},
		{file: "dns.yaml", nodes: allNodes, check: checkDNS, features: []string{"static-dns-name-server", "static-dns-search"}},
	}
	for _, ex := range examples {
		name := strings.TrimSuffix(ex.file, ".yaml")
		if ex.allNodesAs != "" {
			name = ex.allNodesAs
		}
		t.Run(name, func(t *testing.T) {
			p := readPolicy(t, ex.file)
			adaptToLab(t, p)
			if ex.allNodesAs != "" {
				p.Name, p.Spec.NodeSelector = ex.allNodesAs, nil
			}
			var count *writeCounter
			if ex.writes {
				count = countWrites(t, c, p.Name)
			}
			t0 := time.Now()
			c.create(t, p)
			c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 2*time.Minute)
			took := time.Since(t0)
			es := c.waitEnactments(t, p.Name, ex.nodes, 30*time.Second, phaseAvailable)
			for _, e := range es {
				if !slices.Equal(e.Status.Features, ex.features) {
					t.Errorf("enactment %s: status.features %q, want %q", e.Name, e.Status.Features, ex.features)
				}
			}
			if ex.figure {
				t.Logf("FIGURE rollout-time: %s on %d node(s): NNCP create -> Available %v (50 ms polling)", p.Name, len(ex.nodes), took.Round(time.Millisecond))
			}
			for _, n := range ex.nodes {
				ex.check(t, c, n)
			}
			if count != nil {
				// The count ends with the policy's deletion: every write of
				// the rollout is before it.
				c.deletePolicy(t, p.Name)
				w := count.stopAtDeletion(t)
				for _, n := range ex.nodes {
					t.Logf("FIGURE api-writes: %s rollout, node %s: enactment %d (create, status, permit), NodeNetworkState %d",
						p.Name, n, w.enactment[shared.EnactmentName(n, p.Name)], w.nns[n])
				}
				t.Logf("FIGURE api-writes: %s rollout: policy status writes %d (all by the controller)", p.Name, w.policy)
				for _, n := range ex.nodes {
					if w.enactment[shared.EnactmentName(n, p.Name)] == 0 {
						t.Errorf("no enactment write seen for %s: the counting watch missed the rollout", n)
					}
				}
			}
			c.deletePolicy(t, p.Name)
			if es, err := c.enactments(t.Context(), p.Name); err != nil || len(es) != 0 {
				t.Errorf("policy %s deleted: enactments left %s (%v)", p.Name, describe(es), err)
			}
		})
	}
	t.Run("reset", func(t *testing.T) {
		// Leave eth1 as the lab made it for the other tests: no IPv4, IPv6
		// link-local only (a DHCPv6 lease arriving later would change the
		// node under the next test's snapshot).
		p := policyYAML(t, "cluster-test-reset", nil, `
interfaces:
- name: eth1
  type: ethernet
  state: up
  ipv4:
    enabled: false
  ipv6:
    enabled: true
    dhcp: false
    autoconf: false
    address: []
routes:
  config:
  - destination: 198.51.100.0/24
    state: absent
`)
		c.create(t, p)
		c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 2*time.Minute)
		for _, n := range allNodes {
			if got := addrsOf(t, c.netlink(t, n), "eth1"); len(got) != 0 {
				t.Errorf("node %s: eth1 has IPv4 %v after ipv4.enabled false", n, got)
			}
			s := snapshot(t, c.netlink(t, n))
			for _, a := range s.Addresses {
				if strings.HasSuffix(a, " dev eth1") && !strings.HasPrefix(a, "fe80:") {
					t.Errorf("node %s: %s left after ipv6 dhcp, autoconf off and no addresses", n, a)
				}
			}
		}
	})
}

func checkBridge(t *testing.T, c *cluster, node string) {
	nl := c.netlink(t, node)
	br, err := nl.LinkByName("br1")
	if err != nil {
		t.Fatalf("node %s: br1: %v", node, err)
	}
	if br.Type() != "bridge" || br.Attrs().Flags&unix.IFF_UP == 0 {
		t.Errorf("node %s: br1 is %s, flags %v; want an up bridge", node, br.Type(), br.Attrs().Flags)
	}
	eth1, err := nl.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	if eth1.Attrs().MasterIndex != br.Attrs().Index {
		t.Errorf("node %s: eth1 controller index %d, want br1's %d", node, eth1.Attrs().MasterIndex, br.Attrs().Index)
	}
	if b, ok := br.(*netlink.Bridge); ok && b.VlanFiltering != nil {
		t.Logf("node %s: br1 vlan_filtering %v", node, *b.VlanFiltering)
	}
	waitDHCP(t, c, node, "br1")
}

func checkDetached(t *testing.T, c *cluster, node string) {
	nl := c.netlink(t, node)
	if _, err := nl.LinkByName("br1"); err == nil {
		t.Errorf("node %s: br1 still exists", node)
	}
	eth1, err := nl.LinkByName("eth1")
	if err != nil {
		t.Fatal(err)
	}
	if eth1.Attrs().MasterIndex != 0 {
		t.Errorf("node %s: eth1 still has a controller (index %d)", node, eth1.Attrs().MasterIndex)
	}
	waitDHCP(t, c, node, "eth1")
}

func checkDHCP(link string) func(*testing.T, *cluster, string) {
	return func(t *testing.T, c *cluster, node string) {
		eth, err := c.netlink(t, node).LinkByName(link)
		if err != nil {
			t.Fatal(err)
		}
		if eth.Attrs().Flags&unix.IFF_UP == 0 {
			t.Errorf("node %s: %s is down", node, link)
		}
		waitDHCP(t, c, node, link)
	}
}

// waitDHCP waits until link has an address from the switch's DHCP pool
// (other than the node's eth0 address).
func waitDHCP(t *testing.T, c *cluster, node, link string) {
	t.Helper()
	nl := c.netlink(t, node)
	eth0 := netip.MustParseAddr(c.node(t, node).Address)
	var got []netip.Prefix
	suite.EventuallyEvery(t, 30*time.Second, 100*time.Millisecond, "", suite.Cond(func() bool {
		got = addrsOf(t, nl, link)
		for _, a := range got {
			if switchNet.Contains(a.Addr()) && a.Addr() != eth0 && a.Bits() == 24 {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("node %s: %s has IPv4 %v, want a DHCP lease in %s", node, link, got, switchNet)
	}))
}

func checkAddress(link, want string) func(*testing.T, *cluster, string) {
	return func(t *testing.T, c *cluster, node string) {
		got := addrsOf(t, c.netlink(t, node), link)
		if !slices.Contains(got, netip.MustParsePrefix(want)) {
			t.Errorf("node %s: %s has IPv4 %v, want %s", node, link, got, want)
		}
	}
}

func checkRoute(t *testing.T, c *cluster, node string) {
	checkAddress("eth1", "192.0.2.251/24")(t, c, node)
	s := snapshot(t, c.netlink(t, node))
	want := fmt.Sprintf("table %d 198.51.100.0/24 via 192.0.2.2 dev eth1", unix.RT_TABLE_MAIN)
	for _, r := range s.Routes {
		if strings.HasPrefix(r, want+" ") && strings.HasSuffix(r, " metric 150") {
			return
		}
	}
	t.Errorf("node %s: no route %q metric 150; routes:\n%s", node, want, strings.Join(s.Routes, "\n"))
}

func checkDNS(t *testing.T, c *cluster, node string) {
	b, err := os.ReadFile(c.node(t, node).ResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	var servers, search []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "nameserver":
			servers = append(servers, f[1])
		case len(f) >= 2 && f[0] == "search":
			search = append(search, f[1:]...)
		}
	}
	// The policy's first, in its order (what nmstate verifies); after them
	// only what eth0's DHCP gives (auto-dns stays on there): the switch's
	// server, already listed, and its domain.
	wantServers, wantSearch := []string{"192.0.2.1", "2001:db8::1"}, []string{"example.com", "example.org"}
	fromLease := func(got, want []string, lease ...string) bool {
		if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
			return false
		}
		for _, g := range got[len(want):] {
			if !slices.Contains(lease, g) {
				return false
			}
		}
		return true
	}
	if !fromLease(servers, wantServers) || !fromLease(search, wantSearch, "lab.example") {
		t.Errorf("node %s: resolv.conf servers %v search %v, want the policy's %v %v first and then only eth0's DHCP domain lab.example; file:\n%s",
			node, servers, search, wantServers, wantSearch, b)
	}
}

// writeCounts are API writes seen by watches during a rollout, by object.
type writeCounts struct {
	enactment map[string]int
	nns       map[string]int
	policy    int
}

// writeCounter counts the writes of a rollout (countWrites).
type writeCounter struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	w      writeCounts
	// deleted are the objects whose deletion the watches delivered:
	// "policy" and the enactments' names.
	deleted map[string]bool
}

// countWrites watches the policy, its enactments and every
// NodeNetworkState from now on and counts their writes (each watch event
// but a deletion is one write that changed the object) until stop or
// stopAtDeletion.
func countWrites(t *testing.T, c *cluster, p string) *writeCounter {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	wc := &writeCounter{cancel: cancel, w: writeCounts{enactment: map[string]int{}, nns: map[string]int{}}, deleted: map[string]bool{}}
	run := func(wi watch.Interface, add func(name string), deleted func(name string)) {
		wc.wg.Add(1)
		go func() {
			defer wc.wg.Done()
			defer wi.Stop()
			for {
				select {
				case ev, ok := <-wi.ResultChan():
					if !ok {
						return
					}
					if o, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Bookmark {
						wc.mu.Lock()
						if ev.Type == watch.Deleted {
							deleted(o.GetName())
						} else {
							add(o.GetName())
						}
						wc.mu.Unlock()
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	w := &wc.w
	run(watchFromNow(t, c, nnceGVR, metav1.ListOptions{LabelSelector: shared.EnactmentPolicyLabel + "=" + p}),
		func(n string) { w.enactment[n]++ }, func(n string) { wc.deleted[n] = true })
	run(watchFromNow(t, c, nnsGVR, metav1.ListOptions{}), func(n string) { w.nns[n]++ }, func(string) {})
	run(watchFromNow(t, c, nncpGVR, metav1.ListOptions{FieldSelector: "metadata.name=" + p}),
		func(string) { w.policy++ }, func(string) { wc.deleted["policy"] = true })
	return wc
}

// stop ends the count and returns it.
func (wc *writeCounter) stop() writeCounts {
	wc.cancel()
	wc.wg.Wait()
	wc.mu.Lock()
	defer wc.mu.Unlock()
	w := wc.w
	// The policy's own creation is the user's write, not a status write.
	w.policy = max(w.policy-1, 0)
	return w
}

// stopAtDeletion ends the count once the watches have delivered the
// deletion of the policy and of each enactment they saw (the test deletes
// the policy): a watch delivers an object's writes in order, so every
// write of the rollout to the policy and its enactments is counted.
func (wc *writeCounter) stopAtDeletion(t *testing.T) writeCounts {
	t.Helper()
	suite.EventuallyEvery(t, time.Minute, 50*time.Millisecond, "the counting watches seeing the policy deleted", func() error {
		wc.mu.Lock()
		defer wc.mu.Unlock()
		if !wc.deleted["policy"] {
			return errors.New("the policy's deletion not seen")
		}
		for n := range wc.w.enactment {
			if !wc.deleted[n] {
				return fmt.Errorf("the deletion of enactment %s not seen", n)
			}
		}
		return nil
	})
	return wc.stop()
}
