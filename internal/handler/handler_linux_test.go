package handler

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/testbed/nstest"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
	"github.com/knmstate/knmstate/internal/version"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// env is the control plane all tests of this package share; each test uses
// its own node name.
var env *testenv.Env

func TestMain(m *testing.M) {
	// controller-runtime's global logger: its cache logs through it, and
	// it complains on stderr when never set. Handlers log through
	// Options.Log.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(testenv.RunMain(m, &env))
}

// adminClient is a client with the node and nmstate types.
func adminClient(t *testing.T) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := nmstatev1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// node is one test node: a Node object, a namespace with a resolv.conf,
// and (after start) a running handler.
type node struct {
	name    string
	ns      *nstest.NS
	resolv  string
	c       client.WithWatch
	nodeUID types.UID
}

// newNode creates the Node object and the namespace; both are removed with
// the test (the NodeNetworkState too: no garbage collector runs here).
func newNode(t *testing.T, name string) *node {
	t.Helper()
	c := adminClient(t)
	n := &node{name: name, c: c}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, obj := range []client.Object{
			&nmstatev1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: name}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
		} {
			if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: deleting %T %s: %v", obj, name, err)
			}
		}
	})
	n.ns = nstest.New(t)
	n.resolv = filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(n.resolv, []byte("search lab.example\nnameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	n.nodeUID = obj.UID
	return n
}

// start runs the handler until the test ends; a handler error fails the
// test.
func (n *node) start(t *testing.T, tweak func(*Options)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		begin := time.Now()
		if err := <-done; err != nil {
			t.Errorf("handler %s: %v", n.name, err)
		}
		t.Logf("handler %s stopped in %v", n.name, time.Since(begin).Round(time.Millisecond))
	})
	opts := Options{
		Node:       n.name,
		Config:     env.Config,
		NetNS:      n.ns.Path,
		ResolvConf: n.resolv,
		Log:        testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
	}
	if tweak != nil {
		tweak(&opts)
	}
	go func() { done <- Run(ctx, opts) }()
}

// veth creates a veth pair inside the node's namespace.
func (n *node) veth(t *testing.T, name, peer string) {
	t.Helper()
	if err := n.ns.Netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}); err != nil {
		t.Fatalf("creating veth %s/%s: %v", name, peer, err)
	}
}

// get reads the NodeNetworkState; nil if it does not exist.
func (n *node) get(t *testing.T) *nmstatev1beta1.NodeNetworkState {
	t.Helper()
	var obj nmstatev1beta1.NodeNetworkState
	err := n.c.Get(context.Background(), types.NamespacedName{Name: n.name}, &obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading node network state %s: %v", n.name, err)
	}
	return &obj
}

// watchNNS watches the node's NodeNetworkState from resourceVersion rv
// ("" = from the API server's cached state, starting with the current
// object if any). Not a watch "from now": the test control plane's etcd
// sends no progress notifications, so the API server cannot tell that its
// cache of a resource nobody wrote to lately is current, and such a watch
// times out after 3 s.
func (n *node) watchNNS(t *testing.T, rv string) watch.Interface {
	t.Helper()
	if rv == "" {
		rv = "0"
	}
	opts := []client.ListOption{
		client.MatchingFields{"metadata.name": n.name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}},
	}
	w, err := n.c.Watch(context.Background(), &nmstatev1beta1.NodeNetworkStateList{}, opts...)
	if err != nil {
		t.Fatalf("watching node network state %s: %v", n.name, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// hangGuard bounds waits in these tests: reaching it is a failure (the
// thing never happened), not a latency measurement.
const hangGuard = 60 * time.Second

// waitFor returns the first object from w for which ok holds.
func waitFor(t *testing.T, w watch.Interface, what string, ok func(*nmstatev1beta1.NodeNetworkState) bool) *nmstatev1beta1.NodeNetworkState {
	t.Helper()
	timeout := time.After(hangGuard)
	for {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				t.Fatalf("%s: watch closed", what)
			}
			if ev.Type == watch.Error {
				t.Fatalf("%s: watch error: %v", what, apierrors.FromObject(ev.Object))
			}
			obj, isNNS := ev.Object.(*nmstatev1beta1.NodeNetworkState)
			if !isNNS || ev.Type == watch.Deleted {
				continue
			}
			if ok(obj) {
				return obj
			}
		case <-timeout:
			t.Fatalf("%s: not seen within %v", what, hangGuard)
		}
	}
}

// decodeState decodes the reported state.
func decodeState(t *testing.T, obj *nmstatev1beta1.NodeNetworkState) *nmstate.State {
	t.Helper()
	st, err := nmstate.Decode(obj.Status.CurrentState.Raw)
	if err != nil {
		t.Fatalf("decoding currentState of %s: %v", obj.Name, err)
	}
	return st
}

