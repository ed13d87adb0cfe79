//go:build kubelet

package faults

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/knmstate/knmstate/api/shared"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// The watcher's sources. Applies come from the handlers' own log lines,
// written by the handler around each transaction, read from the
// kubelet's container log files on the node's disk: they outlive a killed
// container and an unreachable API server, and the watcher reads them
// every logPoll, faster than the kubelet collects a dead container's log.
// Enactments and policies come from informers, which list again after an
// API outage.
const logPoll = 200 * time.Millisecond

var (
	nnceGVR = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: "nodenetworkconfigurationenactments"}
	nncpGVR = schema.GroupVersionResource{Group: "nmstate.io", Version: "v1", Resource: "nodenetworkconfigurationpolicies"}
)

// The handler's log messages the watcher follows (internal/handler).
const (
	msgApplying    = "applying"
	msgApplied     = "applied"
	msgApplyFailed = "apply failed"
	msgPause       = "pausing before the probes (knmstate.io/test-pause-before-probes)"
	msgRecovered   = "rolled back pending checkpoint"
	msgRecovered2  = "rolled back a pending checkpoint before applying"
	msgStarted     = "handler started"
)

// logEvent is one line of a handler's log the watcher follows.
type logEvent struct {
	at     time.Time
	node   string
	msg    string
	policy string
	gen    int64
	// text is the whole log line (the error of an apply that failed).
	text string
	// file is the container log it came from (a new one per restart).
	file string
}

// watcher records, for one case, every apply on every node and every
// enactment and policy change.
type watcher struct {
	s      *fixture
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	events []logEvent
	// offsets and rests: how far each log file is read; a line's start
	// still waiting for its end.
	offsets map[string]int64
	rests   map[string][]byte
	// lastApplying is each node's policy of its last "applying" line: the
	// pause line of its transaction names no policy.
	lastApplying map[string]logEvent
	// phases: each enactment's phase; maxApplying: per policy, the most
	// enactments applying at once after any write; history: each
	// enactment's phases and messages in order; policyChanges and
	// enactmentChanges count the writes seen.
	phases           map[string]map[string]string
	maxApplying      map[string]int
	history          map[string][]string
	policyHistory    map[string][]string
	policyChanges    int
	enactmentChanges int
}

// watch starts the watcher; stop ends it (the case's cleanup).
func (s *fixture) watch(ctx context.Context) (*watcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{s: s, cancel: cancel, offsets: map[string]int64{}, rests: map[string][]byte{},
		lastApplying: map[string]logEvent{}, phases: map[string]map[string]string{},
		maxApplying: map[string]int{}, history: map[string][]string{}, policyHistory: map[string][]string{}}
	// Log lines of earlier cases are not this case's: start at the end.
	w.readLogs(true)
	f := dynamicinformer.NewDynamicSharedInformerFactory(s.dyn, 0)
	if _, err := f.ForResource(nnceGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.enactment(o, false) },
		UpdateFunc: func(_, o any) { w.enactment(o, false) },
		DeleteFunc: func(o any) { w.enactment(o, true) },
	}); err != nil {
		cancel()
		return nil, err
	}
	if _, err := f.ForResource(nncpGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.policy,
		UpdateFunc: func(_, o any) { w.policy(o) },
	}); err != nil {
		cancel()
		return nil, err
	}
	f.Start(ctx.Done())
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("watcher: %s did not sync", gvr.Resource)
		}
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(logPoll):
			}
			w.readLogs(false)
		}
	}()
	w.wg.Add(1)
	go func() { defer w.wg.Done(); <-ctx.Done(); f.Shutdown() }()
	return w, nil
}

func (w *watcher) stop() {
	w.cancel()
	w.wg.Wait()
	w.readLogs(false)
}

func (w *watcher) enactment(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	e := &enactment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, e); err != nil {
		return
	}
	pol := e.Labels[shared.EnactmentPolicyLabel]
	ph := phase(e, e.Status.PolicyGeneration)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.enactmentChanges++
	m := w.phases[pol]
	if m == nil {
		m = map[string]string{}
		w.phases[pol] = m
	}
	if deleted {
		delete(m, e.Name)
		return
	}
	m[e.Name] = ph
	n := 0
	for _, p := range m {
		if applying(p) {
			n++
		}
	}
	w.maxApplying[pol] = max(w.maxApplying[pol], n)
	line := ph
	for _, c := range e.Status.Conditions {
		if c.Status == "True" && c.Message != "" {
			line += " " + string(c.Type) + ": " + c.Message
		}
	}
	if h := w.history[e.Name]; len(h) == 0 || h[len(h)-1] != line {
		w.history[e.Name] = append(h, line)
	}
}

func (w *watcher) policy(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	p := &policy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return
	}
	var conds []string
	for _, c := range p.Status.Conditions {
		if c.Status == "True" {
			conds = append(conds, string(c.Type))
		}
	}
	line := strings.Join(conds, ",")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.policyChanges++
	if h := w.policyHistory[p.Name]; len(h) == 0 || h[len(h)-1] != line {
		w.policyHistory[p.Name] = append(h, line)
	}
}

