package controller

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/internal/scrape"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// instance is one controller replica (Run) of the leader election tests.
type instance struct {
	agent   string
	opts    Options // as given
	counter *requestCounter
	cancel  context.CancelFunc
	exited  chan struct{}
	err     error // Run's result, once exited is closed
	// gauges is the instance's own gauge registry.
	gauges *prometheus.Registry
	// logs are the instance's log lines.
	logs *logLines

	mu sync.Mutex
	// term is the term running now, 0 between terms; started counts them.
	term, started int
	// startWrites and endWrites are apiWrites when a term started and
	// when it had ended, by term.
	startWrites, endWrites map[int]map[string]int
}

// logLines records the lines of a logger; a failed test shows them.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

// count returns how many lines contain all of subs.
func (l *logLines) count(subs ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		n++
	}
	return n
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// gaugeFamilies counts the kubernetes_nmstate_ families reg serves.
func gaugeFamilies(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "kubernetes_nmstate_") {
			n++
		}
	}
	return n
}

// startInstance runs the controller as agent on c until the test ends
// (or stop), with its own gauge registry, as each process has.
func startInstance(t *testing.T, c *cluster, agent string, opts Options) *instance {
	t.Helper()
	cfg, counter := c.controllerConfig(t, agent)
	in := &instance{
		agent: agent, counter: counter, exited: make(chan struct{}),
		gauges: prometheus.NewRegistry(), logs: &logLines{},
		startWrites: map[int]map[string]int{}, endWrites: map[int]map[string]int{},
	}
	in.opts = opts
	opts.gaugeRegistry = in.gauges
	opts.onTerm = in.onTerm
	opts.Logger = funcr.New(in.logs.add, funcr.Options{})
	if opts.Rollout.GCGrace == 0 {
		opts.Rollout.GCGrace = time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() {
		defer close(in.exited)
		in.err = Run(ctx, cfg, opts)
	}()
	t.Cleanup(func() {
		if err := in.stop(); err != nil {
			t.Errorf("%s: Run: %v", agent, err)
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", agent, in.logs)
		}
	})
	return in
}

func (in *instance) onTerm(n int, leading bool) {
	w := in.apiWrites()
	in.mu.Lock()
	defer in.mu.Unlock()
	if leading {
		in.term, in.started = n, in.started+1
		in.startWrites[n] = w
	} else {
		in.term = 0
		in.endWrites[n] = w
	}
}

// stop ends Run and returns its result.
func (in *instance) stop() error {
	in.cancel()
	<-in.exited
	return in.err
}

// running reports whether Run has not returned.
func (in *instance) running() bool {
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}

// terms returns the running term (0 for none) and how many have started.
func (in *instance) terms() (current, started int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.term, in.started
}

func (in *instance) elected() bool {
	current, _ := in.terms()
	return current != 0
}

// apiWrites returns the instance's writes of anything but its Lease and
// Events: what acting on the cluster means.
func (in *instance) apiWrites() map[string]int {
	out := map[string]int{}
	for k, v := range in.counter.writes() {
		if !strings.HasSuffix(k, " leases") && !strings.HasSuffix(k, " events") {
			out[k] = v
		}
	}
	return out
}

// rollOut creates policy <group>-<suffix> (maxUnavailable 1) for nodes,
// plays their handlers, and waits until it is Available.
func (f *fixture) rollOut(nodes []string, suffix string) string {
	f.t.Helper()
	one := intstr.FromInt32(1)
	p := f.policy(suffix, &one)
	ctx, cancel := context.WithCancel(f.ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, n := range nodes {
		f.runHandler(ctx, &wg, n, p, func(context.Context, string) string { return "available" })
	}
	f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Available, Message: fmt.Sprintf("%d/%d nodes successfully configured", len(nodes), len(nodes))})
	return p.Name
}

// withEndpoints gives opts a metrics and a health endpoint on free
// loopback ports.
func withEndpoints(t *testing.T, opts Options) Options {
	t.Helper()
	opts.Metrics = scrape.Options{BindAddress: freeAddr(t)}
	opts.HealthProbeBindAddress = freeAddr(t)
	return opts
}

// checkEndpoints checks that the instance's health endpoint answers ok and
// its metrics endpoint serves controller-runtime's metrics.
func (in *instance) checkEndpoints(t *testing.T) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + in.opts.HealthProbeBindAddress + path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s", path, resp.Status)
		}
	}
	s, err := scrapeURL("http://" + in.opts.Metrics.BindAddress + "/metrics")
	if err != nil {
		t.Errorf("metrics: %v", err)
	} else if len(s) == 0 {
		t.Errorf("metrics: no families")
	}
}

// electionOptions are leader election timings short enough for tests (on
// the Lease deploy/rbac grants).
func electionOptions() Options {
	return Options{
		LeaderElect:   true,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
	}
}

