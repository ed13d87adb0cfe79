package handler

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// audit records the requests a handler sends to the API server that
// change something (every method but GET), through every client it makes
// from its configuration, and can cut the handler off the API server as a
// dead node or a killed pod would be.
type audit struct {
	cut atomic.Bool
	// leaseReads counts the reads of Leases that got through.
	leaseReads atomic.Int64
	mu         sync.Mutex
	writes     []string
}

// wrap is a rest.Config WrapTransport: each client's transport reports here.
func (a *audit) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if a.cut.Load() {
			return nil, errors.New("cut off the API server")
		}
		if r.Method != http.MethodGet {
			a.mu.Lock()
			a.writes = append(a.writes, r.Method+" "+r.URL.Path)
			a.mu.Unlock()
		} else if strings.Contains(r.URL.Path, "/leases/") {
			a.leaseReads.Add(1)
		}
		return rt.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (a *audit) written() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.writes...)
}

// leaseWrites counts the writes of Leases (the lock's holder renews it
// with one every retry period).
func (a *audit) leaseWrites() int {
	n := 0
	for _, w := range a.written() {
		if strings.Contains(w, "/leases") {
			n++
		}
	}
	return n
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// TestNodeLockOneHandlerPerNode: a second handler for a node waits for the
// node's Lease, not Ready and writing nothing, and takes over once the
// first one is gone (here: cut off the API server without releasing the
// Lease, as a killed pod or a lost node would be). The first one, back
// on the API server, waits for the lock in the same process, and takes it
// when the second one stops, only once the second one has stopped
// working.
func TestNodeLockOneHandlerPerNode(t *testing.T) {
	const lease, retry = 3 * time.Second, 400 * time.Millisecond
	// within bounds every wait: it turns a hang into a failure and says
	// nothing about how long a takeover takes.
	const within = time.Minute
	c := adminClient(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "knmstate-lock"}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	n := newNode(t, "lock-node")
	dir := t.TempDir()
	type handler struct {
		audit  *audit
		ready  string
		cancel context.CancelFunc
		done   chan struct{}
		err    error // Run's result, once done is closed
	}
	running := func(h *handler) bool {
		select {
		case <-h.done:
			return false
		default:
			return true
		}
	}
	start := func(id string) *handler {
		h := &handler{audit: &audit{}, ready: filepath.Join(dir, id+".ready"), done: make(chan struct{})}
		cfg := rest.CopyConfig(env.Config)
		cfg.Wrap(h.audit.wrap)
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		t.Cleanup(func() { cancel(); <-h.done })
		opts := Options{Node: n.name, Config: cfg, NetNS: n.ns.Path, ResolvConf: n.resolv, ReadyFile: h.ready,
			Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
			Lock: &LockOptions{Namespace: ns.Name, Identity: id, LeaseDuration: lease,
				RenewDeadline: 2 * time.Second, RetryPeriod: retry}}
		go func() {
			defer close(h.done)
			h.err = Run(ctx, opts)
		}()
		return h
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not within %v: %s", within, what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	a := start("handler-a")
	waitUntil("the first handler Ready", func() bool { return exists(a.ready) })

	// The second one may take the Lease only once it has seen no renewal
	// for a lease duration: the window ends when it has read the Lease and
	// the first one has renewed it more times than fit in a lease duration
	// (one every retry period), so a second handler that ignored the
	// renewals would have taken the Lease, writing it, by then.
	renewedBefore := a.audit.leaseWrites()
	b := start("handler-b")
	renewals := int(lease/retry) + 2
	waitUntil("the second handler reading the node lock", func() bool { return b.audit.leaseReads.Load() > 0 })
	waitUntil("the first handler renewing its node lock", func() bool { return a.audit.leaseWrites()-renewedBefore >= renewals })
	reads := b.audit.leaseReads.Load()
	waitUntil("the second handler reading the node lock again", func() bool { return b.audit.leaseReads.Load() > reads })
	if exists(b.ready) {
		t.Fatal("the second handler is Ready while the first one holds the node lock")
	}
	if w := b.audit.written(); len(w) != 0 {
		t.Fatalf("the second handler wrote to the API server while waiting: %v", w)
	}
	t.Logf("second handler over %d renewals of the first one's lock (%d looks at it): not Ready, 0 API writes",
		renewals, b.audit.leaseReads.Load())

	// The first handler's node goes dark: it can neither renew nor release.
	a.audit.cut.Store(true)
	waitUntil("the second handler taking over", func() bool { return exists(b.ready) })
	if len(b.audit.written()) == 0 {
		t.Error("the second handler wrote nothing after taking over")
	}
	// The first handler stops working by itself (it lost the lock: no
	// longer Ready) but not its process: it waits to take the lock again,
	// as a restarted pod would, without the kubelet's back-off.
	waitUntil("the first handler to stop working", func() bool { return !exists(a.ready) })
	if !running(a) {
		t.Fatalf("the first handler exited after losing its node lock (%v), want it waiting for the lock", a.err)
	}

	// Back on the API server, it finds the lock held by the second one.
	a.audit.cut.Store(false)
	reads = a.audit.leaseReads.Load()
	waitUntil("the first handler reading the node lock again", func() bool { return a.audit.leaseReads.Load() > reads+1 })
	if exists(a.ready) {
		t.Fatal("the first handler is Ready while the second one holds the node lock")
	}

	// The second one stops: the first takes the lock over, and only once
	// the second has stopped working. Each look reads a's ready file before
	// b's: a Ready seen first means b's file was gone before it.
	var order []string
	seen := map[string]bool{}
	note := func(event string) {
		if !seen[event] {
			seen[event] = true
			order = append(order, event)
		}
	}
	b.cancel()
	waitUntil("the first handler taking the lock back", func() bool {
		aReady, bReady := exists(a.ready), exists(b.ready)
		if !bReady {
			note("the second handler not Ready")
		}
		if aReady {
			note("the first handler Ready")
		}
		if aReady && bReady {
			note("both Ready")
		}
		return aReady
	})
	if diff := cmp.Diff([]string{"the second handler not Ready", "the first handler Ready"}, order); diff != "" {
		t.Errorf("order of events (-want +got):\n%s", diff)
	}
	<-b.done
	if b.err != nil {
		t.Errorf("the second handler's Run: %v", b.err)
	}
	if !running(a) {
		t.Fatalf("the first handler exited (%v)", a.err)
	}
}
