// The tests of this file drive knmstate's opt-in policy annotations
// (docs/extensions.md) through kubectl: knmstate.io/dry-run and
// knmstate.io/probes.

package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// withAnnotations inserts metadata annotations into a policy manifest made
// by policyYAML or nodePolicyYAML.
func withAnnotations(manifest string, annotations map[string]string) string {
	var b strings.Builder
	b.WriteString("  annotations:\n")
	for k, v := range annotations {
		fmt.Fprintf(&b, "    %s: %q\n", k, v)
	}
	return strings.Replace(manifest, "\nspec:\n", "\n"+b.String()+"spec:\n", 1)
}

// nodeKnmstate is the knmstate binary as a node sees it: the suite's, or
// in the guest the copy the lab put there (internal/testbed/lab's guestBinary).
func nodeKnmstate() string {
	if c.fullKernel {
		return "/usr/bin/knmstate"
	}
	return c.knmstate
}

// lifetimes are the countdowns of `ip addr` (DHCP and SLAAC addresses)
// and expires are those of `ip route` (RA routes): they move by
// themselves, so a snapshot leaves them out.
var (
	lifetimes = regexp.MustCompile(`(?m)^\s+valid_lft .*\n`)
	expires   = regexp.MustCompile(`expires \d+sec`)
)

// snapshot is a node's network as iproute2 prints it: addresses with
// link details, routes of every table, rules. In kubelet mode the pod
// network (cni0, the pods' veths, their routes) is the node's, not the
// policies', and changes as pods come and go: it is left out.
func snapshot(t *testing.T, node string) string {
	t.Helper()
	addr := lifetimes.ReplaceAllString(c.lab.MustExec(t, node, "ip", "-d", "addr"), "")
	routes := expires.ReplaceAllString(c.lab.MustExec(t, node, "ip", "route", "show", "table", "all")+
		c.lab.MustExec(t, node, "ip", "-6", "route", "show", "table", "all"), "expires -")
	if c.kubelet {
		addr, routes = withoutPodNetwork(addr, true), withoutPodNetwork(routes, false)
	}
	return addr + routes + c.lab.MustExec(t, node, "ip", "rule") + c.lab.MustExec(t, node, "ip", "-6", "rule")
}

// podLink matches what belongs to kubelet mode's pod network in iproute2's
// output: cni0 and the pods' veths (ports of cni0).
var podLink = regexp.MustCompile(`\bcni0\b|\bdev veth[0-9a-f]+\b|^\d+: veth[0-9a-f]+@`)

// withoutPodNetwork drops the pod network from `ip -d addr` (blocks, one
// per link, when blocks) or from a list of routes (lines).
func withoutPodNetwork(out string, blocks bool) string {
	var b strings.Builder
	skip := false
	for _, line := range strings.SplitAfter(out, "\n") {
		header := !strings.HasPrefix(line, " ")
		if !blocks || header {
			skip = podLink.MatchString(line)
		}
		if !skip {
			b.WriteString(line)
		}
	}
	return b.String()
}

// settledSnapshots waits until the nodes' snapshots stop changing by
// themselves (a fresh lab's SLAAC addresses finishing DAD, the first
// router advertisement's default route) and returns them.
func settledSnapshots(t *testing.T, nodes []string) map[string]string {
	t.Helper()
	take := func() map[string]string {
		out := map[string]string{}
		for _, n := range nodes {
			out[n] = snapshot(t, n)
		}
		return out
	}
	last := take()
	deadline := time.Now().Add(time.Minute * c.slowdown)
	for {
		time.Sleep(2 * time.Second)
		now := take()
		if maps.Equal(last, now) {
			return now
		}
		if time.Now().After(deadline) {
			for _, n := range nodes {
				if d := cmp.Diff(last[n], now[n]); d != "" {
					t.Errorf("node %s still changing (-before +after):\n%s", n, d)
				}
			}
			t.Fatalf("the nodes' network did not settle within a minute")
		}
		last = now
	}
}

