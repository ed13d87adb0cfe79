package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// eth2Static is a desired state giving eth2 one static address.
func eth2Static(addr string) string {
	a := netip.MustParsePrefix(addr)
	return fmt.Sprintf(`
interfaces:
- name: eth2
  type: ethernet
  state: up
  ipv4:
    enabled: true
    dhcp: false
    address:
    - ip: %s
      prefix-length: %d
`, a.Addr(), a.Bits())
}

// freezer stops a node's handler between apply and commit. There is no
// hook inside the handler process (the lab runs handlers as processes), so
// it works from outside: it tails the handler's log from the moment it is
// armed, stops the process (SIGSTOP) as soon as the reconciler logs
// "applying" for the wanted generation (before the probes are selected and
// the checkpoint written), then lets it run in slices of about 0.3 ms
// (SIGCONT, SIGSTOP) until the checkpoint record pkg/apply writes before its
// first change exists while the process is stopped. Polling alone misses
// the window on a loaded machine: apply, verify, probes and commit take some
// 20 ms here.
type freezer struct {
	c      *cluster
	node   string
	log    *os.File
	buf    []byte
	offset int64
}

// armFreezer starts following the node's handler log at its current end:
// call it before creating or changing the policy.
func armFreezer(t *testing.T, c *cluster, node string) *freezer {
	t.Helper()
	f, err := os.Open(c.handlerLog(node))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		t.Fatal(err)
	}
	return &freezer{c: c, node: node, log: f, offset: end}
}

// read appends what the log got since the last read.
func (f *freezer) read() string {
	b := make([]byte, 64<<10)
	for {
		n, err := f.log.ReadAt(b, f.offset)
		f.buf = append(f.buf, b[:n]...)
		f.offset += int64(n)
		if n < len(b) || err != nil {
			return string(f.buf)
		}
	}
}

// freeze returns the stopped PID and true when the handler is stopped with
// the checkpoint of generation gen pending; false (process running) when it
// finished that apply before it could be caught.
func (f *freezer) freeze(t *testing.T, policy string, gen int64) (int, bool) {
	t.Helper()
	pid := f.c.handlerPID(t, f.node)
	if pid == 0 {
		t.Fatalf("node %s: no running handler", f.node)
	}
	tag := fmt.Sprintf("node=%s policy=%s generation=%d", f.node, policy, gen)
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(f.read(), "msg=applying "+tag) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %s within 2m", "msg=applying "+tag, f.c.handlerLog(f.node))
		}
		time.Sleep(200 * time.Microsecond)
	}
	stop := func() {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stop handler %d: %v", pid, err)
		}
	}
	cont := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	stop()
	cp := f.c.checkpointPath(f.node)
	for range 20000 {
		if checkpointExists(cp) {
			return pid, true
		}
		if l := f.read(); strings.Contains(l, "msg=applied "+tag) || strings.Contains(l, `msg="apply failed" `+tag) {
			cont()
			return pid, false
		}
		cont()
		for t0 := time.Now(); time.Since(t0) < 300*time.Microsecond; {
		}
		stop()
	}
	cont()
	return pid, false
}

// killAndWaitRestart kills a frozen handler and waits until the lab's
// supervisor runs a new one.
func killAndWaitRestart(t *testing.T, c *cluster, node string, pid int) int {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill handler %d: %v", pid, err)
	}
	var now int
	suite.EventuallyEvery(t, time.Minute, 50*time.Millisecond, "", suite.Cond(func() bool {
		now = c.handlerPID(t, node)
		return now != 0 && now != pid
	}, func() string { return fmt.Sprintf("node %s: handler not restarted after kill of %d", node, pid) }))
	return now
}

