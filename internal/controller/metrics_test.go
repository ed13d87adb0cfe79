package controller

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/deploy/rbac"
	"github.com/knmstate/knmstate/internal/metrics/metricstest"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/internal/scrape"
)

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// metricFamilies is one scrape of a metrics endpoint.
type metricFamilies = metricstest.Families

func scrapeURL(url string) (metricFamilies, error) {
	return metricstest.Get(http.DefaultClient, url, "")
}

// metricsEndpoint scrapes one controller's endpoint until a condition on
// the scrape holds.
type metricsEndpoint struct {
	t   *testing.T
	url string
}

func (m metricsEndpoint) scrape() metricFamilies {
	m.t.Helper()
	s, err := scrapeURL(m.url)
	if err != nil {
		m.t.Fatal(err)
	}
	return s
}

func (m metricsEndpoint) wait(what string, cond func(metricFamilies) (bool, string)) metricFamilies {
	m.t.Helper()
	var last metricFamilies
	eventually(m.t, what, func() (bool, string) {
		s, err := scrapeURL(m.url)
		if err != nil {
			return false, err.Error()
		}
		last = s
		return cond(s)
	})
	return last
}

// waitValue waits until the sum of name's series with labels is want.
func (m metricsEndpoint) waitValue(name string, labels map[string]string, want float64) {
	m.t.Helper()
	m.wait(fmt.Sprintf("%s%v = %v", name, labels, want), func(s metricFamilies) (bool, string) {
		got := s.Sum(name, labels)
		return got == want, fmt.Sprintf("%v", got)
	})
}

// setCurrentState writes a node network state's current state, as its
// handler does.
func (f *fixture) setCurrentState(node, doc string) {
	f.t.Helper()
	st, err := shared.NewState([]byte(doc))
	if err != nil {
		f.t.Fatal(err)
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"currentState": st}})
	if err != nil {
		f.t.Fatal(err)
	}
	nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := f.c.handlerOf(node).Status().Patch(f.ctx, nns, client.RawPatch(types.MergePatchType, patch)); err != nil {
		f.t.Fatal(err)
	}
}