func ifaceNames(st *nmstate.State) []string {
	var out []string
	for _, i := range st.Interfaces {
		out = append(out, i.Name)
	}
	return out
}

func hasIface(name string) func(*nmstatev1beta1.NodeNetworkState) bool {
	return func(obj *nmstatev1beta1.NodeNetworkState) bool {
		st, err := nmstate.Decode(obj.Status.CurrentState.Raw)
		return err == nil && slices.Contains(ifaceNames(st), name)
	}
}

func hasStatus(obj *nmstatev1beta1.NodeNetworkState) bool { return !obj.Status.CurrentState.IsZero() }

func TestNNSCreatedWithOwnerAndState(t *testing.T) {
	n := newNode(t, "nns-create")
	// A node NIC (veth to a "switch" namespace), a managed veth pair, and a
	// pod veth (peer in a "pod" namespace) that must not be reported.
	sw, pod := nstest.New(t), nstest.New(t)
	nstest.Veth(t, n.ns, "eth0", sw, "sw-eth0")
	n.ns.AddrAdd(t, "eth0", "192.0.2.10/24")
	n.veth(t, "veth-a", "veth-b")
	nstest.Veth(t, n.ns, "veth1a2b3c", pod, "eth0")
	podLink, err := n.ns.Netlink.LinkByName("veth1a2b3c")
	if err != nil {
		t.Fatal(err)
	}
	_, podNet, _ := net.ParseCIDR("10.244.0.5/32")
	if err := n.ns.Netlink.RouteAdd(&netlink.Route{LinkIndex: podLink.Attrs().Index, Dst: podNet, Scope: netlink.SCOPE_LINK}); err != nil {
		t.Fatalf("adding the pod route: %v", err)
	}
	nic, err := n.ns.Netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	_, dst, _ := net.ParseCIDR("198.51.100.0/24")
	if err := n.ns.Netlink.RouteAdd(&netlink.Route{LinkIndex: nic.Attrs().Index, Dst: dst, Gw: net.ParseIP("192.0.2.1")}); err != nil {
		t.Fatalf("adding a route via eth0: %v", err)
	}
	w := n.watchNNS(t, "")
	// API connections dialed explicitly from this process's namespace,
	// where the test API server listens.
	n.start(t, func(o *Options) {
		o.DialNetNS = "/proc/self/ns/net"
		o.Labels = map[string]string{shared.ComponentLabel: "kubernetes-nmstate-handler"}
	})
	obj := waitFor(t, w, "node network state with status", hasStatus)

	wantOwner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.name, UID: n.nodeUID}}
	if diff := cmp.Diff(wantOwner, obj.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{shared.ComponentLabel: "kubernetes-nmstate-handler"}, obj.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if obj.Status.HandlerNmstateVersion != version.Version {
		t.Errorf("handlerNmstateVersion = %q, want %q", obj.Status.HandlerNmstateVersion, version.Version)
	}
	if obj.Status.HostNetworkManagerVersion != NoNetworkManager {
		t.Errorf("hostNetworkManagerVersion = %q, want %q", obj.Status.HostNetworkManagerVersion, NoNetworkManager)
	}
	if obj.Status.LastSuccessfulUpdateTime.IsZero() {
		t.Error("lastSuccessfulUpdateTime not set")
	}
	st := decodeState(t, obj)
	got := ifaceNames(st)
	sort.Strings(got)
	if diff := cmp.Diff([]string{"eth0", "lo", "veth-a", "veth-b"}, got); diff != "" {
		t.Errorf("reported interfaces (-want +got):\n%s", diff)
	}
	if st.DNSResolver == nil || st.DNSResolver.Running == nil || len(st.DNSResolver.Running.Server) != 1 || st.DNSResolver.Running.Server[0].String() != "192.0.2.53" {
		t.Errorf("dns-resolver = %+v, want running server 192.0.2.53", st.DNSResolver)
	}
	var routeIfaces []string
	for _, r := range slices.Concat(st.Routes.Running, st.Routes.Config) {
		if r.NextHopInterface != nil {
			routeIfaces = append(routeIfaces, *r.NextHopInterface)
		}
	}
	if slices.Contains(routeIfaces, "veth1a2b3c") || !slices.Contains(routeIfaces, "eth0") {
		t.Errorf("routes reported via %v, want eth0's and none via the pod veth", routeIfaces)
	}
}

