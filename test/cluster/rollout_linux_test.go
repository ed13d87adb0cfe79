package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// rolloutTracker follows one policy's rollout two ways: a List every 50 ms
// (the acceptance's sampling) and a watch of the enactments, which sees
// every status write, so the number of enactments applying at once is
// known after each of them.
type rolloutTracker struct {
	mu sync.Mutex
	// sampled and watched are the most enactments seen Progressing or
	// Retrying at once.
	sampled, watched int
	samples          int
	// everProgressing are the enactments seen applying at least once.
	everProgressing map[string]bool
	// firstFailing, firstAborted: when an enactment was first seen failing
	// (Retrying or Failed) and aborted; degraded: when the policy was first
	// seen Degraded.
	firstFailing, firstAborted, degraded time.Time
	phases                               map[string]string
}

// caughtUp waits until the tracker's watches have delivered what the test
// read of the rollout's end: each enactment in its phase (es, against
// policy generation g) and, when degraded, the policy Degraded. Writes of
// the rollout after those are its last ones too, and the watch delivers
// them in order, so the tracker has seen every one before.
func (tr *rolloutTracker) caughtUp(t *testing.T, es []enactment, g int64, degraded bool) {
	t.Helper()
	want := map[string]string{}
	for i := range es {
		want[es[i].Name] = phaseOf(&es[i], g)
	}
	suite.EventuallyEvery(t, 30*time.Second, 50*time.Millisecond, "the tracker's watches seeing the rollout's end", func() error {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if diff := cmp.Diff(want, tr.phases); diff != "" {
			return fmt.Errorf("enactment phases (-read +watched):\n%s", diff)
		}
		if degraded && tr.degraded.IsZero() {
			return errors.New("the policy not seen Degraded")
		}
		return nil
	})
}

func trackRollout(t *testing.T, c *cluster, name string) (*rolloutTracker, func()) {
	ctx, cancel := context.WithCancel(t.Context())
	tr := &rolloutTracker{everProgressing: map[string]bool{}, phases: map[string]string{}}
	gen := func() int64 {
		p := &policy{}
		if err := c.c.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
			return 0
		}
		return p.Generation
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // sampling
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			g := gen()
			es, err := c.enactments(ctx, name)
			if err != nil {
				continue
			}
			n := 0
			for i := range es {
				if ph := phaseOf(&es[i], g); ph == phaseProgressing || ph == phaseRetrying {
					n++
				}
			}
			tr.mu.Lock()
			tr.samples++
			tr.sampled = max(tr.sampled, n)
			tr.mu.Unlock()
		}
	}()
	ew := watchFromNow(t, c, nnceGVR, metav1.ListOptions{LabelSelector: shared.EnactmentPolicyLabel + "=" + name})
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-ew.ResultChan():
				if !ok {
					return
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				e := &enactment{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, e); err != nil {
					continue
				}
				g := gen()
				ph := phaseOf(e, g)
				now := time.Now()
				tr.mu.Lock()
				if ev.Type == watch.Deleted {
					delete(tr.phases, e.Name)
				} else {
					tr.phases[e.Name] = ph
				}
				n := 0
				for _, p := range tr.phases {
					if p == phaseProgressing || p == phaseRetrying {
						n++
					}
				}
				tr.watched = max(tr.watched, n)
				if ph == phaseProgressing || ph == phaseRetrying {
					tr.everProgressing[e.Name] = true
				}
				if (ph == phaseRetrying || ph == phaseFailed) && tr.firstFailing.IsZero() {
					tr.firstFailing = now
				}
				if ph == phaseAborted && tr.firstAborted.IsZero() {
					tr.firstAborted = now
				}
				tr.mu.Unlock()
			}
		}
	}()
	pw := watchFromNow(t, c, nncpGVR, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-pw.ResultChan():
				if !ok {
					return
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				p := &policy{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
					continue
				}
				if isTrue(p.Status.Conditions, shared.NodeNetworkConfigurationPolicyConditionDegraded) {
					tr.mu.Lock()
					if tr.degraded.IsZero() {
						tr.degraded = time.Now()
					}
					tr.mu.Unlock()
				}
			}
		}
	}()
	return tr, func() { cancel(); wg.Wait() }
}

