// The tests of this file drive the handler's policy reconciler (enactments,
// apply under a permit, probes and rollback) through kubectl.

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// Timeouts of kubectl wait. Generous: they bound a broken run, they are
// not measurements.
const (
	availableTimeout = 2 * time.Minute
	degradedTimeout  = 2 * time.Minute
	// rollbackTimeout covers the 10 s ping probe (handlerArgs), the
	// rollback and the status write.
	rollbackTimeout = 150 * time.Second
)

// policyReaches waits with `kubectl wait --for condition=COND` until the
// policy has cond (Available or Degraded), for at most timeout (stretched
// on the guest's kernel). It waits in slices so that a policy that ends
// with the other outcome fails at once, with the policy's and its
// enactments' conditions.
func policyReaches(t *testing.T, policy, cond string, timeout time.Duration) error {
	t.Helper()
	other := map[string]string{"Available": "Degraded", "Degraded": "Available"}[cond]
	var ended error
	err := suite.Until(t.Context(), timeout*c.slowdown, 100*time.Millisecond, func() error {
		_, err := c.kubectl.Try(t, "", "wait", "--for", "condition="+cond, "nncp/"+policy, "--timeout=5s")
		if err == nil {
			return nil
		}
		if got, _ := c.kubectl.Try(t, "", "get", "nncp", policy, "-o", "jsonpath={.status.conditions[?(@.type==\""+other+"\")].status}"); got == "True" {
			ended = fmt.Errorf("policy %s is %s, want %s", policy, other, cond)
			return nil
		}
		return err
	})
	if err == nil {
		err = ended
	}
	if err != nil {
		return fmt.Errorf("policy %s not %s: %w\n%s", policy, cond, err, describePolicy(t, policy))
	}
	return nil
}

var (
	readyOnce sync.Once
	readyErr  error
)

// requirePolicies fails the test (it never skips) unless the lab's
// handlers enact policies: the handler has the policy flags, and a policy
// that puts eth1 and eth2 in the lab's initial state reaches Available.
func requirePolicies(t *testing.T) {
	t.Helper()
	if !c.policyFlags {
		t.Fatal("`knmstate handler` has no policy flags (--max-retries): the handler does not reconcile policies")
	}
	readyOnce.Do(func() {
		const name = "e2e-ready"
		// Until it has passed: a Fatal inside this function leaves it set.
		readyErr = errors.New("the readiness policy e2e-ready failed (see the first policy test)")
		c.kubectl.MustIn(t, oneWave(policyYAML(name, initialNICs)), "apply", "-f", "-")
		if err := policyReaches(t, name, "Available", availableTimeout); err != nil {
			readyErr = fmt.Errorf("the handlers do not enact policies: %w", err)
			return
		}
		deletePolicy(t, name)
		readyErr = nil
	})
	if readyErr != nil {
		t.Fatal(readyErr)
	}
}

// initialNICs is the lab's initial state of eth1 and eth2: up, no IPv4,
// no IPv6 autoconfiguration.
const initialNICs = `
interfaces:
- {name: eth1, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
- {name: eth2, type: ethernet, state: up, ipv4: {enabled: false}, ipv6: {enabled: true, dhcp: false, autoconf: false}}
`