const dryRunBridge = `interfaces:
- name: br-dry
  type: linux-bridge
  state: up
  ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.1, prefix-length: 24}]}
  ipv6: {enabled: false}
  bridge: {options: {stp: {enabled: false}}, port: []}
`

// TestDryRun: knmstate.io/dry-run makes every node report the plan it
// would execute, the same text `nmstatectl apply --dry-run` prints on the
// node, with a DryRun condition on each enactment and on the policy; no
// permit is taken and the nodes are byte-for-byte as before. Removing the
// annotation applies the policy.
func TestDryRun(t *testing.T) {
	requirePolicies(t)
	const policy = "ext-dry-run"
	before := settledSnapshots(t, allNodes)
	begin := time.Now()
	c.kubectl.MustIn(t, withAnnotations(policyYAML(policy, dryRunBridge), map[string]string{"knmstate.io/dry-run": "true"}), "apply", "-f", "-")
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		_, _ = c.kubectl.Try(t, "", "delete", "nncp", policy, "--ignore-not-found")
	})
	c.kubectl.Must(t, "wait", "--for=condition=DryRun", "nncp/"+policy, fmt.Sprintf("--timeout=%v", time.Minute*c.slowdown))
	t.Logf("FIGURE dry run: policy DryRun on %d nodes after %v", len(allNodes), time.Since(begin).Round(time.Millisecond))
	msg := c.kubectl.Must(t, "get", "nncp", policy, "-o", `jsonpath={.status.conditions[?(@.type=="DryRun")].message}`)
	if want := fmt.Sprintf("dry run: %d/%d nodes planned, nothing applied", len(allNodes), len(allNodes)); !strings.HasPrefix(msg, want) {
		t.Errorf("policy DryRun message %q, want it to start with %q", msg, want)
	}
	if avail := c.kubectl.Must(t, "get", "nncp", policy, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`); avail != "False" {
		t.Errorf("policy Available=%q during a dry run, want False", avail)
	}

	ens := enactments(t, policy)
	if len(ens) != len(allNodes) {
		t.Fatalf("%d enactments, want %d", len(ens), len(allNodes))
	}
	const header = "nothing was applied; the plan against the node's live state:\n"
	for _, e := range ens {
		if !e.is("DryRun") {
			t.Errorf("%s: not DryRun: %s", e.Metadata.Name, e.conditions())
			continue
		}
		plan, ok := strings.CutPrefix(e.message("DryRun"), header)
		if !ok {
			t.Errorf("%s: DryRun message %q lacks %q", e.Metadata.Name, e.message("DryRun"), header)
			continue
		}
		if !strings.Contains(plan, "br-dry") || !strings.Contains(plan, "198.51.100.1/24") {
			t.Errorf("%s: plan does not create br-dry with its address:\n%s", e.Metadata.Name, plan)
		}
		if node := e.node(); node == "node01" {
			local := c.lab.MustExecIn(t, node, dryRunBridge, nodeKnmstate(), "nmstatectl", "apply", "--dry-run", "-")
			if local != plan {
				t.Errorf("%s: the enactment's plan:\n%s\nnmstatectl apply --dry-run on the node:\n%s", node, plan, local)
			}
		}
		if e.Metadata.Annotations["nmstate.io/rollout-permit"] != "" {
			t.Errorf("%s: a dry run holds a permit: %v", e.Metadata.Name, e.Metadata.Annotations)
		}
	}
	for _, n := range allNodes {
		if after := snapshot(t, n); after != before[n] {
			t.Errorf("node %s changed by a dry run:\nbefore:\n%s\nafter:\n%s", n, before[n], after)
		}
	}

	// Applied for real once the annotation goes.
	begin = time.Now()
	c.kubectl.Must(t, "annotate", "nncp", policy, "knmstate.io/dry-run-")
	if err := policyReaches(t, policy, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURE dry run removed → Available after %v", time.Since(begin).Round(time.Millisecond))
	if dry := c.kubectl.Must(t, "get", "nncp", policy, "-o", `jsonpath={.status.conditions[?(@.type=="DryRun")].type}`); dry != "" {
		t.Errorf("policy keeps a DryRun condition after the real apply")
	}
	for _, n := range allNodes {
		if a := links(t, n)["br-dry"].ipv4(); len(a) != 1 || a[0] != "198.51.100.1/24" {
			t.Errorf("node %s: br-dry IPv4 %v after the apply, want [198.51.100.1/24]", n, a)
		}
	}
	deletePolicy(t, policy)
	restore(t, policy, allNodes, "interfaces:\n- {name: br-dry, type: linux-bridge, state: absent}\n")
}

// TestAnnotationRefused: a misspelt value is refused with the annotation's
// path and the reason, by the webhook where it runs (kubectl apply fails)
// and by the handlers otherwise (the policy is Degraded, nothing applied).
func TestAnnotationRefused(t *testing.T) {
	requirePolicies(t)
	const policy = "ext-bad-annotation"
	const want = `metadata.annotations[knmstate.io/probes]: Invalid value: "dns=maybe": dns must be "on" or "off"`
	manifest := withAnnotations(nodePolicyYAML(policy, "node03", nil, dryRunBridge), map[string]string{"knmstate.io/probes": "dns=maybe"})
	out, err := c.kubectl.Try(t, manifest, "apply", "-f", "-")
	if err != nil {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("kubectl apply refused, but without %q: %v", want, err)
		}
		t.Logf("refused by the webhook: %v", err)
		return
	}
	t.Logf("admitted (no webhook in this lab): %s", out)
	if err := policyReaches(t, policy, "Degraded", degradedTimeout); err != nil {
		t.Fatal(err)
	}
	ens := enactments(t, policy)
	if len(ens) != 1 || ens[0].message("Failing") != want {
		t.Errorf("enactments %+v, want one Failing with %q", ens, want)
	}
	deletePolicy(t, policy)
	pristine(t, "node03")
}

// nameservers are the name servers of a node's /etc/resolv.conf.
func nameservers(t *testing.T, node string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(c.lab.MustExec(t, node, "cat", "/etc/resolv.conf"), "\n") {
		if s, ok := strings.CutPrefix(line, "nameserver "); ok {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// deadDNS points a node's resolver at a server nobody answers, and only at
// it: eth0 keeps its DHCP address and SLAAC but no longer takes the name
// servers of its lease.
const deadDNS = `interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: true, dhcp: true, auto-dns: false}
  ipv6: {enabled: true, dhcp: false, autoconf: true, auto-dns: false}
