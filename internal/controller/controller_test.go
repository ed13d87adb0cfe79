package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/rollout"
)

// phases counts the policy's enactments by their True condition.
func (f *fixture) phases(policy string) map[string]int {
	out := map[string]int{}
	for _, e := range f.enactments(policy) {
		p := "none"
		for _, c := range e.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				p = string(c.Type)
			}
		}
		out[p]++
	}
	return out
}

func checkNoRedundantWrites(t *testing.T, writes []string) {
	t.Helper()
	for i := 1; i < len(writes); i++ {
		if writes[i] == writes[i-1] {
			t.Errorf("status write %d repeats write %d: %s", i, i-1, writes[i])
		}
	}
}

func TestRolloutRespectsMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		nodes          int
		maxUnavailable intstr.IntOrString
		limit          int
	}{
		{6, intstr.FromInt32(2), 2},
		{30, intstr.FromString("20%"), 6},
	} {
		t.Run(fmt.Sprintf("%d nodes maxUnavailable %s", tc.nodes, tc.maxUnavailable.String()), func(t *testing.T) {
			group := fmt.Sprintf("rollout%d", tc.nodes)
			f := newFixture(t, group)
			agent := "knmstate-controller-" + group
			counter := startController(t, agent, Options{})
			nodes := f.nodes(tc.nodes)
			status := f.recordStatus(group + "-p")
			p := f.policy("p", &tc.maxUnavailable)
			s := f.sample(p.Name, p.Generation)

			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			t.Cleanup(func() { cancel(); wg.Wait() })
			// The first applies wait until the limit is reached, so that the
			// peak does not depend on how fast the fake handlers ask.
			var started atomic.Int32
			gate := make(chan struct{})
			apply := func(ctx context.Context, _ string) string {
				if started.Add(1) == int32(tc.limit) {
					close(gate)
				}
				select {
				case <-gate:
				case <-ctx.Done():
				}
				return "available"
			}
			for _, n := range nodes {
				f.runHandler(ctx, &wg, n, p, apply)
			}
			f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Available, Message: fmt.Sprintf("%d/%d nodes successfully configured", tc.nodes, tc.nodes)})
			wg.Wait()

			if diff := cmp.Diff(map[string]int{"Available": tc.nodes}, f.phases(p.Name)); diff != "" {
				t.Errorf("enactments (-want +got):\n%s", diff)
			}
			// The limit is reached, and never passed.
			held, progressing := s.max()
			if held != tc.limit || progressing > tc.limit {
				t.Errorf("at most %d permits held and %d enactments progressing at once, want %d and at most %d", held, progressing, tc.limit, tc.limit)
			}
			if diff := cmp.Diff(map[string]bool{agent: true}, f.statusManagers(p.Name)); diff != "" {
				t.Errorf("policy status written by (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]bool{agent: true}, f.annotationManagers(p.Name)); diff != "" {
				t.Errorf("permits written by (-want +got):\n%s", diff)
			}
			writes := status.list()
			checkNoRedundantWrites(t, writes)
			if got := counter.get("PATCH nodenetworkconfigurationenactments"); got != tc.nodes {
				t.Errorf("%d enactment patches, want one permit per node (%d)", got, tc.nodes)
			}
			if counter.conflicts != 0 {
				t.Errorf("controller got %d conflicts", counter.conflicts)
			}
			t.Logf("policy status writes: %d", len(writes))
			for _, w := range writes {
				t.Logf("  %s", w)
			}
			t.Logf("controller writes: %v, conflicts: %d", counter.writes(), counter.conflicts)
		})
	}
}

