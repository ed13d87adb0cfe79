package lease

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// client-go's election logs through klog; the tests read the Lease and
	// the order of events, not logs.
	klog.SetLogger(logr.Discard())
	os.Exit(testenv.RunMain(m, &env))
}

const namespace = "default"

// waitLong bounds every wait of these tests: long enough for a loaded
// machine, it only turns a hang into a failure and asserts nothing.
const waitLong = 2 * time.Minute

// trip is the transport of one contender's client: it counts the
// contender's Lease requests and fails them on demand, as a partition or a
// failing API server would.
type trip struct {
	requests   atomic.Int64
	failWrites atomic.Bool // every request but GET
	failAll    atomic.Bool
}

func (tr *trip) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if strings.Contains(r.URL.Path, "/leases") {
			tr.requests.Add(1)
			if tr.failAll.Load() || (tr.failWrites.Load() && r.Method != http.MethodGet) {
				return nil, errors.New("cut off the API server")
			}
		}
		return rt.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// events records what the contenders' work did, in order.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, fmt.Sprintf(format, args...))
}

func (e *events) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.list...)
}

func (e *events) has(s string) bool {
	for _, x := range e.get() {
		if x == s {
			return true
		}
	}
	return false
}

// contender is one candidate for the test's Lease, with a client of its own.
type contender struct {
	id   string
	trip *trip
	c    *Candidate
	// lost counts OnLost calls; holders records OnNewLeader's.
	lost    atomic.Int32
	holders events

	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's result, once done is closed
}

// timings are election timings short enough for tests.
func timings(o Options) Options {
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 3 * time.Second
	}
	o.RenewDeadline, o.RetryPeriod = 2*time.Second, 100*time.Millisecond
	return o
}

