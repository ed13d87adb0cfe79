package controller

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/deploy/rbac"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// client-go logs through controller-runtime's global logger; tests
	// read the API, not logs.
	log.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	os.Exit(testenv.RunMain(m, &env))
}

// cluster is a control plane (the shared one, or a test's own) with
// deploy/rbac installed, and clients for the admin and the handler
// identity.
type cluster struct {
	env   *testenv.Env
	admin client.WithWatch
	// handlers are clients acting as the handler of a node: its
	// ServiceAccount with a token bound to a pod on that node (the admin
	// impersonates it, extra information included, as the API server
	// fills it in from a pod-bound token).
	handlers sync.Map // node -> client.Client
	scheme   *runtime.Scheme
}

// handlerOf is the client of node's handler.
func (c *cluster) handlerOf(node string) client.Client {
	if h, ok := c.handlers.Load(node); ok {
		return h.(client.Client)
	}
	cfg := rest.CopyConfig(c.env.Config)
	cfg.UserAgent = "fake-handler"
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: rbac.UserName(rbac.HandlerServiceAccount),
		Groups:   rbac.Groups(),
		Extra:    map[string][]string{"authentication.kubernetes.io/node-name": {node}},
	}
	h, err := client.New(cfg, client.Options{Scheme: c.scheme})
	if err != nil {
		panic(err) // only a bad scheme fails here
	}
	c.handlers.Store(node, h)
	return h
}

var (
	clusterOnce sync.Once
	clusterVal  *cluster
	clusterErr  error
)

func getCluster(t *testing.T) *cluster {
	t.Helper()
	clusterOnce.Do(func() { clusterVal, clusterErr = newCluster(context.Background(), env) })
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}
	return clusterVal
}

// ownCluster starts a control plane of the test's own, for tests that
// stop its API server or start without the CRDs (opts.SkipInstall), and
// stops it when the test ends.
func ownCluster(t *testing.T, opts testenv.Options) *cluster {
	t.Helper()
	e, err := testenv.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	c, err := newCluster(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newCluster(ctx context.Context, e *testenv.Env) (*cluster, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	admin, err := client.NewWithWatch(e.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rbac.Namespace}}
	if err := admin.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	docs, err := rbac.Manifests()
	if err != nil {
		return nil, err
	}
	for _, doc := range docs {
		dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(doc)))
		for {
			raw, err := dec.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("read rbac manifest: %w", err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(raw, &u.Object); err != nil {
				return nil, fmt.Errorf("decode rbac manifest: %w", err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := admin.Create(ctx, u); err != nil {
				return nil, fmt.Errorf("create %s %s: %w", u.GetKind(), u.GetName(), err)
			}
		}
	}
	return &cluster{env: e, admin: admin, scheme: scheme}, nil
}

// requestCounter counts the API requests of one client by verb and
// resource, and the conflicts it got back.
type requestCounter struct {
	mu        sync.Mutex
	counts    map[string]int
	conflicts int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		key := req.Method + " " + resourceOf(req.URL.Path)
		c.mu.Lock()
		c.counts[key]++
		if err == nil && resp.StatusCode == http.StatusConflict {
			c.conflicts++
		}
		c.mu.Unlock()
		return resp, err
	})
}

func (c *requestCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

func (c *requestCounter) writes() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.counts {
		if !strings.HasPrefix(k, "GET ") {
			out[k] = v
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// resourceOf reduces a request path to its resource (and subresource):
// /apis/nmstate.io/v1beta1/nodenetworkconfigurationenactments/x/status →
// nodenetworkconfigurationenactments/status.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path // discovery
	}
	if len(parts) > 1 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return ""
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

// controllerConfig returns a client configuration with the controller's
// ServiceAccount identity (so deploy/rbac is what allows its requests), a
// distinct user agent (its field manager name) and a request counter.
func (c *cluster) controllerConfig(t *testing.T, agent string) (*rest.Config, *requestCounter) {
	t.Helper()
	cfg, err := c.env.UserConfig(rbac.UserName(rbac.ControllerServiceAccount), rbac.Groups()...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = agent
	counter := &requestCounter{counts: map[string]int{}}
	cfg.WrapTransport = counter.wrap
	return cfg, counter
}

// startController runs a controller until the test ends.
func startController(t *testing.T, agent string, opts Options) *requestCounter {
	t.Helper()
	cfg, counter := getCluster(t).controllerConfig(t, agent)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	if opts.Rollout.GCGrace == 0 {
		opts.Rollout.GCGrace = time.Millisecond
	}
	go func() { done <- Run(ctx, cfg, opts) }()
	return counter
}

// fixture creates, for one test, Ready nodes labelled with the test's group
// and their NodeNetworkStates (as handlers would), and removes everything
// the test made when it ends.
type fixture struct {
	t     *testing.T
	c     *cluster
	group string
	ctx   context.Context
}

const groupLabel = "test.knmstate.io/group"

func newFixture(t *testing.T, group string) *fixture {
	t.Helper()
	return newFixtureOn(t, getCluster(t), group)
}

// newFixtureOn is newFixture on cluster c.
func newFixtureOn(t *testing.T, c *cluster, group string) *fixture {
	t.Helper()
	f := &fixture{t: t, c: c, group: group, ctx: t.Context()}
	t.Cleanup(func() {
		ctx := context.Background()
		var policies nmstatev1.NodeNetworkConfigurationPolicyList
		_ = f.c.admin.List(ctx, &policies)
		for _, p := range policies.Items {
			if strings.HasPrefix(p.Name, group+"-") {
				_ = f.c.admin.Delete(ctx, &p)
			}
		}
		// By name: a test may have removed its nodes' group label.
		var nodes corev1.NodeList
		_ = f.c.admin.List(ctx, &nodes)
		for _, n := range nodes.Items {
			if strings.HasPrefix(n.Name, group+"-") {
				_ = f.c.admin.Delete(ctx, &n)
			}
		}
		var states v1beta1.NodeNetworkStateList
		_ = f.c.admin.List(ctx, &states)
		for _, s := range states.Items {
			if strings.HasPrefix(s.Name, group+"-") {
				_ = f.c.admin.Delete(ctx, &s)
			}
		}
		var es v1beta1.NodeNetworkConfigurationEnactmentList
		_ = f.c.admin.List(ctx, &es)
		for _, e := range es.Items {
			if strings.HasPrefix(e.Labels[shared.EnactmentNodeLabel], group+"-") {
				_ = f.c.admin.Delete(ctx, &e)
			}
		}
	})
	return f
}

// nodes creates n Ready nodes <group>-1..n with a NodeNetworkState each.
func (f *fixture) nodes(n int) []string {
	f.t.Helper()
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%d", f.group, i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{groupLabel: f.group}}}
		if err := f.c.admin.Create(f.ctx, node); err != nil {
			f.t.Fatal(err)
		}
		f.setReady(name, true)
		nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}},
		}}
		if err := f.c.handlerOf(name).Create(f.ctx, nns); err != nil {
			f.t.Fatalf("handler creates its node network state: %v", err)
		}
		names = append(names, name)
	}
	return names
}

