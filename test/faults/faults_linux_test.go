//go:build kubelet

package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// outage is how long the control plane stays down; nodeDown and
// partitionFor the node faults'.
const (
	outage       = 30 * time.Second
	nodeDown     = 20 * time.Second
	partitionFor = 20 * time.Second
	// convergeTimeout bounds a case: a rollout that needs a person to
	// unstick it never ends; this one must, however loaded the machine.
	convergeTimeout = 6 * time.Minute
)

// rollout is one case: the good and the bad policy rolling out while a
// fault hits, and the watcher recording it.
type rollout struct {
	t         *testing.T
	tag       string
	good, bad string
	w         *watcher
	created   time.Time
}

func (s *fixture) startRollout(t *testing.T, tag string) *rollout {
	t.Helper()
	ctx := t.Context()
	if err := s.reset(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := s.watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.stop)
	r := &rollout{t: t, tag: tag, good: "good-" + tag, bad: "bad-" + tag, w: w}
	for _, p := range []struct{ name, state string }{{r.good, goodState}, {r.bad, badState}} {
		pol, err := newPolicy(p.name, p.state, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.c.Create(ctx, pol); err != nil {
			t.Fatalf("create policy %s: %v", p.name, err)
		}
	}
	r.created = time.Now()
	return r
}

// waitLog waits for a handler log event of the case, failing the test
// without one.
func (r *rollout) waitLog(what string, match func(logEvent) bool) logEvent {
	r.t.Helper()
	ev, err := r.w.waitEvent(r.t.Context(), 3*time.Minute, what, match)
	if err != nil {
		r.t.Fatal(err)
	}
	return ev
}

// inject injects a fault, failing the test if the lab refuses.
func (r *rollout) inject(f lab.Fault) *lab.FaultResult {
	r.t.Helper()
	res, err := lab.Inject(r.t.Context(), s.dir, f)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("fault %s %s for %v at +%v: %s %v", f.Component, f.Node, time.Duration(f.For), res.At.Sub(r.created).Round(time.Millisecond), res.Target, res.PIDs)
	return res
}

// converge waits until both policies ended (every node Available, Failed
// or Aborted, each policy Available or Degraded and no longer
// Progressing) and returns when.
func (r *rollout) converge() time.Time {
	r.t.Helper()
	var at time.Time
	suite.Eventually(r.t, convergeTimeout, "not converged after the policies were created (a rollout that needs a person)", func() error {
		done, state := s.ended(r.t.Context(), []string{r.good, r.bad})
		if !done {
			return errors.New("\n" + state)
		}
		at = time.Now()
		return nil
	})
	return at
}

// ended says whether every named policy ended, and describes them.
func (s *fixture) ended(ctx context.Context, names []string) (bool, string) {
	var b strings.Builder
	done := true
	for _, name := range names {
		p := &policy{}
		if err := s.c.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
			fmt.Fprintf(&b, "%s: %v\n", name, err)
			done = false
			continue
		}
		es, err := s.enactmentsOf(ctx, name)
		if err != nil {
			done = false
			continue
		}
		conds := p.Status.Conditions
		is := func(t shared.ConditionType) bool { c := conds.Find(t); return c != nil && c.Status == "True" }
		ok := !is(shared.NodeNetworkConfigurationPolicyConditionProgressing) &&
			(is(shared.NodeNetworkConfigurationPolicyConditionAvailable) || is(shared.NodeNetworkConfigurationPolicyConditionDegraded)) &&
			len(es) == len(s.nodes)
		fmt.Fprintf(&b, "%s gen %d:", name, p.Generation)
		for _, c := range conds {
			if c.Status == "True" {
				fmt.Fprintf(&b, " %s", c.Type)
			}
		}
		for i := range es {
			ph := phase(&es[i], p.Generation)
			ok = ok && terminal(ph)
			fmt.Fprintf(&b, " %s=%s", es[i].Labels[shared.EnactmentNodeLabel], ph)
		}
		b.WriteString("\n")
		done = done && ok
	}
	return done, b.String()
}