// readLogs reads what the handlers' container logs gained; skip only
// moves the offsets to the ends.
func (w *watcher) readLogs(skip bool) {
	files, _ := filepath.Glob(filepath.Join(w.s.dir, "nodes", "*", "var", "log", "pods", "nmstate_knmstate-handler-*", "handler", "*.log"))
	for _, f := range files {
		node := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(f)))))))
		w.mu.Lock()
		off := w.offsets[f]
		w.mu.Unlock()
		fh, err := os.Open(f)
		if err != nil {
			continue // collected meanwhile: read before, or empty
		}
		st, err := fh.Stat()
		if err != nil || st.Size() <= off {
			fh.Close()
			continue
		}
		buf := make([]byte, st.Size()-off)
		n, _ := fh.ReadAt(buf, off)
		fh.Close()
		buf = buf[:n]
		w.mu.Lock()
		w.offsets[f] = off + int64(n)
		if skip {
			w.mu.Unlock()
			continue
		}
		data := append(w.rests[f], buf...)
		end := bytes.LastIndexByte(data, '\n')
		w.rests[f] = append([]byte(nil), data[end+1:]...)
		sc := bufio.NewScanner(bytes.NewReader(data[:end+1]))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if ev, ok := parseLine(sc.Text()); ok {
				ev.node, ev.file = node, f
				w.add(ev)
			}
		}
		w.mu.Unlock()
	}
}

// add records one event; w.mu is held.
func (w *watcher) add(ev logEvent) {
	switch ev.msg {
	case msgApplying:
		w.lastApplying[ev.node] = ev
	case msgPause:
		last := w.lastApplying[ev.node]
		ev.policy, ev.gen = last.policy, last.gen
	}
	w.events = append(w.events, ev)
}

var (
	msgRe    = regexp.MustCompile(`\bmsg=("(?:[^"\\]|\\.)*"|\S+)`)
	policyRe = regexp.MustCompile(`\bpolicy=("(?:[^"\\]|\\.)*"|\S+)`)
	genRe    = regexp.MustCompile(`\bgeneration=(\d+)`)
)

// parseLine reads one CRI log line ("TIME STREAM F|P TEXT") of the
// handler's slog text output; only the messages the watcher follows.
func parseLine(l string) (logEvent, bool) {
	f := strings.SplitN(l, " ", 4)
	if len(f) < 4 {
		return logEvent{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, f[0])
	if err != nil {
		return logEvent{}, false
	}
	m := msgRe.FindStringSubmatch(f[3])
	if m == nil {
		return logEvent{}, false
	}
	msg := unquote(m[1])
	switch msg {
	case msgApplying, msgApplied, msgApplyFailed, msgPause, msgRecovered, msgRecovered2, msgStarted:
	default:
		return logEvent{}, false
	}
	ev := logEvent{at: at, msg: msg, text: f[3]}
	if p := policyRe.FindStringSubmatch(f[3]); p != nil {
		ev.policy = unquote(p[1])
	}
	if g := genRe.FindStringSubmatch(f[3]); g != nil {
		ev.gen, _ = strconv.ParseInt(g[1], 10, 64)
	}
	return ev, true
}

func unquote(v string) string {
	if u, err := strconv.Unquote(v); err == nil {
		return u
	}
	return v
}

// waitEvent waits until the logs show an event match accepts, and
// returns it.
func (w *watcher) waitEvent(ctx context.Context, timeout time.Duration, what string, match func(logEvent) bool) (logEvent, error) {
	seen := 0
	var found logEvent
	err := suite.Until(ctx, timeout, 50*time.Millisecond, func() error {
		w.mu.Lock()
		evs := w.events[seen:]
		seen = len(w.events)
		w.mu.Unlock()
		for _, ev := range evs {
			if match(ev) {
				found = ev
				return nil
			}
		}
		return fmt.Errorf("no %s in the handlers' logs", what)
	})
	return found, err
}

// applyCounts are, per node, policy and generation, the applies the logs
// show: started, committed ("applied") and started again after a commit
// (duplicates).
type applyCount struct{ started, committed, afterCommit int }

func (w *watcher) applyCounts() map[string]*applyCount {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]*applyCount{}
	for _, ev := range w.events {
		if ev.policy == "" {
			continue
		}
		k := fmt.Sprintf("%s/%s/%d", ev.node, ev.policy, ev.gen)
		c := out[k]
		if c == nil {
			c = &applyCount{}
			out[k] = c
		}
		switch ev.msg {
		case msgApplying:
			c.started++
			if c.committed > 0 {
				c.afterCommit++
			}
		case msgApplied:
			c.committed++
		}
	}
	return out
}

// caughtUp is nil once the watcher has seen the end of the policies'
// rollouts as the API server shows it now: each enactment in its phase
// (the informers have the last status writes) and, for each Available
// one, its handler's commit of that generation (the logs have the line
// the handler wrote before that status). Writes and lines before those
// are delivered first, so the watcher has all of them too.
func (w *watcher) caughtUp(ctx context.Context, policies ...string) error {
	all, err := w.s.enactments(ctx)
	if err != nil {
		return err
	}
	counts := w.applyCounts()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, name := range policies {
		for i := range all[name] {
			e := &all[name][i]
			ph := phase(e, e.Status.PolicyGeneration)
			if got := w.phases[name][e.Name]; got != ph {
				return fmt.Errorf("%s is %s, the watcher has %q", e.Name, ph, got)
			}
			k := fmt.Sprintf("%s/%s/%d", e.Labels[shared.EnactmentNodeLabel], name, e.Status.PolicyGeneration)
			if ph == "Available" && (counts[k] == nil || counts[k].committed == 0) {
				return fmt.Errorf("%s is Available, the watcher has no commit of %s in the logs", e.Name, k)
			}
		}
		if n, m := len(all[name]), len(w.phases[name]); n != m {
			return fmt.Errorf("policy %s has %d enactments, the watcher %d", name, n, m)
		}
	}
	return nil
}

// count is how many events match.
func (w *watcher) count(match func(logEvent) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ev := range w.events {
		if match(ev) {
			n++
		}
	}
	return n
}