// TestMaxUnavailable: on 6 nodes with maxUnavailable 2, never more than 2
// enactments apply at once; with a state that fails on every node, at most
// 2 end Failed and the rest Aborted, and the policy is Degraded from the
// first failure on.
func TestMaxUnavailable(t *testing.T) {
	downShared() // two cores: the 3-node lab idles meanwhile otherwise
	c := newLab(t, "mu", 6)
	var nodes []string
	for _, n := range c.st.Nodes {
		nodes = append(nodes, n.Name)
	}
	two := intstr.FromInt32(2)

	t.Run("Valid", func(t *testing.T) {
		p := policyYAML(t, "max-unavailable", nil, eth2Static("10.253.0.1/24"))
		p.Spec.MaxUnavailable = &two
		tr, stop := trackRollout(t, c, p.Name)
		t0 := time.Now()
		c.create(t, p)
		c.waitPolicy(t, p.Name, shared.NodeNetworkConfigurationPolicyConditionAvailable, 4*time.Minute)
		took := time.Since(t0)
		es := c.waitEnactments(t, p.Name, nodes, 30*time.Second, phaseAvailable)
		tr.caughtUp(t, es, c.getPolicy(t, p.Name).Generation, false)
		stop()
		t.Logf("FIGURE max-unavailable: 6 nodes, maxUnavailable 2: most applying at once: %d by 50 ms sampling (%d samples), %d by watch; rollout %v",
			tr.sampled, tr.samples, tr.watched, took.Round(time.Millisecond))
		if tr.sampled > 2 || tr.watched > 2 {
			t.Errorf("up to %d (sampled) / %d (watched) enactments applying at once, want at most 2", tr.sampled, tr.watched)
		}
		if len(tr.everProgressing) != len(nodes) {
			t.Errorf("the watch saw %d enactments Progressing, want %d (one per node): the tracker missed writes", len(tr.everProgressing), len(nodes))
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		// Valid by the schema, so it renders and asks for permits; fails
		// when applied (no such NIC to bring up).
		p := policyYAML(t, "max-unavailable-invalid", nil, `
interfaces:
- name: eth9
  type: ethernet
  state: up
`)
		p.Spec.MaxUnavailable = &two
		tr, stop := trackRollout(t, c, p.Name)
		c.create(t, p)
		var es []enactment
		suite.EventuallyEvery(t, 4*time.Minute, 200*time.Millisecond, "", suite.Cond(func() bool {
			var err error
			es, err = c.enactments(t.Context(), p.Name)
			if err != nil || len(es) != len(nodes) {
				return false
			}
			g := c.getPolicy(t, p.Name).Generation
			for i := range es {
				if ph := phaseOf(&es[i], g); ph != phaseFailed && ph != phaseAborted {
					return false
				}
			}
			return true
		}, func() string { return "enactments did not all end Failed or Aborted:" + describe(es) }))
		g := c.getPolicy(t, p.Name).Generation
		tr.caughtUp(t, es, g, true)
		stop()
		failed, aborted := 0, 0
		for i := range es {
			switch phaseOf(&es[i], g) {
			case phaseFailed:
				failed++
			case phaseAborted:
				aborted++
			}
		}
		t.Logf("FIGURE max-unavailable-invalid: %d Failed, %d Aborted; most applying at once %d (sampled) %d (watched); first failure -> Degraded %v",
			failed, aborted, tr.sampled, tr.watched, tr.degraded.Sub(tr.firstFailing).Round(time.Millisecond))
		if failed < 1 || failed > 2 || failed+aborted != len(nodes) {
			t.Errorf("%d Failed and %d Aborted of %d, want 1..2 Failed and the rest Aborted:%s", failed, aborted, len(nodes), describe(es))
		}
		if tr.sampled > 2 || tr.watched > 2 {
			t.Errorf("up to %d (sampled) / %d (watched) enactments applying at once, want at most 2", tr.sampled, tr.watched)
		}
		p = c.getPolicy(t, p.Name)
		if !isTrue(p.Status.Conditions, shared.NodeNetworkConfigurationPolicyConditionDegraded) {
			t.Errorf("policy not Degraded at the end: %v", p.Status.Conditions)
		}
		switch {
		case tr.firstFailing.IsZero() || tr.degraded.IsZero():
			t.Errorf("first failure seen at %v, Degraded at %v: want both", tr.firstFailing, tr.degraded)
		case !tr.firstAborted.IsZero() && tr.degraded.After(tr.firstAborted):
			t.Errorf("policy turned Degraded at %v, after the first enactment was already Aborted (%v): not as soon as the first failure (%v)",
				tr.degraded.Format(time.StampMilli), tr.firstAborted.Format(time.StampMilli), tr.firstFailing.Format(time.StampMilli))
		}
	})
}