func TestLeaderElection(t *testing.T) {
	f := newFixture(t, "leader")
	nodes := f.nodes(3)
	a := startInstance(t, f.c, "knmstate-controller-a", withEndpoints(t, electionOptions()))
	b := startInstance(t, f.c, "knmstate-controller-b", withEndpoints(t, electionOptions()))
	var leader, follower *instance
	eventually(t, "a leader", func() (bool, string) {
		switch ea, eb := a.elected(), b.elected(); {
		case ea && eb:
			t.Fatal("both instances are leaders")
		case ea:
			leader, follower = a, b
		case eb:
			leader, follower = b, a
		}
		return leader != nil, "none elected"
	})

	p := f.rollOut(nodes, "p")
	if follower.elected() {
		t.Fatal("both instances are leaders")
	}
	if diff := cmp.Diff(map[string]bool{leader.agent: true}, f.statusManagers(p)); diff != "" {
		t.Errorf("status of %s written by (-want +got):\n%s", p, diff)
	}
	if diff := cmp.Diff(map[string]bool{leader.agent: true}, f.annotationManagers(p)); diff != "" {
		t.Errorf("permits of %s written by (-want +got):\n%s", p, diff)
	}
	if w := follower.apiWrites(); len(w) != 0 {
		t.Errorf("the follower wrote %v", w)
	}
	// Only the leader serves kubernetes-nmstate's gauges: a follower's
	// series would double every sum.
	eventually(t, "the leader serves the gauges", func() (bool, string) {
		n := gaugeFamilies(t, leader.gauges)
		// Policies and enactments; no node network state has a state.
		return n == 2, fmt.Sprintf("%d gauge families", n)
	})
	if n := gaugeFamilies(t, follower.gauges); n != 0 {
		t.Errorf("the follower serves %d gauge families, want none", n)
	}
	// It is up all the same: its probes and scrapes answer.
	follower.checkEndpoints(t)

	// The leader steps down (releasing the Lease); the other one takes over
	// and carries on with a new policy.
	if err := leader.stop(); err != nil {
		t.Errorf("%s: Run: %v", leader.agent, err)
	}
	eventually(t, "the follower takes over", func() (bool, string) {
		return follower.elected(), "not elected"
	})
	eventually(t, "the new leader serves the gauges", func() (bool, string) {
		n := gaugeFamilies(t, follower.gauges)
		return n == 2, fmt.Sprintf("%d gauge families", n)
	})
	if n := gaugeFamilies(t, leader.gauges); n != 0 {
		t.Errorf("the stopped leader still serves %d gauge families", n)
	}
	q := f.rollOut(nodes, "q")
	if diff := cmp.Diff(map[string]bool{follower.agent: true}, f.statusManagers(q)); diff != "" {
		t.Errorf("status of %s written by (-want +got):\n%s", q, diff)
	}
	if diff := cmp.Diff(map[string]bool{follower.agent: true}, f.annotationManagers(q)); diff != "" {
		t.Errorf("permits of %s written by (-want +got):\n%s", q, diff)
	}
}