func TestNNSReportsExternalChange(t *testing.T) {
	n := newNode(t, "nns-change")
	w := n.watchNNS(t, "")
	// Verbosity 1 logs each write with its read and write durations, so a
	// slow figure can be told apart (kernel read, API write, watch).
	n.start(t, func(o *Options) { o.Log = testr.NewWithOptions(t, testr.Options{Verbosity: 1, LogTimestamp: true}) })
	waitFor(t, w, "node network state with status", hasStatus)

	// Measured from the moment the kernel has the interface (LinkAdd
	// returned): creating it can itself wait long for the kernel's rtnl
	// lock when other tests tear namespaces down.
	var lat, create []time.Duration
	for i := range 5 {
		name := fmt.Sprintf("ext%d", i)
		begin := time.Now()
		n.veth(t, name, name+"p")
		created := time.Now()
		waitFor(t, w, name+" reported", hasIface(name))
		lat = append(lat, time.Since(created))
		create = append(create, created.Sub(begin))
	}
	// Address changes, and a resolv.conf change, are reported too.
	begin := time.Now()
	n.ns.AddrAdd(t, "lo", "198.51.100.1/32")
	waitFor(t, w, "address reported", func(obj *nmstatev1beta1.NodeNetworkState) bool {
		return strings.Contains(string(obj.Status.CurrentState.Raw), `"198.51.100.1"`)
	})
	addrLat := time.Since(begin)
	begin = time.Now()
	if err := os.WriteFile(n.resolv, []byte("nameserver 192.0.2.99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, "resolv.conf change reported", func(obj *nmstatev1beta1.NodeNetworkState) bool {
		return strings.Contains(string(obj.Status.CurrentState.Raw), `"192.0.2.99"`)
	})
	dnsLat := time.Since(begin)
	slices.Sort(lat)
	slices.Sort(create)
	t.Logf("latency, interface created -> seen in NNS watch (n=%d): min %v, median %v, max %v; address %v; resolv.conf %v (LinkAdd itself took up to %v)",
		len(lat), lat[0].Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond),
		addrLat.Round(time.Millisecond), dnsLat.Round(time.Millisecond), create[len(create)-1].Round(time.Millisecond))
}

// refreshes counts the reporter's finished refreshes by trigger, from the
// line each successful one logs (unchanged or written).
type refreshes struct {
	mu    sync.Mutex
	count map[string]int
	total int
	// more is signalled (1-buffered) after every counted refresh.
	more chan struct{}
}

func (r *refreshes) snapshot() (map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.count), r.total
}

// refreshSink passes every line to the test's sink, which decides what it
// shows, and counts refreshes whatever the verbosity.
type refreshSink struct {
	logr.LogSink
	r *refreshes
	t *testing.T // so the test's log shows the logging line
}

func (s refreshSink) Enabled(int) bool { return true }

func (s refreshSink) Info(level int, msg string, kv ...any) {
	s.t.Helper()
	if msg == "node network state unchanged" || msg == "wrote node network state" {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "trigger" {
				s.r.mu.Lock()
				s.r.count[fmt.Sprint(kv[i+1])]++
				s.r.total++
				s.r.mu.Unlock()
				select {
				case s.r.more <- struct{}{}:
				default:
				}
			}
		}
	}
	if s.LogSink.Enabled(level) {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s refreshSink) WithValues(kv ...any) logr.LogSink {
	return refreshSink{s.LogSink.WithValues(kv...), s.r, s.t}
}

func (s refreshSink) WithName(name string) logr.LogSink {
	return refreshSink{s.LogSink.WithName(name), s.r, s.t}
}

