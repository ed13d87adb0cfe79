package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/knmstate/knmstate/internal/rollout"
)

// instance is one controller replica of the leader election test.
type instance struct {
	agent   string
	mgr     manager.Manager
	counter *requestCounter
	cancel  context.CancelFunc
	done    chan error
	// gauges is the instance's own gauge registry.
	gauges *prometheus.Registry
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

func startInstance(t *testing.T, agent string, opts Options) *instance {
	t.Helper()
	cfg, counter := controllerConfig(t, agent)
	mgr, err := NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{agent: agent, mgr: mgr, counter: counter, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- mgr.Start(ctx) }()
	t.Cleanup(in.stop)
	return in
}

func (in *instance) stop() {
	if in.cancel == nil {
		return
	}
	in.cancel()
	<-in.done
	in.cancel = nil
}

func (in *instance) elected() bool {
	select {
	case <-in.mgr.Elected():
		return true
	default:
		return false
	}
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

func TestLeaderElection(t *testing.T) {
	f := newFixture(t, "leader")
	nodes := f.nodes(3)
	opts := Options{
		LeaderElect:   true,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond,
		Rollout: rollout.Config{GCGrace: time.Millisecond},
	}
	// Each replica gets its own gauge registry, as each process has.
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	optsA, optsB := opts, opts
	optsA.gaugeRegistry, optsB.gaugeRegistry = regA, regB
	a := startInstance(t, "knmstate-controller-a", optsA)
	b := startInstance(t, "knmstate-controller-b", optsB)
	a.gauges, b.gauges = regA, regB
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

	rollOut := func(suffix string) string {
		t.Helper()
		one := intstr.FromInt32(1)
		p := f.policy(suffix, &one)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		defer func() { cancel(); wg.Wait() }()
		for _, n := range nodes {
			f.runHandler(ctx, &wg, n, p, func(context.Context, string) string { return "available" })
		}
		f.waitPolicy(p.Name, rollout.Status{Verdict: rollout.Available, Message: "3/3 nodes successfully configured"})
		return p.Name
	}

	p := rollOut("p")
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

	// The leader steps down (releasing the Lease); the other one takes over
	// and carries on with a new policy.
	leader.stop()
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
	q := rollOut("q")
	if diff := cmp.Diff(map[string]bool{follower.agent: true}, f.statusManagers(q)); diff != "" {
		t.Errorf("status of %s written by (-want +got):\n%s", q, diff)
	}
	if diff := cmp.Diff(map[string]bool{follower.agent: true}, f.annotationManagers(q)); diff != "" {
		t.Errorf("permits of %s written by (-want +got):\n%s", q, diff)
	}
}