func TestFailuresAbortTheRest(t *testing.T) {
	f := newFixture(t, "failing")
	startController(t, "knmstate-controller-failing", Options{})
	nodes := f.nodes(6)
	two := intstr.FromInt32(2)
	p := f.policy("p", &two)
	s := f.sample(p.Name, p.Generation)

	// Each apply fails, when the test says so.
	var mu sync.Mutex
	started := []string{}
	release := map[string]chan struct{}{}
	for _, n := range nodes {
		release[n] = make(chan struct{})
	}
	fail := func(ctx context.Context, node string) string {
		mu.Lock()
		started = append(started, node)
		mu.Unlock()
		select {
		case <-release[node]:
		case <-ctx.Done():
		}
		return "failed"
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, n := range nodes {
		f.runHandler(ctx, &wg, n, p, fail)
	}
	startedNodes := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), started...)
	}
	eventually(t, "two applies started", func() (bool, string) {
		got := startedNodes()
		return len(got) == 2, fmt.Sprintf("%v", got)
	})
	first := startedNodes()
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Progressing, Message: "Policy is progressing 0/6 nodes finished"})

	close(release[first[0]])
	// Degraded at the first failure, while the other apply goes on.
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Degraded, Message: "1/6 nodes failed to configure"})
	if got := startedNodes(); len(got) != 2 {
		t.Fatalf("applies started after one failure: %v; the failed node keeps its permit", got)
	}

	close(release[first[1]])
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Degraded, Message: "2/6 nodes failed to configure, 4 nodes aborted configuration"})
	wg.Wait()
	if diff := cmp.Diff(map[string]int{"Failing": 2, "Aborted": 4}, f.phases(p.Name)); diff != "" {
		t.Errorf("enactments (-want +got):\n%s", diff)
	}
	if got := startedNodes(); len(got) != 2 {
		t.Errorf("applies started: %v, want only the first two", got)
	}
	if held, progressing := s.max(); held > 2 || progressing > 2 {
		t.Errorf("at most %d permits held and %d progressing at once, want at most 2", held, progressing)
	}
}

func TestGarbageCollection(t *testing.T) {
	f := newFixture(t, "gc")
	startController(t, "knmstate-controller-gc", Options{})
	nodes := f.nodes(3)
	three := intstr.FromInt32(3)
	p := f.policy("p", &three)
	q := f.policy("q", &three)

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, pol := range []string{"p", "q"} {
		pp := p
		if pol == "q" {
			pp = q
		}
		for _, n := range nodes {
			f.runHandler(ctx, &wg, n, pp, func(context.Context, string) string { return "available" })
		}
	}
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Available, Message: "3/3 nodes successfully configured"})
	f.waitPolicy(q.Name, rollout.Status{Verdict: rollout.Available, Message: "3/3 nodes successfully configured"})
	wg.Wait()

	enactmentNodes := func(policy string) []string {
		var out []string
		for _, e := range f.enactments(policy) {
			out = append(out, e.Labels[shared.EnactmentNodeLabel])
		}
		sort.Strings(out)
		return out
	}
	waitNodes := func(policy string, want []string) {
		t.Helper()
		eventually(t, "enactments of "+policy, func() (bool, string) {
			got := enactmentNodes(policy)
			return cmp.Equal(want, got), fmt.Sprintf("%v, want %v", got, want)
		})
	}

	// A node that stops matching loses its enactments, and the policies
	// count one node less.
	node := &corev1.Node{}
	if err := f.c.admin.Get(f.ctx, client.ObjectKey{Name: nodes[2]}, node); err != nil {
		t.Fatal(err)
	}
	delete(node.Labels, groupLabel)
	if err := f.c.admin.Update(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	waitNodes(p.Name, nodes[:2])
	waitNodes(q.Name, nodes[:2])
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Available, Message: "2/2 nodes successfully configured"})

	// A deleted node loses its enactments (no kube-controller-manager runs
	// here, so the owner reference alone would not do it).
	if err := f.c.admin.Delete(f.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[1]}}); err != nil {
		t.Fatal(err)
	}
	waitNodes(p.Name, nodes[:1])
	waitNodes(q.Name, nodes[:1])
	f.waitPolicy(q.Name, rollout.Status{Verdict: rollout.Available, Message: "1/1 nodes successfully configured"})

	// A deleted policy loses all its enactments; the other keeps its own.
	if err := f.c.admin.Delete(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	waitNodes(p.Name, nil)
	if got := enactmentNodes(q.Name); !cmp.Equal(nodes[:1], got) {
		t.Errorf("enactments of %s: %v, want %v", q.Name, got, nodes[:1])
	}
}

