package handler

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
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
	cut    atomic.Bool
	mu     sync.Mutex
	writes []string
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

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// TestNodeLockOneHandlerPerNode: a second handler for a node waits for the
// node's Lease, not Ready and writing nothing, and takes over within the
// lease duration once the first one is gone (here: cut off the API server
// without releasing the Lease, as a killed pod or a lost node would be).
func TestNodeLockOneHandlerPerNode(t *testing.T) {
	const lease = 3 * time.Second
	c := adminClient(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "knmstate-lock"}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	n := newNode(t, "lock-node")
	dir := t.TempDir()
	type handler struct {
		audit *audit
		ready string
		done  chan error
	}
	start := func(id string) *handler {
		h := &handler{audit: &audit{}, ready: filepath.Join(dir, id+".ready"), done: make(chan error, 1)}
		cfg := rest.CopyConfig(env.Config)
		cfg.Wrap(h.audit.wrap)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(func() { cancel(); <-h.done })
		opts := Options{Node: n.name, Config: cfg, NetNS: n.ns.Path, ResolvConf: n.resolv, ReadyFile: h.ready,
			Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
			Lock: &LockOptions{Namespace: ns.Name, Identity: id, LeaseDuration: lease,
				RenewDeadline: 2 * time.Second, RetryPeriod: 400 * time.Millisecond}}
		go func() { h.done <- Run(ctx, opts) }()
		return h
	}
	waitUntil := func(what string, within time.Duration, cond func() bool) time.Duration {
		t.Helper()
		begin := time.Now()
		for !cond() {
			if time.Since(begin) > within {
				t.Fatalf("not within %v: %s", within, what)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return time.Since(begin)
	}

	a := start("handler-a")
	waitUntil("the first handler Ready", 30*time.Second, func() bool { return exists(a.ready) })

	b := start("handler-b")
	time.Sleep(3 * lease)
	if exists(b.ready) {
		t.Fatal("the second handler is Ready while the first one holds the node lock")
	}
	if w := b.audit.written(); len(w) != 0 {
		t.Fatalf("the second handler wrote to the API server while waiting: %v", w)
	}
	t.Logf("second handler over %v of waiting: not Ready, 0 API writes", 3*lease)

	// The first handler's node goes dark: it can neither renew nor release.
	a.audit.cut.Store(true)
	took := waitUntil("the second handler taking over", 4*lease, func() bool { return exists(b.ready) })
	t.Logf("takeover after the first handler was cut off: %v (lease %v)", took.Round(100*time.Millisecond), lease)
	if took > lease+2*time.Second {
		t.Errorf("takeover took %v, more than the lease duration %v plus the retry slack", took, lease)
	}
	if len(b.audit.written()) == 0 {
		t.Error("the second handler wrote nothing after taking over")
	}
	// The first handler stops working by itself (it lost the lock: no
	// longer Ready) but not its process: it waits to take the lock again,
	// as a restarted pod would, without the kubelet's back-off.
	waitUntil("the first handler to stop working", 2*lease, func() bool { return !exists(a.ready) })
	select {
	case err := <-a.done:
		t.Errorf("the first handler exited after losing its node lock (%v), want it waiting for the lock", err)
		a.done <- nil // for the cleanup
	default:
	}
}