// TestCrashBetweenApplyAndCommit: a handler killed after it applied a
// policy but before it committed leaves a checkpoint; the restarted
// handler rolls the node back to its pre-apply state, and the policy then
// converges.
//
// First the deterministic half: while the handler is frozen the node loses
// the policy's label, so the restarted handler rolls back and has nothing
// to re-apply: the node must equal its pre-apply snapshot exactly. The
// label comes back and the policy must reach Available. Then the plain
// half: freeze and kill again on a new generation without touching the
// label; the restarted handler must roll back (logged) and converge by
// itself.
func TestCrashBetweenApplyAndCommit(t *testing.T) {
	c := sharedLab(t)
	const node, label = rollbackNode, "knmstate.test/crash"
	c.labelNode(t, node, label, "yes")
	nl := c.netlink(t, node)
	p := policyYAML(t, "crash", map[string]string{label: "yes"}, eth2Static("10.250.0.3/24"))

	var pid int
	var before netSnapshot
	want := ""
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			t.Fatal("5 attempts, the handler committed each time before it could be stopped")
		}
		want = fmt.Sprintf("10.250.%d.3/24", attempt)
		before = settled(t, nl)
		fr := armFreezer(t, c, node)
		if attempt == 0 {
			c.create(t, p)
		} else {
			p = c.getPolicy(t, p.Name)
			p.Spec.DesiredState.Raw = policyYAML(t, p.Name, nil, eth2Static(want)).Spec.DesiredState.Raw
			if err := c.c.Update(t.Context(), p); err != nil {
				t.Fatal(err)
			}
		}
		var frozen bool
		pid, frozen = fr.freeze(t, p.Name, p.Generation)
		if frozen {
			t.Logf("attempt %d: handler %d frozen with checkpoint pending", attempt, pid)
			break
		}
		t.Logf("attempt %d: the handler committed before it was stopped; next generation", attempt)
		c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 2*time.Minute)
	}
	t.Logf("while frozen, eth2 has %v", addrsOf(t, nl, "eth2"))

	c.setNodeLabel(t, node, label, nil)
	rolledBack := countInLog(t, c, node, "rolled back pending checkpoint")
	newPID := killAndWaitRestart(t, c, node, pid)
	suite.EventuallyEvery(t, time.Minute, 20*time.Millisecond, "", suite.Cond(func() bool { return !checkpointExists(c.checkpointPath(node)) },
		func() string { return "checkpoint still pending after the handler's restart" }))
	if diff := cmp.Diff(before, snapshot(t, nl)); diff != "" {
		t.Errorf("node %s after restart differs from its pre-apply state (-before +after):\n%s", node, diff)
	}
	// The log line follows the record's removal.
	suite.EventuallyEvery(t, 10*time.Second, 20*time.Millisecond, "", suite.Cond(func() bool { return countInLog(t, c, node, "rolled back pending checkpoint") == rolledBack+1 },
		func() string {
			return fmt.Sprintf("handler %d logged %d rollbacks of a pending checkpoint, want 1",
				newPID, countInLog(t, c, node, "rolled back pending checkpoint")-rolledBack)
		}))
	c.waitEnactments(t, p.Name, nil, time.Minute)

	v := "yes"
	c.setNodeLabel(t, node, label, &v)
	c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 2*time.Minute)
	if got := addrsOf(t, nl, "eth2"); !slices.Contains(got, netip.MustParsePrefix(want)) {
		t.Errorf("policy Available after the crash, eth2 has %v, want %s", got, want)
	}

	t.Run("ConvergesByItself", func(t *testing.T) {
		for attempt := 10; ; attempt++ {
			if attempt == 15 {
				t.Fatal("5 attempts, the handler committed each time before it could be stopped")
			}
			want = fmt.Sprintf("10.250.%d.3/24", attempt)
			fr := armFreezer(t, c, node)
			p = c.getPolicy(t, p.Name)
			p.Spec.DesiredState.Raw = policyYAML(t, p.Name, nil, eth2Static(want)).Spec.DesiredState.Raw
			if err := c.c.Update(t.Context(), p); err != nil {
				t.Fatal(err)
			}
			var frozen bool
			if pid, frozen = fr.freeze(t, p.Name, p.Generation); frozen {
				break
			}
			c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 2*time.Minute)
		}
		rolledBack := countInLog(t, c, node, "rolled back pending checkpoint")
		killAndWaitRestart(t, c, node, pid)
		c.waitEnactments(t, p.Name, []string{node}, 2*time.Minute, phaseAvailable)
		if n := countInLog(t, c, node, "rolled back pending checkpoint"); n != rolledBack+1 {
			t.Errorf("restarted handler logged %d rollbacks of a pending checkpoint, want 1", n-rolledBack)
		}
		if got := addrsOf(t, nl, "eth2"); !slices.Contains(got, netip.MustParsePrefix(want)) {
			t.Errorf("eth2 has %v after the restarted handler converged, want %s", got, want)
		}
	})
}

