package handler

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// polNode is one node for the policy tests: a Node object (Ready), a
// network namespace, a checkpoint directory, and (after start) a running
// policy reconciler playing the handler. The test plays the controller:
// it grants permits and aborts by patching the enactment's annotations.
type polNode struct {
	name     string
	nsPath   string
	stateDir string
	c        client.WithWatch
	backend  *kernel.Backend
	uid      types.UID
	// applies counts apply attempts (the OnApply hook).
	applies atomic.Int32
}

var ctrllogOnce sync.Once

func polClient(t testing.TB) client.WithWatch {
	t.Helper()
	scheme, err := PolicyScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newPolNode(t testing.TB, name, nsPath string, labels map[string]string) *polNode {
	t.Helper()
	return newPolNodeWith(t, name, kernel.Options{NetNS: nsPath}, labels)
}

func newPolNodeWith(t testing.TB, name string, ko kernel.Options, labels map[string]string) *polNode {
	t.Helper()
	nsPath := ko.NetNS
	n := &polNode{name: name, nsPath: nsPath, stateDir: t.TempDir(), c: polClient(t)}
	ctx := context.Background()
	t.Cleanup(func() {
		if err := n.c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting node %s: %v", name, err)
		}
		// No garbage collector runs in the test control plane.
		if err := n.c.DeleteAllOf(ctx, &nmstatev1beta1.NodeNetworkConfigurationEnactment{}, client.MatchingLabels{shared.EnactmentNodeLabel: name}); err != nil {
			t.Errorf("cleanup: deleting enactments of %s: %v", name, err)
		}
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := n.c.Create(ctx, node); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	n.uid = node.UID
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()}}
	if err := n.c.Status().Update(ctx, node); err != nil {
		t.Fatalf("node %s Ready: %v", name, err)
	}
	b, err := kernel.Open(ctx, ko)
	if err != nil {
		t.Fatalf("opening %s: %v", nsPath, err)
	}
	t.Cleanup(func() { b.Close() })
	n.backend = b
	return n
}

// start runs a policy reconciler for the node until stop (or the test's
// end).
func (n *polNode) start(t testing.TB, tweak func(*PolicyOptions)) (stop func()) {
	t.Helper()
	opts := PolicyOptions{
		Node:           n.name,
		Backend:        n.backend,
		NetNS:          n.nsPath,
		StateDir:       n.stateDir,
		NoProbes:       true,
		RetryBackoff:   20 * time.Millisecond,
		VerifyRetries:  3,
		VerifyInterval: 200 * time.Millisecond,
		Log:            testr.NewWithInterface(t, testr.Options{Verbosity: 0}),
		OnApply:        func(string) { n.applies.Add(1) },
	}
	if tweak != nil {
		tweak(&opts)
	}
	// Informers log through controller-runtime's global logger; without
	// one it prints a warning with a stack trace.
	ctrllogOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	r, err := NewPolicyReconciler(opts)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := NewPolicyManager(env.Config, n.name, opts.Log)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager of %s: %v", n.name, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (n *polNode) createPolicy(t testing.TB, name, desired string, selector, capture map[string]string) *nmstatev1.NodeNetworkConfigurationPolicy {
	t.Helper()
	st, err := shared.NewState([]byte(desired))
	if err != nil {
		t.Fatal(err)
	}
	p := &nmstatev1.NodeNetworkConfigurationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       shared.NodeNetworkConfigurationPolicySpec{NodeSelector: selector, Capture: capture, DesiredState: st},
	}
	t.Cleanup(func() {
		if err := n.c.Delete(context.Background(), p); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting policy %s: %v", name, err)
		}
	})
	if err := n.c.Create(context.Background(), p); err != nil {
		t.Fatalf("creating policy %s: %v", name, err)
	}
	return p
}

func (n *polNode) enactment(t testing.TB, policy string) *enactment {
	t.Helper()
	e := &enactment{}
	err := n.c.Get(context.Background(), types.NamespacedName{Name: shared.EnactmentName(n.name, policy)}, e)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get enactment: %v", err)
	}
	return e
}

// waitEnactment polls the enactment until ok holds; reaching hangGuard is
// a failure.
func (n *polNode) waitEnactment(t testing.TB, policy, what string, ok func(*enactment) bool) *enactment {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	var last *enactment
	for time.Now().Before(deadline) {
		if e := n.enactment(t, policy); e != nil {
			last = e
			if ok(e) {
				return e
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("enactment %s: %s not seen within %v; last status: %+v", policy, what, hangGuard, last.Status.Conditions)
	}
	t.Fatalf("enactment %s: %s not seen within %v (no enactment)", policy, what, hangGuard)
	return nil
}

func (n *polNode) annotate(t testing.TB, policy, key string, gen int64) {
	t.Helper()
	e := &enactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentName(n.name, policy)}}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"%d"}}}`, key, gen)
	if err := n.c.Patch(context.Background(), e, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("annotating %s: %v", e.Name, err)
	}
}

func (n *polNode) grant(t testing.TB, policy string, gen int64) {
	n.annotate(t, policy, rollout.PermitAnnotation, gen)
}

// phaseIs is a waitEnactment predicate for generation gen.
func phaseIs(gen int64, want enactmentPhase) func(*enactment) bool {
	return func(e *enactment) bool { return phaseOf(&e.Status, gen) == want }
}

// show reads the node's state.
func (n *polNode) show(t testing.TB) *nmstate.State {
	t.Helper()
	s, err := n.backend.Show(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func hasAddress(s *nmstate.State, iface, addr string) bool {
	want := netip.MustParseAddr(addr)
	for _, i := range s.Find(iface) {
		for _, ip := range []*nmstate.IPConfig{i.IPv4, i.IPv6} {
			if ip == nil {
				continue
			}
			for _, a := range ip.Address {
				if a.IP == want {
					return true
				}
			}
		}
	}
	return false
}

// warningEvents returns the Warning events about policy.
func warningEvents(t testing.TB, c client.Client, policy string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == policy && e.Type == corev1.EventTypeWarning {
			out = append(out, e)
		}
	}
	return out
}

func waitWarning(t testing.TB, c client.Client, policy, reason string) eventsv1.Event {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		for _, e := range warningEvents(t, c, policy) {
			if e.Reason == reason {
				return e
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no Warning event %s about policy %s within %v", reason, policy, hangGuard)
	return eventsv1.Event{}
}

// staticAddr is a policy giving eth1 a static address.
func staticAddr(iface, cidr string) string {
	p := netip.MustParsePrefix(cidr)
	return fmt.Sprintf(`interfaces:
- name: %s
  type: veth
  state: up
  ipv4:
    enabled: true
    dhcp: false
    address:
    - ip: %s
      prefix-length: %d
`, iface, p.Addr(), p.Bits())
}
