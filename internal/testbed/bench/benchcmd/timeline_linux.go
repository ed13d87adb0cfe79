package benchcmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/rollout"
)

// enactmentTimeline watches the enactments of one policy during a rollout
// and records, per enactment, when each step was first seen (watch event
// arrival, relative to start): the condition timestamps have whole
// seconds only, too coarse for a rollout of a few seconds.
type enactmentTimeline struct {
	cancel context.CancelFunc
	done   chan struct{}
	start  time.Time

	mu    sync.Mutex
	steps map[string]map[string]time.Duration // enactment → step → first seen
}

// watchEnactments starts recording the enactments whose names end in
// "."+policy; start is the rollout's time zero.
func watchEnactments(ctx context.Context, dyn dynamic.Interface, policy string, start time.Time) (*enactmentTimeline, error) {
	ctx, cancel := context.WithCancel(ctx)
	events, err := watchAgain(ctx, dyn.Resource(nnceGVR), metav1.ListOptions{LabelSelector: shared.EnactmentPolicyLabel + "=" + policy})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching enactments: %w", err)
	}
	t := &enactmentTimeline{cancel: cancel, done: make(chan struct{}), start: start, steps: map[string]map[string]time.Duration{}}
	go func() {
		defer close(t.done)
		for o := range events {
			t.record(o, time.Since(t.start))
		}
	}()
	return t, nil
}

// watchAgain watches ri and yields the objects of its Added and Modified
// events until ctx ends, then closes the channel. A loaded API server may
// end a watch early: it watches again from the last version seen. The
// first watch is opened before watchAgain returns, so no change after
// the call is missed.
func watchAgain(ctx context.Context, ri dynamic.ResourceInterface, opts metav1.ListOptions) (<-chan *unstructured.Unstructured, error) {
	w, err := ri.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	// Buffered well, so that the connection is read while the consumer is
	// busy: the API server closes watches that are not read.
	out := make(chan *unstructured.Unstructured, 256)
	go func() {
		defer close(out)
		for {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					// Typically the version is too old by now: start
					// from the current objects (repeats are harmless).
					opts.ResourceVersion = ""
					continue
				}
				o, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
					continue
				}
				opts.ResourceVersion = o.GetResourceVersion()
				select {
				case out <- o:
				case <-ctx.Done():
				}
			}
			w.Stop()
			for {
				if ctx.Err() != nil {
					return
				}
				if w, err = ri.Watch(ctx, opts); err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	return out, nil
}

// record notes the steps an enactment shows at time at.
func (t *enactmentTimeline) record(o *unstructured.Unstructured, at time.Duration) {
	seen := []string{stepCreated}
	if _, ok := o.GetAnnotations()[rollout.PermitAnnotation]; ok {
		seen = append(seen, stepPermit)
	}
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] != "True" {
			continue
		}
		switch typ, _ := m["type"].(string); typ {
		case stepPending, stepProgressing, stepAvailable:
			seen = append(seen, typ)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.steps[o.GetName()]
	if s == nil {
		s = map[string]time.Duration{}
		t.steps[o.GetName()] = s
	}
	for _, step := range seen {
		if _, ok := s[step]; !ok {
			s[step] = at
		}
	}
}

// stop ends the watch and returns what it recorded.
func (t *enactmentTimeline) stop() map[string]map[string]time.Duration {
	t.cancel()
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.steps
}

// The steps of an enactment's rollout, in their order.
const (
	stepCreated     = "created"
	stepPending     = "Pending"
	stepPermit      = "permit"
	stepProgressing = "Progressing"
	stepAvailable   = "Available"
)

// summarizeTimeline says when the rollout's steps happened across the
// enactments (the last enactment to reach each step) and how long the
// handlers' own parts took (permit seen → Available: the apply with its
// probes, median and slowest), e.g. "created by 0.31s, Pending by 0.52s,
// permit 0.60-2.10s, Available by 2.40s; permit→Available median 0.80s,
// max 1.20s (node07)".
func summarizeTimeline(steps map[string]map[string]time.Duration) string {
	if len(steps) == 0 {
		return "no enactment seen"
	}
	last := map[string]time.Duration{}
	first := map[string]time.Duration{}
	var applies []time.Duration
	var slowest string
	var slowestD time.Duration
	for name, s := range steps {
		for step, at := range s {
			if at > last[step] {
				last[step] = at
			}
			if f, ok := first[step]; !ok || at < f {
				first[step] = at
			}
		}
		p, okP := s[stepPermit]
		a, okA := s[stepAvailable]
		if okP && okA {
			d := a - p
			applies = append(applies, d)
			if d > slowestD || slowest == "" {
				slowest, slowestD = name, d
			}
		}
	}
	r := func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
	out := fmt.Sprintf("%d enactments: created by %s, Pending by %s, permits %s-%s, Available %s-%s",
		len(steps), r(last[stepCreated]), r(last[stepPending]), r(first[stepPermit]), r(last[stepPermit]),
		r(first[stepAvailable]), r(last[stepAvailable]))
	if len(applies) > 0 {
		out += fmt.Sprintf("; permit→Available median %s, max %s (%s)", r(medianDuration(applies)), r(slowestD), slowest)
	}
	return out
}

// loadAverage is the machine's 1-minute load average as /proc/loadavg
// says it ("?" if unreadable): lab figures on a shared 2-core machine
// move with it, so their notes carry it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