func (f *fixture) setReady(name string, ready bool) {
	f.t.Helper()
	node := &corev1.Node{}
	if err := f.c.admin.Get(f.ctx, client.ObjectKey{Name: name}, node); err != nil {
		f.t.Fatal(err)
	}
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.Now(), LastHeartbeatTime: metav1.Now()}}
	if err := f.c.admin.Status().Update(f.ctx, node); err != nil {
		f.t.Fatal(err)
	}
}

// policy creates a policy <group>-<suffix> selecting the group's nodes.
func (f *fixture) policy(suffix string, maxUnavailable *intstr.IntOrString) *nmstatev1.NodeNetworkConfigurationPolicy {
	f.t.Helper()
	p := &nmstatev1.NodeNetworkConfigurationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: f.group + "-" + suffix},
		Spec: shared.NodeNetworkConfigurationPolicySpec{
			NodeSelector:   map[string]string{groupLabel: f.group},
			MaxUnavailable: maxUnavailable,
		},
	}
	if err := f.c.admin.Create(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// eventually polls cond until it holds, failing the test with cond's last
// description after a minute (a bound on waiting, not a timing assertion).
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s", what, desc)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// policyStatus returns the verdict (the True condition) and its message.
func (f *fixture) policyStatus(name string) (rollout.Status, bool) {
	p := &nmstatev1.NodeNetworkConfigurationPolicy{}
	if err := f.c.admin.Get(f.ctx, client.ObjectKey{Name: name}, p); err != nil {
		return rollout.Status{}, false
	}
	for _, c := range p.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			return rollout.Status{Verdict: rollout.Verdict(c.Type), Message: c.Message}, true
		}
	}
	return rollout.Status{}, false
}

func (f *fixture) waitPolicy(name string, want rollout.Status) {
	f.t.Helper()
	eventually(f.t, "policy "+name+" status", func() (bool, string) {
		got, _ := f.policyStatus(name)
		return got == want, fmt.Sprintf("%+v, want %+v", got, want)
	})
}

// enactments returns the enactments labelled with the policy.
func (f *fixture) enactments(policy string) []v1beta1.NodeNetworkConfigurationEnactment {
	f.t.Helper()
	var es v1beta1.NodeNetworkConfigurationEnactmentList
	if err := f.c.admin.List(f.ctx, &es, client.MatchingLabels{shared.EnactmentPolicyLabel: policy}); err != nil {
		f.t.Fatal(err)
	}
	return es.Items
}

// follow lists objects and then watches them from the list's resource
// version, calling listed once the list is done, and fn for each listed object (as Added) and each event, in
// the API server's order, until ctx ends or fn returns false. A watch
// without a resource version can fail on a young control plane ("Too large
// resource version" while the watch cache catches up), and a broken watch
// is resumed from the last version seen.
func (c *cluster) follow(ctx context.Context, list client.ObjectList, opts []client.ListOption, listed func(), fn func(watch.EventType, runtime.Object) bool) error {
	if err := c.admin.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, o := range items {
		if !fn(watch.Added, o) {
			return nil
		}
	}
	if listed != nil {
		listed()
	}
	rv := list.GetResourceVersion()
	for ctx.Err() == nil {
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		lo.Raw = &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}
		w, err := c.admin.Watch(ctx, list, lo)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				break
			}
			if m, err := meta.Accessor(ev.Object); err == nil {
				rv = m.GetResourceVersion()
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			if !fn(ev.Type, ev.Object) {
				w.Stop()
				return nil
			}
		}
		w.Stop()
	}
	return nil
}