dns-resolver:
  config:
    server:
    - 198.51.100.53
`

// TestProbesPerPolicy: a policy leaving node02 with only a name server
// nobody answers is rolled back by the DNS probe (here with a 5 s DNS
// timeout set by the same annotation, to keep the suite short; the
// handler's tests cover the policy without any annotation), and is
// Available with `knmstate.io/probes: dns=off`.
func TestProbesPerPolicy(t *testing.T) {
	requirePolicies(t)
	const node = "node02"
	before := nameservers(t, node)
	if !slices.Contains(before, "192.0.2.1") {
		t.Fatalf("%s's name servers before the test: %v, want the lab's 192.0.2.1", node, before)
	}

	begin := time.Now()
	c.kubectl.MustIn(t, withAnnotations(nodePolicyYAML("ext-dns-probed", node, nil, deadDNS),
		map[string]string{"knmstate.io/probes": "dns.timeout=5s"}), "apply", "-f", "-")
	if err := policyReaches(t, "ext-dns-probed", "Degraded", rollbackTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURE probes: DNS probe (5 s) rolled back after %v", time.Since(begin).Round(time.Millisecond))
	ens := enactments(t, "ext-dns-probed")
	if len(ens) != 1 || !strings.Contains(ens[0].message("Failing"), "probe dns") {
		t.Errorf("enactments %+v, want one Failing on the dns probe", ens)
	}
	if after := nameservers(t, node); !slices.Equal(after, before) {
		t.Errorf("name servers after the rollback %v, want as before %v", after, before)
	}
	deletePolicy(t, "ext-dns-probed")

	begin = time.Now()
	c.kubectl.MustIn(t, withAnnotations(nodePolicyYAML("ext-dns-unprobed", node, nil, deadDNS),
		map[string]string{"knmstate.io/probes": "dns=off"}), "apply", "-f", "-")
	if err := policyReaches(t, "ext-dns-unprobed", "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("FIGURE probes: DNS probe off, Available after %v", time.Since(begin).Round(time.Millisecond))
	if got := nameservers(t, node); !slices.Equal(got, []string{"198.51.100.53"}) {
		t.Errorf("name servers with the DNS probe off %v, want [198.51.100.53]", got)
	}
	deletePolicy(t, "ext-dns-unprobed")
	// Back to the name server of the lease (the lab's initial resolv.conf
	// also lists 2001:db8::1, which no lease carries: once knmstate writes
	// the file, only the lease's server is left).
	c.kubectl.MustIn(t, nodePolicyYAML("ext-dns-restore", node, nil, `interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4: {enabled: true, dhcp: true, auto-dns: true}
  ipv6: {enabled: true, dhcp: false, autoconf: true, auto-dns: true}