// TestLeaderCampaignsAgain loses the leader's Lease while it works and
// checks that Run carries on: the term stops (and with it every write),
// the replica takes the Lease again in the same process, and the new term
// rolls out a new policy.
func TestLeaderCampaignsAgain(t *testing.T) {
	const id = "knmstate-controller" // deploy/rbac's
	for _, tc := range []struct {
		name string
		// cluster returns the control plane the case may disturb.
		cluster func(t *testing.T) *cluster
		// lose makes the leader's renewals fail; regain lets them work.
		lose, regain func(t *testing.T, c *cluster)
	}{{
		// Longer than the renew deadline: the API server is gone for as
		// long as the term takes to notice and stop.
		name:    "api server outage",
		cluster: func(t *testing.T) *cluster { return ownCluster(t, testenv.Options{}) },
		lose: func(t *testing.T, c *cluster) {
			if _, err := c.env.Kill(testenv.APIServer); err != nil {
				t.Fatal(err)
			}
		},
		regain: func(t *testing.T, c *cluster) {
			if err := c.env.Restart(t.Context(), testenv.APIServer); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		// The API server answers all along: only the Lease says stop.
		name:    "lease taken over",
		cluster: getCluster,
		lose: func(t *testing.T, c *cluster) {
			setLeaseHolder(t, c, id, "someone-else", 3600)
		},
		regain: func(t *testing.T, c *cluster) {
			setLeaseHolder(t, c, id, "", 1)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cluster(t)
			f := newFixtureOn(t, c, "again")
			nodes := f.nodes(2)
			in := startInstance(t, c, "knmstate-controller-again", electionOptions())
			eventually(t, "term 1", func() (bool, string) {
				current, _ := in.terms()
				return current == 1, fmt.Sprintf("term %d", current)
			})
			p := f.rollOut(nodes, "p")

			tc.lose(t, c)
			eventually(t, "term 1 ends", func() (bool, string) {
				if !in.running() {
					t.Fatalf("Run returned: %v", in.err)
				}
				current, _ := in.terms()
				return current == 0, fmt.Sprintf("term %d", current)
			})
			tc.regain(t, c)
			eventually(t, "term 2", func() (bool, string) {
				if !in.running() {
					t.Fatalf("Run returned: %v", in.err)
				}
				current, started := in.terms()
				return current != 0, fmt.Sprintf("term %d, %d started", current, started)
			})
			q := f.rollOut(nodes, "q")
			if !in.running() {
				t.Fatalf("Run returned: %v", in.err)
			}
			for _, name := range []string{p, q} {
				if diff := cmp.Diff(map[string]bool{in.agent: true}, f.statusManagers(name)); diff != "" {
					t.Errorf("status of %s written by (-want +got):\n%s", name, diff)
				}
			}
			// Nothing between the terms: the first had stopped writing
			// before the second took the Lease.
			in.mu.Lock()
			ended, started := maps.Clone(in.endWrites[1]), maps.Clone(in.startWrites[2])
			in.mu.Unlock()
			if diff := cmp.Diff(ended, started); diff != "" {
				t.Errorf("writes between the end of term 1 and the start of term 2 (-end +start):\n%s", diff)
			}
			if n := in.logs.count("lost the leader lease; campaigning again"); n == 0 {
				t.Errorf("the lost Lease is not logged")
			}
		})
	}
}

// setLeaseHolder writes the controller's Lease id as another holder (or
// none) would: holder, valid for seconds from now.
func setLeaseHolder(t *testing.T, c *cluster, id, holder string, seconds int32) {
	t.Helper()
	// The leader renews it every retry period meanwhile.
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		l := &coordinationv1.Lease{}
		if err := c.admin.Get(t.Context(), client.ObjectKey{Namespace: "nmstate", Name: id}, l); err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity = nil
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		l.Spec.LeaseDurationSeconds = ptr.To(seconds)
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		return c.admin.Update(t.Context(), l)
	})
	if err != nil {
		t.Fatalf("lease %s: %v", id, err)
	}
}

// TestRunWaitsForTheAPI starts the controller before the API server can
// serve it and checks that Run keeps trying, says why, and starts working
// once it can.
func TestRunWaitsForTheAPI(t *testing.T) {
	for _, tc := range []struct {
		name string
		// opts start the case's own control plane.
		opts testenv.Options
		// breakAPI runs before the controller starts, fix after it has
		// retried.
		breakAPI, fix func(t *testing.T, c *cluster)
		// why is part of the reason logged while it waits.
		why string
	}{{
		name: "api server down",
		breakAPI: func(t *testing.T, c *cluster) {
			if _, err := c.env.Kill(testenv.APIServer); err != nil {
				t.Fatal(err)
			}
		},
		fix: func(t *testing.T, c *cluster) {
			if err := c.env.Restart(t.Context(), testenv.APIServer); err != nil {
				t.Fatal(err)
			}
		},
		why: "connection refused",
	}, {
		name:     "crds not served",
		opts:     testenv.Options{SkipInstall: true},
		breakAPI: func(*testing.T, *cluster) {},
		fix: func(t *testing.T, c *cluster) {
			if err := c.env.Install(t.Context()); err != nil {
				t.Fatal(err)
			}
		},
		why: "nmstate.io",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := ownCluster(t, tc.opts)
			tc.breakAPI(t, c)
			in := startInstance(t, c, "knmstate-controller-waits", withEndpoints(t, electionOptions()))
			// Twice: it retries, rather than waiting in one attempt.
			const waiting = "waiting for the API server to serve the controller's resources"
			eventually(t, "retries", func() (bool, string) {
				if !in.running() {
					t.Fatalf("Run returned: %v", in.err)
				}
				n := in.logs.count(waiting, tc.why)
				return n >= 2, fmt.Sprintf("%d attempts logged with %q", n, tc.why)
			})
			if _, started := in.terms(); started != 0 {
				t.Fatalf("%d terms started without the API", started)
			}
			in.checkEndpoints(t)
			tc.fix(t, c)
			eventually(t, "term 1", func() (bool, string) {
				if !in.running() {
					t.Fatalf("Run returned: %v", in.err)
				}
				current, _ := in.terms()
				return current == 1, fmt.Sprintf("term %d", current)
			})
			f := newFixtureOn(t, c, "waits")
			p := f.rollOut(f.nodes(2), "p")
			if diff := cmp.Diff(map[string]bool{in.agent: true}, f.statusManagers(p)); diff != "" {
				t.Errorf("status of %s written by (-want +got):\n%s", p, diff)
			}
		})
	}
}