func newContender(t *testing.T, lease, id string, o Options) *contender {
	t.Helper()
	k := &contender{id: id, trip: &trip{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(k.trip.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o = timings(o)
	o.Namespace, o.Name, o.Identity = namespace, lease, id
	o.Log = testr.NewWithOptions(t, testr.Options{Verbosity: 1}).WithName(id)
	o.OnLost = func() { k.lost.Add(1) }
	o.OnNewLeader = func(holder string) { k.holders.add("%s", holder) }
	k.c, err = New(cs.CoordinationV1(), o)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// run runs the contender's Run with work until stop or the test's end.
func (k *contender) run(t *testing.T, work Work) { k.start(t, k.c.Run, work) }

// term runs one Term of the contender, as run.
func (k *contender) term(t *testing.T, work Work) {
	k.start(t, func(ctx context.Context, w Work) error { _, err := k.c.Term(ctx, w); return err }, work)
}

func (k *contender) start(t *testing.T, run func(context.Context, Work) error, work Work) {
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel, k.done = cancel, make(chan struct{})
	go func() {
		defer close(k.done)
		k.err = run(ctx, work)
	}()
	t.Cleanup(func() { k.stop() })
}

// stop ends Run and returns its result.
func (k *contender) stop() error {
	k.cancel()
	<-k.done
	return k.err
}

func (k *contender) running() bool {
	select {
	case <-k.done:
		return false
	default:
		return true
	}
}

// waitFor polls cond until it holds; it fails the test after waitLong.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", waitLong, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leasesClient is an admin client of the Leases.
func leasesClient(t *testing.T) kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		panic(err) // only a bad configuration fails here
	}
	return cs
}

// holder reads the Lease's holder ("" for none or no Lease).
func holder(t *testing.T, lease string) string {
	t.Helper()
	h, err := readHolder(t, lease)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// readHolder is holder for goroutines other than the test's.
func readHolder(t *testing.T, lease string) (string, error) {
	l, err := leasesClient(t).CoordinationV1().Leases(namespace).Get(t.Context(), lease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("lease %s: %w", lease, err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
}

// setHolder writes the Lease as another holder (or none) would: holder,
// valid for seconds from now.
func setHolder(t *testing.T, lease, who string, seconds int32) {
	t.Helper()
	leases := leasesClient(t).CoordinationV1().Leases(namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		l, err := leases.Get(t.Context(), lease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity = nil
		if who != "" {
			l.Spec.HolderIdentity = ptr.To(who)
		}
		l.Spec.LeaseDurationSeconds = ptr.To(seconds)
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		_, err = leases.Update(t.Context(), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("lease %s: %v", lease, err)
	}
}

// leaseName is a fresh Lease name of the control plane, which -count
// shares between runs.
func leaseName(prefix string) string { return prefix + "-" + utilrand.String(5) }

var errWork = errors.New("work failed")

// TestWorkStopsBeforeRelease: two contenders for one Lease, the first
// holding it (one Term, so that it does not take the Lease back at once);
// however its term ends, its work has returned before the second one's
// work starts. The first one's work, once its term ended, returns only
// after the second has asked for the Lease a few more times: a Lease given
// up before the work returned would let the second one start meanwhile.
func TestWorkStopsBeforeRelease(t *testing.T) {
	for i, tc := range []struct {
		name string
		// leaseDuration is the contenders' (default 3 s).
		leaseDuration time.Duration
		// end ends the first contender's term; returnErr makes its work
		// return errWork by itself instead of waiting for the term's end.
		end       func(a *contender)
		returnErr bool
		// heal undoes end, once the term has ended.
		heal func(a *contender)
		// wantErr is the first Term's result.
		wantErr error
	}{{
		name: "ctx ended",
		end:  func(a *contender) { a.cancel() },
	}, {
		// The renewals fail for the renew deadline, then the API server
		// answers again: the Lease (valid for an hour) can only change
		// hands by the first contender's release.
		name:          "renewal failed",
		leaseDuration: time.Hour,
		end:           func(a *contender) { a.trip.failWrites.Store(true) },
		heal:          func(a *contender) { a.trip.failWrites.Store(false) },
		wantErr:       ErrLost,
	}, {
		name:      "work failed",
		returnErr: true,
		wantErr:   errWork,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			lease := leaseName(fmt.Sprintf("order-%d", i))
			o := Options{LeaseDuration: tc.leaseDuration}
			a := newContender(t, lease, "a", o)
			b := newContender(t, lease, "b", o)
			var ev events
			var working atomic.Int32
			// begin records that id's work started, and whether it alone
			// works and holds the Lease.
			begin := func(id string) {
				if n := working.Add(1); n != 1 {
					ev.add("%s started with %d working", id, n)
				}
				if h, err := readHolder(t, lease); h != id {
					ev.add("%s started while %q holds the lease (%v)", id, h, err)
				}
				ev.add("%s started", id)
			}
			finish := func(id string) {
				ev.add("%s returned", id)
				working.Add(-1)
			}
			endA := make(chan struct{})
			a.term(t, func(term context.Context) error {
				begin("a")
				if tc.returnErr {
					<-endA
				} else {
					<-term.Done()
				}
				ev.add("a's term ended")
				if tc.heal != nil {
					tc.heal(a)
				}
				// Let b try to take the Lease a few times while a works.
				n := b.trip.requests.Load()
				for b.trip.requests.Load() < n+3 && t.Context().Err() == nil {
					time.Sleep(20 * time.Millisecond)
				}
				finish("a")
				if tc.returnErr {
					return errWork
				}
				return nil
			})
			waitFor(t, "a works", func() bool { return ev.has("a started") })
			b.run(t, func(term context.Context) error {
				begin("b")
				<-term.Done()
				finish("b")
				return nil
			})
			waitFor(t, "b sees a hold the lease", func() bool { return len(b.holders.get()) > 0 })

			if tc.returnErr {
				close(endA)
			} else {
				tc.end(a)
			}
			waitFor(t, "b works", func() bool { return ev.has("b started") })
			want := []string{"a started", "a's term ended", "a returned", "b started"}
			if diff := cmp.Diff(want, ev.get()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"a"}, b.holders.get()); diff != "" {
				t.Errorf("holders b waited for (-want +got):\n%s", diff)
			}
			<-a.done
			if !errors.Is(a.err, tc.wantErr) || (tc.wantErr == nil && a.err != nil) {
				t.Errorf("a's Term: %v, want %v", a.err, tc.wantErr)
			}
		})
	}
}

// TestLostLeaseCampaignsAgain: a contender whose Lease is lost stops its
// work and, once the Lease can be had again, takes it back and works in a
// second term, in the same Run.
func TestLostLeaseCampaignsAgain(t *testing.T) {
	for i, tc := range []struct {
		name string
		// lose makes the renewals fail; regain lets the contender have the
		// Lease again.
		lose, regain func(t *testing.T, a *contender, lease string)
	}{{
		// The API server answers all along: only the Lease says stop.
		name:   "taken over",
		lose:   func(t *testing.T, _ *contender, lease string) { setHolder(t, lease, "someone-else", 3600) },
		regain: func(t *testing.T, _ *contender, lease string) { setHolder(t, lease, "", 1) },
	}, {
		// Neither renewals nor the release get through: the contender takes
		// its own Lease back once they do.
		name:   "api unreachable",
		lose:   func(_ *testing.T, a *contender, _ string) { a.trip.failAll.Store(true) },
		regain: func(_ *testing.T, a *contender, _ string) { a.trip.failAll.Store(false) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			lease := leaseName(fmt.Sprintf("again-%d", i))
			a := newContender(t, lease, "a", Options{})
			var ev events
			var term atomic.Int32
			a.run(t, func(ctx context.Context) error {
				n := term.Add(1)
				ev.add("term %d started", n)
				<-ctx.Done()
				ev.add("term %d returned", n)
				return nil
			})
			waitFor(t, "term 1", func() bool { return ev.has("term 1 started") })
			tc.lose(t, a, lease)
			waitFor(t, "term 1 returned", func() bool { return ev.has("term 1 returned") })
			waitFor(t, "a campaigns again", func() bool { return a.lost.Load() == 1 })
			tc.regain(t, a, lease)
			waitFor(t, "term 2", func() bool { return ev.has("term 2 started") })
			if !a.running() {
				t.Fatalf("Run returned %v", a.err)
			}
			want := []string{"term 1 started", "term 1 returned", "term 2 started"}
			if diff := cmp.Diff(want, ev.get()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if h := holder(t, lease); h != "a" {
				t.Errorf("lease holder %q in term 2, want a", h)
			}
		})
	}
}

// TestWorkNotStopped: work that does not return after its term ended ends
// the term with ErrNotStopped, and the Lease is kept: no one else may take
// it at once while that work may still run.
func TestWorkNotStopped(t *testing.T) {
	lease := leaseName("not-stopped")
	a := newContender(t, lease, "a", Options{LeaseDuration: time.Hour, StopTimeout: 100 * time.Millisecond})
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	started := make(chan struct{})
	a.run(t, func(context.Context) error {
		close(started)
		<-stuck // ignores its term
		return nil
	})
	<-started
	if err := a.stop(); !errors.Is(err, ErrNotStopped) {
		t.Fatalf("Run: %v, want %v", err, ErrNotStopped)
	}
	if h := holder(t, lease); h != "a" {
		t.Errorf("lease holder %q after the work did not stop, want a (kept)", h)
	}
}

// TestTermCtxEndedBeforeTaken: a contender waiting for a held Lease
// returns when ctx ends, without working.
func TestTermCtxEndedBeforeTaken(t *testing.T) {
	lease := leaseName("waiting")
	setLeaseHeld(t, lease, "someone-else")
	b := newContender(t, lease, "b", Options{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		// Cancel once b has seen the holder: it is campaigning.
		for len(b.holders.get()) == 0 && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	worked, err := b.c.Term(ctx, func(context.Context) error { return errors.New("must not run") })
	if worked || err != nil {
		t.Errorf("Term: worked %v, %v; want false, nil", worked, err)
	}
	if h := holder(t, lease); h != "someone-else" {
		t.Errorf("lease holder %q, want someone-else", h)
	}
}

// setLeaseHeld creates the Lease held by who for an hour.
func setLeaseHeld(t *testing.T, lease, who string) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	_, err := leasesClient(t).CoordinationV1().Leases(namespace).Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lease},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(who), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("lease %s: %v", lease, err)
	}
}

func TestNewValidates(t *testing.T) {
	valid := Options{Namespace: "ns", Name: "l", Identity: "me"}
	for _, tc := range []struct {
		name string
		edit func(o *Options)
		// want are parts of the error, none for a valid Options.
		want []string
	}{
		{name: "defaults", edit: func(*Options) {}},
		{name: "no namespace", edit: func(o *Options) { o.Namespace = "" }, want: []string{"namespace: required"}},
		{name: "no name nor identity", edit: func(o *Options) { o.Name, o.Identity = "", "" },
			want: []string{"name: required", "identity: required"}},
		{name: "renew deadline too long", edit: func(o *Options) { o.LeaseDuration, o.RenewDeadline = 10*time.Second, 10*time.Second },
			want: []string{"want leaseDuration 10s > renewDeadline 10s"}},
		{name: "retry period too long", edit: func(o *Options) { o.RenewDeadline, o.RetryPeriod = 2*time.Second, 2*time.Second },
			want: []string{"retryPeriod 2s > 0"}},
		{name: "negative stop timeout", edit: func(o *Options) { o.StopTimeout = -1 }, want: []string{"stopTimeout -1ns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid
			tc.edit(&o)
			_, err := New(nil, o)
			var missing []string
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					missing = append(missing, w)
				}
			}
			if len(missing) > 0 || (len(tc.want) == 0 && err != nil) {
				t.Errorf("New: %v; missing %q", err, missing)
			}
		})
	}
}