// TestNNSIdleWritesNothing: churn the handler sees but must not report
// (netlink and file events whose filtered state is equal), and full
// re-reads (resync), write nothing. Each round of churn ends when the
// reporter has finished a change-triggered refresh, a resync, and a
// refresh that began after the churn; the window ends with a real change,
// whose write comes after any earlier one in the watch.
func TestNNSIdleWritesNothing(t *testing.T) {
	n := newNode(t, "nns-idle")
	pod := nstest.New(t)
	w := n.watchNNS(t, "")
	counted := &refreshes{count: map[string]int{}, more: make(chan struct{}, 1)}
	n.start(t, func(o *Options) {
		// A short resync: every round covers a full re-read.
		o.Resync = time.Second
		o.Log = logr.New(refreshSink{o.Log.GetSink(), counted, t})
	})
	obj := waitFor(t, w, "node network state with status", hasStatus)
	w.Stop()

	// Count every write from here on.
	counter := n.watchNNS(t, obj.ResourceVersion)
	const rounds = 6
	for round := range rounds {
		// A pod veth appears and, a round later, goes (netlink events, a
		// changed show output that the filter makes equal), and
		// resolv.conf is rewritten with the same content (file events).
		if round%2 == 0 {
			nstest.Veth(t, n.ns, "vethchurn", pod, "eth0")
		} else if l, err := n.ns.Netlink.LinkByName("vethchurn"); err != nil {
			t.Fatal(err)
		} else if err := n.ns.Netlink.LinkDel(l); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(n.resolv)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(n.resolv, data, 0o644); err != nil {
			t.Fatal(err)
		}
		before, total := counted.snapshot()
		timeout := time.After(hangGuard)
		for {
			now, nowTotal := counted.snapshot()
			// Refreshes run one at a time: the second after the churn
			// began after it.
			if now["change"] > before["change"] && now["resync"] > before["resync"] && nowTotal >= total+2 {
				break
			}
			select {
			case <-counted.more:
			case <-timeout:
				t.Fatalf("round %d: refreshes by trigger %v, were %v at the churn: no change refresh and resync within %v", round, now, before, hangGuard)
			}
		}
	}
	counts, _ := counted.snapshot()

	// The handler is still alive: a real change is reported, and every
	// write before it is one too many.
	n.veth(t, "after0", "after1")
	var writes []string
	waitFor(t, counter, "change after the idle rounds", func(o *nmstatev1beta1.NodeNetworkState) bool {
		if hasIface("after0")(o) {
			return true
		}
		writes = append(writes, "rv="+o.ResourceVersion)
		return false
	})
	t.Logf("%d churn rounds, refreshes by trigger %v: %d writes to the node network state", rounds, counts, len(writes))
	if len(writes) != 0 {
		t.Errorf("writes during the idle rounds: %v", writes)
	}
}

func TestNNSRecreatedAfterDelete(t *testing.T) {
	n := newNode(t, "nns-delete")
	w := n.watchNNS(t, "")
	n.start(t, nil)
	first := waitFor(t, w, "node network state with status", hasStatus)
	begin := time.Now()
	if err := n.c.Delete(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	again := waitFor(t, w, "recreated node network state", func(obj *nmstatev1beta1.NodeNetworkState) bool {
		return obj.UID != first.UID && hasStatus(obj)
	})
	t.Logf("recreated with status %v after delete", time.Since(begin).Round(time.Millisecond))
	if len(again.OwnerReferences) != 1 || again.OwnerReferences[0].UID != n.nodeUID {
		t.Errorf("recreated owner references = %+v", again.OwnerReferences)
	}
}

func TestNNSStatusRestoredAfterForeignWrite(t *testing.T) {
	n := newNode(t, "nns-foreign")
	w := n.watchNNS(t, "")
	n.start(t, nil)
	obj := waitFor(t, w, "node network state with status", hasStatus)
	want := string(obj.Status.CurrentState.Raw)
	obj.Status.CurrentState = shared.State{Raw: []byte(`{"interfaces":[]}`)}
	if err := n.c.Status().Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, "status restored", func(o *nmstatev1beta1.NodeNetworkState) bool {
		return o.ResourceVersion != obj.ResourceVersion && string(o.Status.CurrentState.Raw) == want
	})
}

func TestTwoHandlersInOneProcess(t *testing.T) {
	a, b := newNode(t, "nns-two-a"), newNode(t, "nns-two-b")
	a.veth(t, "only-a", "only-a-p")
	b.veth(t, "only-b", "only-b-p")
	wa, wb := a.watchNNS(t, ""), b.watchNNS(t, "")
	a.start(t, nil)
	b.start(t, nil)
	sa := decodeState(t, waitFor(t, wa, "node a state", hasStatus))
	sb := decodeState(t, waitFor(t, wb, "node b state", hasStatus))
	if names := ifaceNames(sa); !slices.Contains(names, "only-a") || slices.Contains(names, "only-b") {
		t.Errorf("node a reports %v", names)
	}
	if names := ifaceNames(sb); !slices.Contains(names, "only-b") || slices.Contains(names, "only-a") {
		t.Errorf("node b reports %v", names)
	}
	// A change in one namespace reaches only that node's state.
	a.veth(t, "later-a", "later-a-p")
	waitFor(t, wa, "change in node a", hasIface("later-a"))
	if names := ifaceNames(decodeState(t, b.get(t))); slices.Contains(names, "later-a") {
		t.Errorf("node b reports node a's interface: %v", names)
	}
}

func TestRunFailsOnMissingNamespace(t *testing.T) {
	err := Run(context.Background(), Options{Node: "nns-missing-ns", Config: env.Config, NetNS: "/run/netns/knmstate-does-not-exist"})
	if err == nil || !strings.Contains(err.Error(), "knmstate-does-not-exist") {
		t.Errorf("Run with a missing namespace: %v, want an error naming it", err)
	}
}