// policyYAML is a policy for every node with desired as its desiredState.
func policyYAML(name, desired string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: %s\nspec:\n  desiredState:\n", name)
	for _, line := range strings.Split(strings.Trim(desired, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

// TestExamples applies every example of examples/, one after another, and
// checks its outcome: Available with the configuration in the nodes'
// kernels, or Degraded with the missing feature named and the nodes left
// as they were.
func TestExamples(t *testing.T) {
	only, err := regexp.Compile(*onlyExamples)
	if err != nil {
		t.Fatalf("-e2e.examples: %v", err)
	}
	requirePolicies(t)
	for _, n := range allNodes {
		pristine(t, n)
	}
	ran := 0
	for _, e := range examples {
		if !only.MatchString(e.file) {
			continue
		}
		e := e.expected()
		if e.outcome == rolledBack {
			continue // TestRollback
		}
		// On Debian's kernel (guest mode) only what differs there: the
		// examples with an outcome of their own on that kernel and the
		// OVS ones (the guest's NetworkManager nodes run OVS through
		// NetworkManager; the host's kubelet-mode NetworkManager nodes
		// have none). The rest behaves the same on both kernels and runs
		// on this machine's kernel in make test's container and
		// NetworkManager stages; in the TCG guest it cost minutes.
		if c.fullKernel && e.full == nil && !e.ovs {
			continue
		}
		ran++
		ok := t.Run(strings.TrimSuffix(e.file, ".yaml"), func(t *testing.T) {
			switch e.outcome {
			case available:
				runAvailable(t, e)
			case degraded:
				runDegraded(t, e)
			case notAPolicy:
				runStored(t, e)
			}
		})
		if !ok && e.outcome == available {
			// The next examples expect this one's cleanup.
			t.Fatalf("%s failed; the examples after it would start from an unknown state", e.file)
		}
	}
	if ran == 0 {
		t.Fatalf("no example ran (-e2e.examples %q)", *onlyExamples)
	}
}

func runAvailable(t *testing.T, e example) {
	begin := time.Now()
	c.kubectl.Must(t, "apply", "-f", filepath.Join(c.examples, e.file))
	// Also when a check fails: the tests after TestExamples start from
	// pristine nodes (a failed bond example once left bond0 on every
	// node, and each test after it failed on that).
	defer func() {
		deletePolicy(t, e.policy)
		if e.cleanup != "" {
			restore(t, e.policy, allNodes, e.cleanup)
		}
	}()
	if err := policyReaches(t, e.policy, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s Available after %v", e.policy, time.Since(begin).Round(time.Millisecond))
	for _, en := range enactments(t, e.policy) {
		if !en.is("Available") {
			t.Errorf("enactment %s is not Available: %s", en.Metadata.Name, en.conditions())
		}
		if msg := en.message("Available"); !strings.Contains(msg, e.message) {
			t.Errorf("enactment %s: Available message %q lacks %q", en.Metadata.Name, msg, e.message)
		}
	}
	if diff := enactmentNodes(t, e); diff != "" {
		t.Error(diff)
	}
	e.check(t)
}

// enact applies a policy (a manifest) and waits until it is Available.
func enact(t *testing.T, name, manifest string) {
	t.Helper()
	begin := time.Now()
	c.kubectl.MustIn(t, manifest, "apply", "-f", "-")
	if err := policyReaches(t, name, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s Available after %v", name, time.Since(begin).Round(time.Millisecond))
}

// restore applies desired to nodes as a policy of its own (named after
// what it cleans up), deletes it once Available, and checks that the
// nodes are back to the lab's initial network.
func restore(t *testing.T, after string, nodes []string, desired string) {
	t.Helper()
	name := "e2e-cleanup-" + after
	manifest := oneWave(policyYAML(name, desired))
	if len(nodes) == 1 {
		manifest = nodePolicyYAML(name, nodes[0], nil, desired)
	}
	c.kubectl.MustIn(t, manifest, "apply", "-f", "-")
	if err := policyReaches(t, name, "Available", availableTimeout); err != nil {
		t.Fatalf("cleanup of %s: %v", after, err)
	}
	deletePolicy(t, name)
	for _, n := range nodes {
		pristine(t, n)
	}
}

// oneWave gives a policy of policyYAML maxUnavailable 100%: the suite's
// own cleanup and readiness policies change no node's connectivity, and
// in one wave instead of the default 50%'s two each costs one apply's
// time, not two (about 8 s a wave on a NetworkManager node in the TCG
// guest).
func oneWave(policy string) string {
	return strings.Replace(policy, "\nspec:\n", "\nspec:\n  maxUnavailable: 100%\n", 1)
}

// nodePolicyYAML is a policy for one node (by hostname) with capture (may
// be nil) and desired as its desiredState.
func nodePolicyYAML(name, node string, capture map[string]string, desired string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: nmstate.io/v1\nkind: NodeNetworkConfigurationPolicy\nmetadata:\n  name: %s\nspec:\n", name)
	fmt.Fprintf(&b, "  nodeSelector:\n    kubernetes.io/hostname: %s\n", node)
	if len(capture) > 0 {
		b.WriteString("  capture:\n")
		keys := make([]string, 0, len(capture))
		for k := range capture {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "    %s: %q\n", k, capture[k])
		}
	}
	b.WriteString("  desiredState:\n")
	for _, line := range strings.Split(strings.Trim(desired, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

func runDegraded(t *testing.T, e example) {
	c.kubectl.Must(t, "apply", "-f", filepath.Join(c.examples, e.file))
	if err := policyReaches(t, e.policy, "Degraded", degradedTimeout); err != nil {
		t.Fatal(err)
	}
	var messages []string
	found := false
	// The same message on both backends (the NetworkManager backend
	// names a missing kernel module or OVSDB as the kernel backend does).
	feature := e.feature
	for _, en := range enactments(t, e.policy) {
		if !slices.Contains(e.nodes, en.node()) {
			t.Errorf("enactment %s on a node the policy does not select", en.Metadata.Name)
		}
		if en.is("Failing") {
			msg := en.message("Failing")
			messages = append(messages, en.Metadata.Name+": "+msg)
			found = found || strings.Contains(msg, feature)
		}
	}
	if !found {
		t.Errorf("no Failing enactment names %q; Failing messages:\n%s", feature, strings.Join(messages, "\n"))
	} else {
		t.Logf("Failing: %s", messages[0])
	}
	deletePolicy(t, e.policy)
	// The failed apply was rolled back: every node is as before.
	for _, n := range e.nodes {
		pristine(t, n)
	}
}

// runStored: the NMState CR is accepted and stored; nothing in the lab
// acts on it (no operator).
func runStored(t *testing.T, e example) {
	// Installed by the operator (kubelet mode): the example is the very
	// object the cluster runs on; applying it must keep it Available, and
	// deleting it would uninstall knmstate.
	_, err := c.kubectl.Try(t, "", "get", "nmstate", e.policy)
	installed := err == nil
	c.kubectl.Must(t, "apply", "-f", filepath.Join(c.examples, e.file))
	if got := c.kubectl.Must(t, "get", "nmstate", e.policy, "-o", "jsonpath={.metadata.name}"); got != e.policy {
		t.Errorf("kubectl get nmstate %s: %q", e.policy, got)
	}
	if installed {
		c.kubectl.Must(t, "wait", "--for=condition=Available", "nmstate/"+e.policy, "--timeout=2m")
		return
	}
	c.kubectl.Must(t, "delete", "nmstate", e.policy, "--wait")
}

// routeMetric is a route's metric in ip route's output.
var routeMetric = regexp.MustCompile(`metric [0-9]+`)

// TestRollback applies a policy that moves node02's default gateway to an
// address nobody answers: the handler's ping probe fails, the change is
// rolled back, the policy is Degraded, and node02's routes and
// NodeNetworkState are as before.
func TestRollback(t *testing.T) {
	requirePolicies(t)
	const node, policy = "node02", "break-gateway"
	before := c.lab.MustExec(t, node, "ip", "-4", "route", "show", "default")
	if !strings.HasPrefix(before, "default via 192.0.2.1 dev eth0") {
		t.Fatalf("node02's default route before the test: %q", before)
	}
	begin := time.Now()
	c.kubectl.Must(t, "apply", "-f", filepath.Join(c.examples, "break-gateway.yaml"))
	if err := policyReaches(t, policy, "Degraded", rollbackTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("Degraded after %v", time.Since(begin).Round(time.Millisecond))
	ens := enactments(t, policy)
	if len(ens) != 1 || ens[0].node() != node {
		t.Fatalf("enactments %v, want only %s's", ens, node)
	}
	msg := ens[0].message("Failing")
	for _, want := range []string{"rolling back", "probe ping", "192.0.2.254"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Failing message lacks %q: %q", want, msg)
		}
	}
	// The handler's events: upstream's ReconcileFailed on the policy
	// (one attempt: handlerArgs), RolledBack on the enactment.
	suite.Eventually(t, 30*time.Second*c.slowdown, "the rollback's events", func() error {
		out := c.kubectl.Must(t, "-n", "default", "get", "events", "-o",
			`jsonpath={range .items[*]}{.involvedObject.kind}/{.involvedObject.name} {.type} {.reason}: {.message}{"\n"}{end}`)
		for _, want := range []string{
			`NodeNetworkConfigurationPolicy/break-gateway Warning ReconcileFailed: reconciliation of enactment "node02.break-gateway" has failed after 1 retries`,
			`NodeNetworkConfigurationEnactment/node02.break-gateway Warning RolledBack: generation 1 rolled back (the ping probe failed after the apply): the previous network state is restored`,
		} {
			if !strings.Contains(out, want) {
				return errors.New("no event " + want + " in:\n" + out)
			}
		}
		return nil
	})
	after := c.lab.MustExec(t, node, "ip", "-4", "route", "show", "default")
	if *backend == lab.BackendNetworkManager {
		// NetworkManager owns eth0's DHCP route: reactivated by the
		// checkpoint's rollback it may get the next free metric of the
		// ones NetworkManager reserves per device (102 once, not 100).
		before, after = routeMetric.ReplaceAllString(before, "metric N"), routeMetric.ReplaceAllString(after, "metric N")
	}
	if after != before {
		t.Errorf("default routes after the rollback:\n%s\nwant as before:\n%s", after, before)
	}
	// The NodeNetworkState follows the kernel: no route through .254.
	suite.Eventually(t, 30*time.Second*c.slowdown, "node02's NodeNetworkState after the rollback", func() error {
		out := c.kubectl.Must(t, "get", "nns", node, "-o", "jsonpath={.status.currentState.routes.running[*].next-hop-address}")
		if strings.Contains(out, "192.0.2.254") {
			return errors.New("still reports a route through 192.0.2.254: " + out)
		}
		if !strings.Contains(out, "192.0.2.1") {
			return errors.New("reports no route through 192.0.2.1: " + out)
		}
		return nil
	})
	deletePolicy(t, policy)
	pristine(t, node)
}

// enactment is what the suite reads of an NNCE.
type enactment struct {
	Metadata struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Conditions []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
	} `json:"status"`
}

func (e enactment) node() string { return e.Metadata.Labels["nmstate.io/node"] }

func (e enactment) is(cond string) bool {
	for _, c := range e.Status.Conditions {
		if c.Type == cond {
			return c.Status == "True"
		}
	}
	return false
}

func (e enactment) message(cond string) string {
	for _, c := range e.Status.Conditions {
		if c.Type == cond {
			return c.Message
		}
	}
	return ""
}

func (e enactment) conditions() string {
	var out []string
	for _, c := range e.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s(%s) %q", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(out, "; ")
}

func enactments(t *testing.T, policy string) []enactment {
	t.Helper()
	var list struct {
		Items []enactment `json:"items"`
	}
	out := c.kubectl.Must(t, "get", "nnce", "-l", "nmstate.io/policy="+policy, "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("enactments of %s: %v", policy, err)
	}
	return list.Items
}

// enactmentNodes compares the nodes with an enactment of e's policy with
// the nodes it selects.
func enactmentNodes(t *testing.T, e example) string {
	var got []string
	for _, en := range enactments(t, e.policy) {
		got = append(got, en.node())
	}
	slices.Sort(got)
	if !slices.Equal(got, e.nodes) {
		return fmt.Sprintf("enactments of %s on %v, want %v", e.policy, got, e.nodes)
	}
	return ""
}

// deletePolicy deletes a policy and waits until its enactments are gone:
// by then its handlers have finished with it (a deleted policy's apply in
// progress ends, rolled back or committed, before the enactment goes).
func deletePolicy(t *testing.T, policy string) {
	t.Helper()
	c.kubectl.Must(t, "delete", "nncp", policy, "--wait", "--ignore-not-found")
	suite.Eventually(t, time.Minute*c.slowdown, "enactments of deleted policy "+policy, func() error {
		if out := c.kubectl.Must(t, "get", "nnce", "-l", "nmstate.io/policy="+policy, "-o", "name"); out != "" {
			return errors.New("left: " + strings.ReplaceAll(strings.TrimSpace(out), "\n", ", "))
		}
		return nil
	})
}

// pristine checks a node's network is the lab's initial one: lo and
// eth0..eth2 only, eth1 and eth2 without IPv4 and not ports of anything,
// the default route through the switch.
func pristine(t *testing.T, node string) {
	t.Helper()
	suite.Eventually(t, 30*time.Second*c.slowdown, "node "+node+" back to its initial network", func() error {
		l := links(t, node)
		var names []string
		for n, link := range l {
			// Kubelet mode: the pod network's bridge and the pods'
			// veths are the node's, not the policies'.
			if c.kubelet && (n == "cni0" || link.Master == "cni0") {
				continue
			}
			// The node's OVS datapath keeps its own link once it has
			// had a bridge: the userspace one's tap, the kernel one's
			// (a guest's) ovs-system.
			if (n == "ovs-netdev" || n == "ovs-system") && c.ovsdb(node) != "" {
				continue
			}
			names = append(names, n)
		}
		slices.Sort(names)
		if want := []string{"eth0", "eth1", "eth2", "lo"}; !slices.Equal(names, want) {
			return fmt.Errorf("links %v, want %v", names, want)
		}
		for _, nic := range []string{"eth1", "eth2"} {
			if a := l[nic].ipv4(); len(a) > 0 {
				return fmt.Errorf("%s has IPv4 %v", nic, a)
			}
			if m := l[nic].Master; m != "" {
				return fmt.Errorf("%s is a port of %s", nic, m)
			}
		}
		if r := c.lab.MustExec(t, node, "ip", "-4", "route", "show", "default"); !strings.HasPrefix(r, "default via 192.0.2.1 dev eth0") || strings.Count(r, "\n") != 1 {
			return fmt.Errorf("default routes %q, want only the one through 192.0.2.1", r)
		}
		return nil
	})
}

// describePolicy is the policy's and its enactments' state, for failure
// messages.
func describePolicy(t *testing.T, policy string) string {
	t.Helper()
	p, _ := c.kubectl.Try(t, "", "get", "nncp", policy, "-o", "jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{\"\\n\"}{end}")
	var b strings.Builder
	fmt.Fprintf(&b, "policy %s:\n%s", policy, p)
	for _, en := range enactments(t, policy) {
		fmt.Fprintf(&b, "enactment %s: %s\n", en.Metadata.Name, en.conditions())
	}
	return b.String()
}