// appliesLogged are the apply log lines of node after its first skip.
func appliesLogged(t testing.TB, c *cluster, node string, skip int) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(string(c.handlerLogText(t, node)), "\n") {
		if strings.Contains(l, "msg=applying ") {
			out = append(out, l)
		}
	}
	if skip > len(out) {
		skip = len(out)
	}
	return strings.Join(out[skip:], "\n")
}

func countInLog(t testing.TB, c *cluster, node, msg string) int {
	t.Helper()
	return bytes.Count(c.handlerLogText(t, node), []byte(msg))
}

// TestRestartReappliesNothing: a handler restarted with three Available
// policies applies nothing again (applies counted from its log) and the
// policies stay Available.
func TestRestartReappliesNothing(t *testing.T) {
	c := sharedLab(t)
	const node = "node02"
	sel := map[string]string{"kubernetes.io/hostname": node}
	before := c.applies(t, node)
	for _, p := range []*policy{
		policyYAML(t, "restart-1-eth2", sel, eth2Static("10.251.0.2/24")),
		policyYAML(t, "restart-2-eth1", sel, `
interfaces:
- name: eth1
  type: ethernet
  state: up
  ipv4:
    enabled: true
    dhcp: false
    address:
    - ip: 10.252.0.2
      prefix-length: 24
`),
		policyYAML(t, "restart-3-route", sel, `
routes:
  config:
  - destination: 203.0.113.0/24
    next-hop-address: 10.251.0.1
    next-hop-interface: eth2
    table-id: 200
`),
	} {
		c.create(t, p)
		c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 2*time.Minute)
	}
	applied := c.applies(t, node)
	// The counter must see the three applies, or a zero below proves nothing.
	if applied-before < 3 {
		t.Fatalf("%d applies logged on %s for 3 new policies, want at least 3: the apply log line changed?", applied-before, node)
	}
	count := countWrites(t, c, "restart-1-eth2")
	pid := c.handlerPID(t, node)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	suite.EventuallyEvery(t, time.Minute, 50*time.Millisecond, "", suite.Cond(func() bool {
		n := c.handlerPID(t, node)
		return n != 0 && n != pid
	}, func() string { return "handler not restarted" }))
	// The new handler's reconciles of the three policies write nothing
	// when there is nothing to do; a fourth policy, created now, marks
	// their end. The handler reconciles one policy at a time, and its
	// queue hands the waiting ones out in name order (policyQueue):
	// restart-4's apply comes after the three were decided.
	last := policyYAML(t, "restart-4-mark", sel, `
routes:
  config:
  - destination: 198.51.100.0/24
    next-hop-address: 10.251.0.1
    next-hop-interface: eth2
    table-id: 201
`)
	c.create(t, last)
	c.waitEnactments(t, last.Name, []string{node}, 2*time.Minute, phaseAvailable)
	if n := c.applies(t, node) - applied; n != 1 {
		t.Errorf("restarted handler applied %d times (the marking policy's apply included), want 1:\n%s", n, appliesLogged(t, c, node, applied))
	}
	w := count.stop()
	t.Logf("restart: enactment writes of restart-1-eth2 during the restart: %v", w.enactment)
	for _, name := range []string{"restart-1-eth2", "restart-2-eth1", "restart-3-route"} {
		c.waitEnactments(t, name, []string{node}, 10*time.Second, phaseAvailable)
	}
}

// TestNodeLosingLabelLosesEnactment: a node whose labels stop matching a
// policy loses its enactment; the others keep theirs.
func TestNodeLosingLabelLosesEnactment(t *testing.T) {
	c := sharedLab(t)
	const label = "knmstate.test/group"
	c.labelNode(t, "node02", label, "a")
	c.labelNode(t, "node03", label, "a")
	p := policyYAML(t, "label-group", map[string]string{label: "a"}, `
interfaces:
- name: eth2
  type: ethernet
  state: up
`)
	c.create(t, p)
	c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 2*time.Minute)
	c.waitEnactments(t, p.Name, []string{"node02", "node03"}, 30*time.Second, phaseAvailable)
	t0 := time.Now()
	c.setNodeLabel(t, "node03", label, nil)
	c.waitEnactments(t, p.Name, []string{"node02"}, time.Minute, phaseAvailable)
	t.Logf("node03's enactment gone %v after its label was removed", time.Since(t0).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := c.dyn.Resource(nnceGVR).Get(ctx, shared.EnactmentName("node03", p.Name), metav1.GetOptions{}); err == nil {
		t.Errorf("enactment of node03 still readable")
	}
}
