//go:build kubelet

package faults

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// burstPolicies are created within burstWindow, each for one node, so
// every node is matched by burstPolicies/nodeCount of them.
const (
	burstPolicies = 200
	burstWindow   = 10 * time.Second
)

// TestBurst: 200 policies created within 10 s on 5 nodes (40 each), each a
// bridge of its own: all converge, every node applies each once. It
// starts from a reset and leaves one, like every case of TestFaults.
func TestBurst(t *testing.T) {
	ctx := t.Context()
	if err := s.reset(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.reset(context.Background()); err != nil {
			t.Errorf("reset after the burst: %v", err)
		}
	})
	w, err := s.watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.stop)
	reqBefore, err := s.apiRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, burstPolicies)
	// 10 creators, as ten users or a GitOps tool applying a directory.
	for c := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < burstPolicies; i += 10 {
				node := s.nodes[i%len(s.nodes)]
				p, err := newPolicy(fmt.Sprintf("burst-%03d", i), fmt.Sprintf(`
interfaces:
- name: fb%03d
  type: linux-bridge
  state: up
  bridge:
    port: []
`, i), map[string]string{"kubernetes.io/hostname": node}, false)
				if err == nil {
					err = s.c.Create(ctx, p)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	created := time.Since(begin)
	close(errs)
	for err := range errs {
		t.Fatalf("creating the burst: %v", err)
	}
	if created > burstWindow {
		// Not a failure of knmstate: the machine was too slow to make the burst.
		t.Logf("the burst took %v to create, more than %v", created, burstWindow)
	}
	var converged time.Duration
	suite.EventuallyEvery(t, convergeTimeout, 500*time.Millisecond, "the burst Available", func() error {
		if avail, total := s.availablePolicies(ctx); avail != burstPolicies {
			return fmt.Errorf("%d of %d burst policies Available (of %d listed)", avail, burstPolicies, total)
		}
		converged = time.Since(begin)
		return nil
	})
	reqAfter, err := s.apiRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A policy for every node, named after the burst's, ends the window:
	// a handler decides about the policies one at a time, waiting ones in
	// name order, so it applies this one once it has decided about its
	// burst policies, and an apply again of one of them is in its log
	// before. Its bridge is absent already: it changes nothing.
	mark, err := newPolicy("burst-zz-mark", "interfaces:\n- {name: fbmark, type: linux-bridge, state: absent}\n", nil, false)
	if err == nil {
		err = s.c.Create(ctx, mark)
	}
	if err != nil {
		t.Fatal(err)
	}
	names := []string{mark.Name}
	for i := range burstPolicies {
		names = append(names, fmt.Sprintf("burst-%03d", i))
	}
	suite.EventuallyEvery(t, 2*time.Minute, logPoll, "the watcher seeing the end of the burst", func() error {
		for _, n := range s.nodes {
			if w.count(func(ev logEvent) bool { return ev.node == n && ev.policy == mark.Name && ev.msg == msgApplied }) == 0 {
				return fmt.Errorf("no commit of %s in the log of %s", mark.Name, n)
			}
		}
		return w.caughtUp(ctx, names...)
	})
	w.stop()
	counts := w.applyCounts()
	dups, commits := 0, 0
	for k, c := range counts {
		if strings.Contains(k, "/"+mark.Name+"/") {
			continue
		}
		commits += c.committed
		if c.afterCommit > 0 || c.committed > 1 {
			dups++
			t.Errorf("%s applied again after its commit: %+v", k, *c)
		}
	}
	if commits != burstPolicies {
		t.Errorf("%d commits in the handlers' logs, want %d (one per policy)", commits, burstPolicies)
	}
	for _, n := range s.nodes {
		out, err := s.lab.Exec(ctx, n, "", "ip", "-o", "link", "show", "type", "bridge")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(out, ": fb"); got != burstPolicies/len(s.nodes) {
			t.Errorf("%s has %d burst bridges, want %d", n, got, burstPolicies/len(s.nodes))
		}
	}
	t.Logf("FIGURE case=burst policies=%d nodes=%d created-in=%v converged=%v api-requests=%.0f commits=%d duplicates=%d max-applying=%d watched-writes=%d",
		burstPolicies, len(s.nodes), created.Round(100*time.Millisecond), converged.Round(100*time.Millisecond), reqAfter-reqBefore, commits, dups,
		maxValue(w.maxApplying), w.enactmentChanges+w.policyChanges)
}

func maxValue(m map[string]int) int {
	n := 0
	for _, v := range m {
		n = max(n, v)
	}
	return n
}

// availablePolicies counts the policies whose Available condition is True.
func (s *fixture) availablePolicies(ctx context.Context) (avail, total int) {
	var l nmstatev1.NodeNetworkConfigurationPolicyList
	if err := s.c.List(ctx, &l); err != nil {
		return 0, 0
	}
	for _, p := range l.Items {
		if c := p.Status.Conditions.Find(shared.NodeNetworkConfigurationPolicyConditionAvailable); c != nil && c.Status == "True" {
			avail++
		}
	}
	return avail, len(l.Items)
}

// apiRequests is the API server's count of requests served
// (apiserver_request_total, every verb, resource and client).
func (s *fixture) apiRequests(ctx context.Context) (float64, error) {
	kube, err := kubernetes.NewForConfig(s.cfg)
	if err != nil {
		return 0, err
	}
	b, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("the API server's metrics: %w", err)
	}
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "apiserver_request_total{") {
			continue
		}
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, nil
}