dns-resolver:
  config: {}
`), "apply", "-f", "-")
	if err := policyReaches(t, "ext-dns-restore", "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	deletePolicy(t, "ext-dns-restore")
	if got := nameservers(t, node); !slices.Contains(got, "192.0.2.1") || slices.Contains(got, "198.51.100.53") {
		t.Errorf("name servers after the cleanup %v, want the lease's 192.0.2.1 only", got)
	}
	pristine(t, node)
}

// TestDrift: `ip link del` of a policy's bridge on node03 is reported on
// its enactment and on the policy (Drifted), from the kernel's event; the
// bridge stays gone until knmstate.io/enforce is set, then it is put back,
// and put back again after the next deletion by itself.
func TestDrift(t *testing.T) {
	requirePolicies(t)
	const node, policy = "node03", "ext-drift"
	const bridge = `interfaces:
- name: br-drift
  type: linux-bridge
  state: up
  ipv4: {enabled: true, dhcp: false, address: [{ip: 198.51.100.3, prefix-length: 24}]}
  ipv6: {enabled: false}
  bridge: {options: {stp: {enabled: false}}, port: []}
`
	enact(t, policy, nodePolicyYAML(policy, node, nil, bridge))
	nnce := "nnce/" + node + "." + policy
	timeout := fmt.Sprintf("--timeout=%v", 30*time.Second*c.slowdown)

	deleted := time.Now()
	c.lab.MustExec(t, node, "ip", "link", "del", "br-drift")
	c.kubectl.Must(t, "wait", "--for=condition=Drifted", nnce, timeout)
	toEnactment := time.Since(deleted)
	c.kubectl.Must(t, "wait", "--for=condition=Drifted", "nncp/"+policy, timeout)
	toPolicy := time.Since(deleted)
	// Each figure includes starting a kubectl (tens of milliseconds).
	t.Logf("FIGURE drift: ip link del → enactment Drifted %v, policy Drifted %v (kubectl wait, each started after the deletion)",
		toEnactment.Round(time.Millisecond), toPolicy.Round(time.Millisecond))
	// A figure, not an assertion (no timing assertions in tests): the
	// bench measures it; here the waits' timeout bounds it.
	msg := c.kubectl.Must(t, "get", nnce, "-o", `jsonpath={.status.conditions[?(@.type=="Drifted")].message}`)
	if !strings.Contains(msg, "br-drift") {
		t.Errorf("enactment's Drifted message %q does not name br-drift", msg)
	}
	if msg := c.kubectl.Must(t, "get", "nncp", policy, "-o", `jsonpath={.status.conditions[?(@.type=="Drifted")].message}`); msg != "1/1 nodes no longer show the policy: "+node {
		t.Errorf("policy's Drifted message %q", msg)
	}
	if _, ok := links(t, node)["br-drift"]; ok {
		t.Error("br-drift is back without knmstate.io/enforce")
	}

	c.kubectl.Must(t, "annotate", "nncp", policy, "knmstate.io/enforce=true")
	for i := 1; i <= 2; i++ {
		if i == 2 {
			// The first repair's enactment settles first: a deletion
			// during that apply is a different story (its verification
			// fails and it rolls back).
			if err := policyReaches(t, policy, "Available", availableTimeout); err != nil {
				t.Fatal(err)
			}
			deleted = time.Now()
			c.lab.MustExec(t, node, "ip", "link", "del", "br-drift")
		}
		suite.Eventually(t, 30*time.Second*c.slowdown, "br-drift repaired", func() error {
			if a := links(t, node)["br-drift"].ipv4(); len(a) != 1 || a[0] != "198.51.100.3/24" {
				return fmt.Errorf("br-drift IPv4 %v", a)
			}
			return nil
		})
		if i == 2 {
			t.Logf("FIGURE drift: with enforce, ip link del → br-drift back within %v (0.5 s polls)", time.Since(deleted).Round(time.Millisecond))
		}
		suite.Eventually(t, 30*time.Second*c.slowdown, "the policy's Drifted condition gone", func() error {
			if d := c.kubectl.Must(t, "get", "nncp", policy, "-o", `jsonpath={.status.conditions[?(@.type=="Drifted")].message}`); d != "" {
				return errors.New("Drifted: " + d)
			}
			return nil
		})
	}
	if err := policyReaches(t, policy, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	deletePolicy(t, policy)
	restore(t, policy, []string{node}, "interfaces:\n- {name: br-drift, type: linux-bridge, state: absent}\n")
}

// TestRevertOnDelete: a policy with knmstate.io/revert-on-delete gets the
// controller's finalizer; deleting it reverts every node (the bridge goes,
// eth1 is no longer its port and has its MTU back), and the policy is gone
// only once they have: when `kubectl delete --wait` returns, each node's
// network is already byte-for-byte as before the policy.
func TestRevertOnDelete(t *testing.T) {
	requirePolicies(t)
	const policy = "ext-revert"
	before := settledSnapshots(t, allNodes)
	beforeLinks := map[string]map[string]ipLink{}
	for _, n := range allNodes {
		beforeLinks[n] = links(t, n)
	}
	manifest := withAnnotations(policyYAML(policy, `interfaces:
- name: eth1
  type: ethernet
  state: up
  mtu: 1400
- name: br-rev
  type: linux-bridge
  state: up
  ipv4: {enabled: false}
  ipv6: {enabled: false}
  bridge: {options: {stp: {enabled: false}}, port: [{name: eth1, vlan: {}}]}
`), map[string]string{"knmstate.io/revert-on-delete": "true"})
	enact(t, policy, manifest)
	suite.Eventually(t, 30*time.Second*c.slowdown, "the revert-on-delete finalizer", func() error {
		if f := c.kubectl.Must(t, "get", "nncp", policy, "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(f, "knmstate.io/revert-on-delete") {
			return errors.New("finalizers: " + f)
		}
		return nil
	})
	for _, n := range allNodes {
		l := links(t, n)
		if l["eth1"].Master != "br-rev" || l["eth1"].MTU != 1400 {
			t.Fatalf("node %s: eth1 %+v after the apply, want a port of br-rev with MTU 1400", n, l["eth1"])
		}
	}
	begin := time.Now()
	c.kubectl.Must(t, "delete", "nncp", policy, "--wait", fmt.Sprintf("--timeout=%v", time.Minute*c.slowdown))
	t.Logf("FIGURE revert on delete: %d nodes reverted and the policy gone after %v", len(allNodes), time.Since(begin).Round(time.Millisecond))
	// At once: the configuration (links, ports, MTUs, addresses) is back.
	for _, n := range allNodes {
		if diff := cmp.Diff(linkConfig(beforeLinks[n]), linkConfig(links(t, n))); diff != "" {
			t.Errorf("node %s when the policy was gone (-before +now):\n%s", n, diff)
		}
	}
	// Then, once eth1's IPv6 link-local address (the kernel's, re-added
	// when eth1 left the bridge) has passed DAD, iproute2's whole output
	// (route order aside) is as before.
	for _, n := range allNodes {
		suite.Eventually(t, 15*time.Second*c.slowdown, "node "+n+" as before the policy", func() error {
			if got := sortedLines(snapshot(t, n)); got != sortedLines(before[n]) {
				return errors.New(cmp.Diff(sortedLines(before[n]), got))
			}
			return nil
		})
		pristine(t, n)
	}
}

// linkConfig is what a policy configures of a node's links: kind, port
// of what, MTU, addresses (kubelet mode's pod network left out).
func linkConfig(l map[string]ipLink) map[string]string {
	out := map[string]string{}
	for name, link := range l {
		if c.kubelet && (name == "cni0" || link.Master == "cni0") {
			continue
		}
		var addrs []string
		for _, a := range link.AddrInfo {
			addrs = append(addrs, fmt.Sprintf("%s/%d", a.Local, a.PrefixLen))
		}
		slices.Sort(addrs)
		out[name] = fmt.Sprintf("kind=%s master=%s mtu=%d addresses=%v", link.LinkInfo.Kind, link.Master, link.MTU, addrs)
	}
	return out
}

// sortedLines sorts a text's lines: the kernel lists routes in the order
// they were added, which a revert does not keep.
func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestAfter: B is after A (knmstate.io/after); A fails on node02 (the veth
// it configures exists on node01 and node03 only). B is applied on node01
// and node03 once A is Available there, and never on node02, whose
// enactment says why.
func TestAfter(t *testing.T) {
	requirePolicies(t)
	for _, n := range []string{"node01", "node03"} {
		c.lab.MustExec(t, n, "ip", "link", "add", "extv0", "type", "veth", "peer", "name", "extv1")
	}
	delVeth := func() {
		for _, n := range []string{"node01", "node03"} {
			_, _ = c.lab.Exec(context.Background(), n, "", "ip", "link", "del", "extv0")
		}
	}
	t.Cleanup(delVeth)
	c.kubectl.MustIn(t, policyYAML("ext-after-a", "interfaces:\n- {name: extv0, type: veth, state: up, mtu: 1400}\n"), "apply", "-f", "-")
	c.kubectl.MustIn(t, withAnnotations(policyYAML("ext-after-b", "interfaces:\n- {name: eth2, type: ethernet, state: up, mtu: 1450}\n"),
		map[string]string{"knmstate.io/after": "ext-after-a"}), "apply", "-f", "-")
	if err := policyReaches(t, "ext-after-a", "Degraded", degradedTimeout); err != nil {
		t.Fatal(err)
	}
	suite.Eventually(t, time.Minute*c.slowdown, "B applied on node01 and node03, waiting on node02", func() error {
		var out []string
		for _, e := range enactments(t, "ext-after-b") {
			switch n := e.node(); {
			case n == "node02" && !(e.is("Waiting") && strings.Contains(e.message("Waiting"), "policy ext-after-a (knmstate.io/after) is Failed on this node")):
				out = append(out, n+": "+e.conditions())
			case n != "node02" && !e.is("Available"):
				out = append(out, n+": "+e.conditions())
			}
		}
		if len(out) > 0 {
			return errors.New(strings.Join(out, "; "))
		}
		return nil
	})
	for _, n := range allNodes {
		want := 1450
		if n == "node02" {
			want = 1500
		}
		if got := links(t, n)["eth2"].MTU; got != want {
			t.Errorf("node %s: eth2 MTU %d, want %d", n, got, want)
		}
	}
	msg := c.kubectl.Must(t, "get", "nncp", "ext-after-b", "-o", `jsonpath={.status.conditions[?(@.type=="Progressing")].message}`)
	t.Logf("policy B: %s", msg)
	if !strings.Contains(msg, "2/3 nodes finished") {
		t.Errorf("policy B Progressing message %q, want 2/3 nodes finished", msg)
	}
	deletePolicy(t, "ext-after-b")
	deletePolicy(t, "ext-after-a")
	delVeth()
	restore(t, "ext-after", allNodes, "interfaces:\n- {name: eth2, type: ethernet, state: up, mtu: 1500}\n")
}

// TestAddressPool: knmstate.io/ipv4-pool gives the three nodes three
// distinct addresses of the pool on the policy's bridge, recorded on the
// policy by the controller; they stay the same across a restart of a
// node's handler (process mode) and an update of the policy.
func TestAddressPool(t *testing.T) {
	requirePolicies(t)
	const policy = "ext-pool"
	bridge := func(mtu int) string {
		return withAnnotations(policyYAML(policy, fmt.Sprintf(`interfaces:
- name: br-pool
  type: linux-bridge
  state: up
  mtu: %d
  ipv4: {enabled: true, dhcp: false}
  ipv6: {enabled: false}
  bridge: {options: {stp: {enabled: false}}, port: []}
`, mtu)), map[string]string{"knmstate.io/ipv4-pool": "198.51.100.128/29 br-pool"})
	}
	enact(t, policy, bridge(1500))
	record := c.kubectl.Must(t, "get", "nncp", policy, "-o", `jsonpath={.metadata.annotations.knmstate\.io/ipv4-pool-addresses}`)
	t.Logf("pool record: %s", record)
	want := map[string]string{}
	seen := map[string]bool{}
	for _, item := range strings.Split(record, ",") {
		node, addr, _ := strings.Cut(item, "=")
		if seen[addr] || !strings.HasPrefix(addr, "198.51.100.1") {
			t.Errorf("record %q: %s is taken twice or not of the pool", record, addr)
		}
		seen[addr] = true
		want[node] = addr + "/29"
	}
	if len(want) != len(allNodes) {
		t.Fatalf("record %q, want one address for each of %v", record, allNodes)
	}
	check := func(when string) {
		t.Helper()
		for _, n := range allNodes {
			if got := links(t, n)["br-pool"].ipv4(); len(got) != 1 || got[0] != want[n] {
				t.Errorf("%s: node %s br-pool IPv4 %v, want [%s]", when, n, got, want[n])
			}
		}
	}
	check("applied")

	if !c.kubelet && !c.fullKernel {
		st, err := lab.ReadState(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		pid := 0
		for _, p := range st.Processes {
			if p.Name == "handler/node02" && p.Status == "running" {
				pid = p.PID
			}
		}
		if pid == 0 {
			t.Fatal("no running handler on node02")
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		suite.Eventually(t, time.Minute*c.slowdown, "node02's handler restarted", func() error {
			st, err := lab.ReadState(c.dir)
			if err != nil {
				return err
			}
			for _, p := range st.Processes {
				if p.Name == "handler/node02" && p.Status == "running" && p.PID != pid {
					return nil
				}
			}
			return errors.New("not yet")
		})
		t.Log("node02's handler restarted")
	} else {
		t.Log("the handler restart is exercised in process mode only; here the record is checked across the policy update")
	}

	c.kubectl.MustIn(t, bridge(1400), "apply", "-f", "-")
	suite.Eventually(t, time.Minute*c.slowdown, "br-pool MTU 1400 on every node", func() error {
		for _, n := range allNodes {
			if m := links(t, n)["br-pool"].MTU; m != 1400 {
				return fmt.Errorf("node %s: MTU %d", n, m)
			}
		}
		return nil
	})
	if err := policyReaches(t, policy, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	if again := c.kubectl.Must(t, "get", "nncp", policy, "-o", `jsonpath={.metadata.annotations.knmstate\.io/ipv4-pool-addresses}`); again != record {
		t.Errorf("record after the restart and the update %q, want %q", again, record)
	}
	check("after the handler restart and the policy update")
	deletePolicy(t, policy)
	restore(t, policy, allNodes, "interfaces:\n- {name: br-pool, type: linux-bridge, state: absent}\n")
}