// check verifies the promises once the case converged, and prints its
// figures: time to converge after the fault ended, applies per node and
// generation, the most nodes applying at once.
func (r *rollout) check(faultEnd, convergedAt time.Time, extra string) {
	t := r.t
	t.Helper()
	ctx := t.Context()
	suite.EventuallyEvery(t, time.Minute, logPoll, "the watcher seeing the end of the rollouts", func() error {
		return r.w.caughtUp(ctx, r.good, r.bad)
	})
	r.w.stop()
	outcome := map[string]map[string]string{} // policy -> node -> phase
	for _, name := range []string{r.good, r.bad} {
		p := &policy{}
		if err := s.c.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
			t.Fatal(err)
		}
		es, err := s.enactmentsOf(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		outcome[name] = map[string]string{}
		failed := 0
		for i := range es {
			e := &es[i]
			node := e.Labels[shared.EnactmentNodeLabel]
			ph := phase(e, p.Generation)
			outcome[name][node] = ph
			if ph == "Failed" {
				failed++
				// Degraded tells the truth only if each failing node says why.
				if c := e.Status.Conditions.Find(shared.NodeNetworkConfigurationEnactmentConditionFailing); c == nil || c.Message == "" {
					t.Errorf("%s: Failed without a reason: %+v", e.Name, e.Status.Conditions)
				}
			}
		}
		deg := p.Status.Conditions.Find(shared.NodeNetworkConfigurationPolicyConditionDegraded)
		if failed > 0 && (deg == nil || deg.Status != "True") {
			t.Errorf("policy %s has %d Failed nodes but is not Degraded: %v", name, failed, p.Status.Conditions)
		}
		if n := r.w.maxApplying[name]; n > maxUnavailable {
			t.Errorf("policy %s: %d nodes applying at once, maxUnavailable is %d", name, n, maxUnavailable)
		}
	}
	for _, n := range badNodes {
		if outcome[r.bad][n] == "Available" {
			t.Errorf("%s Available on %s, whose relay is broken: the case proves nothing", r.bad, n)
		}
	}
	// No partial state: each node shows the policy where its enactment is
	// Available and the state before it everywhere else.
	for _, n := range s.nodes {
		l, err := s.live(ctx, n)
		if err != nil {
			t.Error(err)
			continue
		}
		if want := outcome[r.good][n] == "Available"; l.goodBridge != want {
			t.Errorf("%s: %s %s but the bridge %s is there: %v (a partial state)", n, r.good, outcome[r.good][n], goodBridge, l.goodBridge)
		}
		if want := outcome[r.bad][n] == "Available"; l.badRoute != want {
			t.Errorf("%s: %s %s but the route through %s is there: %v (a partial state)", n, r.bad, outcome[r.bad][n], relay, l.badRoute)
		}
	}
	dups, maxCommits, starts := 0, 0, 0
	counts := r.w.applyCounts()
	for _, k := range slices.Sorted(mapsKeys(counts)) {
		c := counts[k]
		starts += c.started
		maxCommits = max(maxCommits, c.committed)
		if c.afterCommit > 0 || c.committed > 1 {
			dups += c.afterCommit
			t.Errorf("%s applied again after its commit: %d starts, %d commits, %d starts after a commit", k, c.started, c.committed, c.afterCommit)
		}
	}
	for _, name := range []string{r.good, r.bad} {
		for n, ph := range outcome[name] {
			k := fmt.Sprintf("%s/%s/1", n, name)
			if ph == "Available" && (counts[k] == nil || counts[k].committed != 1) {
				t.Errorf("%s Available on %s but its handler's logs show %+v commits, want exactly 1", name, n, counts[k])
			}
		}
	}
	after := convergedAt.Sub(faultEnd)
	t.Logf("FIGURE case=%s converge-after-fault=%v rollout=%v applies-started=%d max-commits-per-node-generation=%d duplicates=%d max-applying=%d/%d good=%s bad=%s watched-writes=%d%s",
		r.tag, after.Round(100*time.Millisecond), convergedAt.Sub(r.created).Round(100*time.Millisecond), starts, maxCommits, dups,
		r.w.maxApplying[r.good], r.w.maxApplying[r.bad], summary(outcome[r.good]), summary(outcome[r.bad]),
		r.w.enactmentChanges+r.w.policyChanges, extra)
}