// rollOutPolicy creates policy <group>-<suffix> and plays every node's
// handler, with outcome, until the controller says want.
func (f *fixture) rollOutPolicy(suffix string, nodes []string, outcome string, want rollout.Verdict) *nmstatev1.NodeNetworkConfigurationPolicy {
	f.t.Helper()
	p := f.policy(suffix, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, n := range nodes {
		f.runHandler(ctx, &wg, n, p, func(context.Context, string) string { return outcome })
	}
	eventually(f.t, "policy "+p.Name+" "+string(want), func() (bool, string) {
		got, _ := f.policyStatus(p.Name)
		return got.Verdict == want, fmt.Sprintf("%+v", got)
	})
	return p
}

// TestMetricsFollowObjects is kubernetes-nmstate's metrics e2e
// (test/e2e/handler/metrics_test.go) against the controller's real
// endpoint: every gauge goes up with the objects and back when they go.
func TestMetricsFollowObjects(t *testing.T) {
	f := newFixture(t, "metrics")
	addr := freeAddr(t)
	startController(t, "knmstate-controller-metrics", Options{Metrics: scrape.Options{BindAddress: addr}})
	m := metricsEndpoint{t: t, url: "http://" + addr + "/metrics"}
	nodes := f.nodes(2)
	n1 := nodes[0]

	// The leader serves the gauges once its cache is synced: all four
	// policy series are there even without policies of this test.
	base := m.wait("policy status gauges", func(s metricFamilies) (bool, string) {
		got := s.Series("kubernetes_nmstate_policies_status", nil)
		return len(got) == 4, fmt.Sprint(got)
	})
	baseAvailable := base.Sum("kubernetes_nmstate_policies_status", map[string]string{"status": "Available"})
	baseDegraded := base.Sum("kubernetes_nmstate_policies_status", map[string]string{"status": "Degraded"})
	baseGranted := base.Sum("knmstate_controller_permits_granted_total", nil)
	baseCollected := base.Sum("knmstate_controller_enactments_collected_total", map[string]string{"reason": "policyDeleted"})

	t.Run("interfaces", func(t *testing.T) {
		eth := "interfaces: [{name: eth0, type: ethernet, state: up}, {name: lo, type: loopback}]"
		bridge := "interfaces: [{name: eth0, type: ethernet, state: up}, {name: lo, type: loopback}, {name: br1, type: linux-bridge, state: up}]"
		for _, n := range nodes {
			f.setCurrentState(n, eth)
		}
		bridges := map[string]string{"type": "linux-bridge"}
		m.waitValue("kubernetes_nmstate_network_interfaces", map[string]string{"type": "ethernet", "node": n1}, 1)
		for _, n := range nodes {
			f.setCurrentState(n, bridge)
		}
		m.wait("a linux-bridge per node", func(s metricFamilies) (bool, string) {
			got := s.Series("kubernetes_nmstate_network_interfaces", bridges)
			return len(got) == 2 && s.Sum("kubernetes_nmstate_network_interfaces", bridges) == 2, fmt.Sprint(got)
		})
		for _, n := range nodes {
			f.setCurrentState(n, eth)
		}
		m.wait("no linux-bridge series", func(s metricFamilies) (bool, string) {
			got := s.Series("kubernetes_nmstate_network_interfaces", bridges)
			return len(got) == 0, fmt.Sprint(got)
		})
	})

	t.Run("routes", func(t *testing.T) {
		dynamic := `routes: {running: [{destination: 0.0.0.0/0, next-hop-interface: eth0}, {destination: "::/0", next-hop-interface: eth0}]}`
		static := `routes: {config: [{destination: 192.168.200.0/24, next-hop-interface: eth0}], running: [{destination: 0.0.0.0/0, next-hop-interface: eth0}, {destination: "::/0", next-hop-interface: eth0}, {destination: 192.168.200.0/24, next-hop-interface: eth0}]}`
		f.setCurrentState(n1, dynamic)
		m.waitValue("kubernetes_nmstate_routes", map[string]string{"node": n1, "ip_stack": "ipv6", "type": "dynamic"}, 1)
		staticV4 := map[string]string{"node": n1, "ip_stack": "ipv4", "type": "static"}
		f.setCurrentState(n1, static)
		m.waitValue("kubernetes_nmstate_routes", staticV4, 1)
		f.setCurrentState(n1, dynamic)
		m.wait("no static route series", func(s metricFamilies) (bool, string) {
			got := s.Series("kubernetes_nmstate_routes", staticV4)
			return len(got) == 0, fmt.Sprint(got)
		})
	})

	t.Run("available policy, enactments and features", func(t *testing.T) {
		p := f.rollOutPolicy("ok", nodes, "available", rollout.Available)
		m.waitValue("kubernetes_nmstate_policies_status", map[string]string{"status": "Available"}, baseAvailable+1)
		for _, n := range nodes {
			m.waitValue("kubernetes_nmstate_enactments_status", map[string]string{"node": n, "status": "Available"}, 1)
		}
		feature := map[string]string{"name": "dhcpv4-custom-hostname"}
		e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentName(n1, p.Name)}}
		if err := f.c.handlerOf(n1).Status().Patch(f.ctx, e, client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"features":["dhcpv4-custom-hostname"]}}`))); err != nil {
			t.Fatal(err)
		}
		m.waitValue("kubernetes_nmstate_features_applied", feature, 1)
		s := m.scrape()
		if got := s.Sum("knmstate_controller_permits_granted_total", nil) - baseGranted; got < 2 {
			t.Errorf("%v permits granted, want at least one per node (2)", got)
		}
		if got := s.Sum("knmstate_controller_policy_status_writes_total", map[string]string{"status": "Available"}); got < 1 {
			t.Errorf("%v Available status writes, want at least 1", got)
		}

		// The policy goes: the controller collects its enactments, and
		// every gauge is back where it was.
		if err := f.c.admin.Delete(f.ctx, p); err != nil {
			t.Fatal(err)
		}
		m.wait("no feature, policy and enactments gone", func(s metricFamilies) (bool, string) {
			features := s.Series("kubernetes_nmstate_features_applied", feature)
			enactments := s.Series("kubernetes_nmstate_enactments_status", map[string]string{"node": n1})
			available := s.Sum("kubernetes_nmstate_policies_status", map[string]string{"status": "Available"})
			return len(features) == 0 && len(enactments) == 0 && available == baseAvailable,
				fmt.Sprintf("features %v, enactments of %s %v, Available %v", features, n1, enactments, available)
		})
		m.wait("enactments collected", func(s metricFamilies) (bool, string) {
			got := s.Sum("knmstate_controller_enactments_collected_total", map[string]string{"reason": "policyDeleted"}) - baseCollected
			return got == 2, fmt.Sprintf("%v collected", got)
		})
	})

	t.Run("degraded policy", func(t *testing.T) {
		p := f.rollOutPolicy("bad", nodes, "failed", rollout.Degraded)
		m.waitValue("kubernetes_nmstate_policies_status", map[string]string{"status": "Degraded"}, baseDegraded+1)
		m.wait("failing or aborted enactments", func(s metricFamilies) (bool, string) {
			var n float64
			for _, node := range nodes {
				n += s.Sum("kubernetes_nmstate_enactments_status", map[string]string{"node": node, "status": "Failing"})
				n += s.Sum("kubernetes_nmstate_enactments_status", map[string]string{"node": node, "status": "Aborted"})
			}
			return n >= 1, fmt.Sprintf("%v failing or aborted", n)
		})
		if err := f.c.admin.Delete(f.ctx, p); err != nil {
			t.Fatal(err)
		}
		m.waitValue("kubernetes_nmstate_policies_status", map[string]string{"status": "Degraded"}, baseDegraded)
	})

	t.Run("node network state deleted", func(t *testing.T) {
		nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: n1}}
		if err := f.c.admin.Delete(f.ctx, nns); err != nil {
			t.Fatal(err)
		}
		m.wait("no series of "+n1, func(s metricFamilies) (bool, string) {
			got := append(s.Series("kubernetes_nmstate_network_interfaces", map[string]string{"node": n1}),
				s.Series("kubernetes_nmstate_routes", map[string]string{"node": n1})...)
			return len(got) == 0, fmt.Sprint(got)
		})
	})
}

// TestMetricsSecure serves the endpoint as deployed (HTTPS, scrapers
// authorized by the API server) under the controller's deploy/rbac
// identity: no token is 401, a ServiceAccount without
// knmstate-metrics-reader 403, one with it gets the metrics.
func TestMetricsSecure(t *testing.T) {
	c := getCluster(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		t.Helper()
		obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: rbac.Namespace}}
		if err := c.admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.admin.Delete(context.Background(), obj) })
		tr, err := cs.CoreV1().ServiceAccounts(rbac.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	scraper, stranger := token("metrics-scraper"), token("metrics-stranger")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "knmstate-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "metrics-scraper", Namespace: rbac.Namespace}},
	}
	if err := c.admin.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.admin.Delete(context.Background(), binding) })

	addr := freeAddr(t)
	startController(t, "knmstate-controller-secure", Options{Metrics: scrape.Options{BindAddress: addr, Secure: true}})
	hc := &http.Client{Transport: &http.Transport{
		// Self-signed: the ServiceMonitor skips verification too.
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // test of a self-signed endpoint
		ForceAttemptHTTP2: true,
	}}
	get := func(tok string) (*http.Response, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return nil, "", err
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, string(body), err
	}
	eventually(t, "the scraper gets the gauges", func() (bool, string) {
		resp, body, err := get(scraper)
		if err != nil {
			return false, err.Error()
		}
		return resp.StatusCode == http.StatusOK && strings.Contains(body, "kubernetes_nmstate_policies_status"), resp.Status
	})
	resp, _, err := get(scraper)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != 1 {
		t.Errorf("served over %s, want HTTP/1.1 only", resp.Proto)
	}
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"not a token", "nonsense", http.StatusUnauthorized},
		{"a ServiceAccount without the reader role", stranger, http.StatusForbidden},
	} {
		resp, body, err := get(tc.token)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.want || strings.Contains(body, "kubernetes_nmstate") {
			t.Errorf("%s: %s, want %d and no metrics", tc.who, resp.Status, tc.want)
		}
	}
}