func TestPolicyStatusIgnoredAndNotReady(t *testing.T) {
	f := newFixture(t, "notready")
	startController(t, "knmstate-controller-notready", Options{})
	nodes := f.nodes(3)
	f.setReady(nodes[2], false)

	none := &nmstatev1.NodeNetworkConfigurationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "notready-none"},
		Spec:       shared.NodeNetworkConfigurationPolicySpec{NodeSelector: map[string]string{groupLabel: "no-such-group"}},
	}
	if err := f.c.admin.Create(f.ctx, none); err != nil {
		t.Fatal(err)
	}
	f.waitPolicy(none.Name, rollout.Status{Verdict: rollout.Ignored, Message: "Policy does not match any node"})

	p := f.policy("p", nil)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, n := range nodes[:2] {
		f.runHandler(ctx, &wg, n, p, func(context.Context, string) string { return "available" })
	}
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Available, Message: "2/3 nodes successfully configured, 1 nodes ignored due to NotReady state"})

	// The NotReady node's handler asks too: it gets no permit while NotReady.
	f.runHandler(ctx, &wg, nodes[2], p, func(context.Context, string) string { return "available" })
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Progressing, Message: "Policy is progressing 2/2 nodes finished, 1 pending, 1 nodes ignored due to NotReady state"})
	f.setReady(nodes[2], true)
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Available, Message: "3/3 nodes successfully configured"})
}

func TestPermitOfNotReadyNodeIsReclaimed(t *testing.T) {
	f := newFixture(t, "reclaim")
	startController(t, "knmstate-controller-reclaim", Options{Rollout: rollout.Config{ReclaimAfter: time.Second}})
	nodes := f.nodes(2)
	one := intstr.FromInt32(1)
	p := f.policy("p", &one)

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	// The first node to get the permit never finishes (its node dies
	// mid-apply); the other succeeds.
	stuck := make(chan string, 1)
	var once sync.Once
	decide := func(ctx context.Context, node string) string {
		first := false
		once.Do(func() { first = true })
		if first {
			stuck <- node
			<-ctx.Done()
		}
		return "available"
	}
	for _, n := range nodes {
		f.runHandler(ctx, &wg, n, p, decide)
	}
	var dead string
	select {
	case dead = <-stuck:
	case <-time.After(time.Minute):
		t.Fatal("no apply started")
	}
	f.setReady(dead, false)
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Available, Message: "1/2 nodes successfully configured, 1 nodes ignored due to NotReady state"})
	e := &v1beta1.NodeNetworkConfigurationEnactment{}
	if err := f.c.admin.Get(f.ctx, client.ObjectKey{Name: shared.EnactmentName(dead, p.Name)}, e); err != nil {
		t.Fatal(err)
	}
	if v, ok := e.Annotations[rollout.PermitAnnotation]; ok {
		t.Errorf("permit of the NotReady node still there: %q", v)
	}
}

func TestNewGenerationRollsOutAgain(t *testing.T) {
	f := newFixture(t, "generation")
	startController(t, "knmstate-controller-generation", Options{})
	nodes := f.nodes(3)
	one := intstr.FromInt32(1)
	p := f.policy("p", &one)
	run := func(p *nmstatev1.NodeNetworkConfigurationPolicy) {
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		for _, n := range nodes {
			f.runHandler(ctx, &wg, n, p, func(context.Context, string) string { return "available" })
		}
		f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Available, Message: "3/3 nodes successfully configured"})
	}
	run(p)

	// A spec change (allowed now that the policy is Available) is a new
	// generation: the old results no longer count.
	status := f.recordStatus(p.Name)
	if err := f.c.admin.Get(f.ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	two := intstr.FromInt32(2)
	p.Spec.MaxUnavailable = &two
	if err := f.c.admin.Update(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	if p.Generation != 2 {
		t.Fatalf("generation %d after a spec change, want 2", p.Generation)
	}
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Progressing, Message: "Policy is progressing 0/3 nodes finished"})
	s := f.sample(p.Name, 2)
	run(p)
	for _, e := range f.enactments(p.Name) {
		if e.Status.PolicyGeneration != 2 || e.Annotations[rollout.PermitAnnotation] != "2" {
			t.Errorf("%s: generation %d, permit %q; want 2 and 2", e.Name, e.Status.PolicyGeneration, e.Annotations[rollout.PermitAnnotation])
		}
	}
	if held, _ := s.max(); held > 2 {
		t.Errorf("%d permits held at once, limit 2", held)
	}
	checkNoRedundantWrites(t, status.list())
}