func summary(m map[string]string) string {
	n := map[string]int{}
	for _, ph := range m {
		n[ph]++
	}
	var out []string
	for ph, c := range n {
		out = append(out, fmt.Sprintf("%s:%d", ph, c))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// isGoodCommit matches the good policy's first commit on any node: the
// rollout is under way, most nodes still to go.
func (r *rollout) isGoodCommit(ev logEvent) bool {
	return ev.msg == msgApplied && ev.policy == r.good
}

// TestFaults runs the cases in order on the shared lab.
func TestFaults(t *testing.T) {
	t.Cleanup(func() {
		if err := s.reset(context.Background()); err != nil {
			t.Errorf("final reset: %v", err)
		}
	})
	t.Run("APIServerDown", func(t *testing.T) {
		r := s.startRollout(t, "apiserver")
		r.waitLog("commit of "+r.good, r.isGoodCommit)
		res := r.inject(lab.Fault{Component: lab.FaultAPIServer, For: lab.Duration(outage)})
		r.check(res.At.Add(outage), r.converge(), "")
	})
	t.Run("EtcdDown", func(t *testing.T) {
		r := s.startRollout(t, "etcd")
		r.waitLog("commit of "+r.good, r.isGoodCommit)
		res := r.inject(lab.Fault{Component: lab.FaultEtcd, For: lab.Duration(outage)})
		r.check(res.At.Add(outage), r.converge(), "")
	})
	t.Run("ControlPlaneDownDuringRollback", func(t *testing.T) {
		r := s.startRollout(t, "rollback-outage")
		r.waitLog("apply of "+r.bad+" on a bad node", func(ev logEvent) bool {
			return ev.msg == msgPause && ev.policy == r.bad && slices.Contains(badNodes, ev.node)
		})
		res := r.inject(lab.Fault{Component: lab.FaultAPIServer, For: lab.Duration(outage)})
		r.inject(lab.Fault{Component: lab.FaultEtcd, For: lab.Duration(outage)})
		r.check(res.At.Add(outage), r.converge(), "")
	})
	t.Run("ControllerLeaderKilled", func(t *testing.T) {
		r := s.startRollout(t, "leader")
		r.waitLog("commit of "+r.good, r.isGoodCommit)
		before := s.leader(t)
		res := r.inject(lab.Fault{Component: lab.FaultController})
		var after string
		suite.EventuallyEvery(t, 3*time.Minute, 100*time.Millisecond, "a new leader after killing "+before, func() error {
			if after = s.leader(t); after == before || after == "" {
				return fmt.Errorf("leader %q", after)
			}
			return nil
		})
		takeover := time.Since(res.At)
		pod := func(id string) string { p, _, _ := strings.Cut(id, "_"); return p }
		t.Logf("leader %s -> %s", before, after)
		r.check(res.At.Add(takeover), r.converge(), fmt.Sprintf(" takeover=%v other-replica=%v", takeover.Round(100*time.Millisecond), pod(before) != pod(after)))
	})
	t.Run("HandlerKilledDuringApply", func(t *testing.T) {
		r := s.startRollout(t, "handler-apply")
		ev := r.waitLog("an apply of "+r.good, func(ev logEvent) bool { return ev.msg == msgApplying && ev.policy == r.good })
		res := r.inject(lab.Fault{Component: lab.FaultHandler, Node: ev.node})
		r.check(res.At, r.converge(), " node="+ev.node)
	})
	t.Run("HandlerKilledBeforeCommit", func(t *testing.T) {
		r := s.startRollout(t, "handler-probes")
		ev := r.waitLog("the pause before the probes of "+r.good, func(ev logEvent) bool { return ev.msg == msgPause && ev.policy == r.good })
		res := r.inject(lab.Fault{Component: lab.FaultHandler, Node: ev.node})
		conv := r.converge()
		// The new handler found the checkpoint nothing committed and
		// rolled it back before anything else.
		if n := r.w.count(func(e logEvent) bool {
			return e.node == ev.node && (e.msg == msgRecovered || e.msg == msgRecovered2) && e.at.After(res.At)
		}); n == 0 {
			t.Errorf("%s: no pending checkpoint rolled back after the handler was killed before its commit", ev.node)
		}
		r.check(res.At, conv, " node="+ev.node)
	})
	t.Run("NodeKilled", func(t *testing.T) {
		r := s.startRollout(t, "node")
		ev := r.waitLog("the pause before the probes of "+r.good, func(ev logEvent) bool { return ev.msg == msgPause && ev.policy == r.good })
		res := r.inject(lab.Fault{Component: lab.FaultNode, Node: ev.node, For: lab.Duration(nodeDown)})
		r.check(res.At.Add(nodeDown), r.converge(), " node="+ev.node)
	})
	t.Run("Partition", func(t *testing.T) {
		r := s.startRollout(t, "partition")
		ev := r.waitLog("the pause before the probes of "+r.good+" on a good node", func(ev logEvent) bool {
			return ev.msg == msgPause && ev.policy == r.good && !slices.Contains(badNodes, ev.node)
		})
		res := r.inject(lab.Fault{Component: lab.FaultPartition, Node: ev.node, For: lab.Duration(partitionFor)})
		conv := r.converge()
		name := ev.node + "." + r.good
		r.w.mu.Lock()
		hist := slices.Clone(r.w.history[name])
		r.w.mu.Unlock()
		t.Logf("%s: %s", name, strings.Join(hist, " | "))
		// The node's own record: the change it made while cut off was
		// rolled back. What ends it first depends on the machine's pace:
		// the api-server probe's timeout, or the node lock's renew
		// deadline (the lost lock cancels the probes).
		var failures []string
		r.w.count(func(e logEvent) bool {
			if e.node == ev.node && e.policy == r.good && e.msg == msgApplyFailed && e.at.After(res.At) && e.at.Before(res.At.Add(partitionFor+30*time.Second)) {
				failures = append(failures, fmt.Sprintf("+%v %s", e.at.Sub(res.At).Round(100*time.Millisecond), e.text))
			}
			return false
		})
		if len(failures) == 0 {
			t.Errorf("%s: the apply made while cut off was not rolled back (no %q of %s in its handler's log)", ev.node, msgApplyFailed, r.good)
		}
		t.Logf("%s rolled back while cut off: %s", ev.node, strings.Join(failures, " | "))
		// What the enactment says about it: the status write of the
		// failure happens while cut off; the handler keeps the outcome
		// and writes it once it reaches the API server again.
		says := slices.ContainsFunc(hist, func(h string) bool { return strings.Contains(h, "probe") })
		if !says {
			t.Errorf("%s: after healing, the enactment never said why the apply made while cut off failed: %s", name, strings.Join(hist, " | "))
		}
		r.check(res.At.Add(partitionFor), conv, fmt.Sprintf(" node=%s enactment-says-why=%v", ev.node, says))
	})
}

// leader is the holder of the controller's leader Lease.
func (s *fixture) leader(t *testing.T) string {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := s.c.Get(t.Context(), types.NamespacedName{Namespace: "nmstate", Name: "knmstate-controller"}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
