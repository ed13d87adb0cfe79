package e2e

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/handler"
	"github.com/knmstate/knmstate/internal/metrics/metricstest"
	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// metricFamilies is one scrape.
type metricFamilies = metricstest.Families

// controllerScraper returns a function that scrapes the metrics of the
// controller replica that leads, as Prometheus in the cluster would.
//
// Process mode: the controller serves plain HTTP on the switch namespace's
// loopback (lab.ControllerMetricsAddress); guest mode: on this machine's
// (State.ControllerMetrics). Kubelet mode: the leader pod
// serves HTTPS on the pod network (port 8089, self-signed, a
// ServiceAccount token bound to knmstate-metrics-reader), reached from
// node01 as a node's Prometheus would.
func controllerScraper(t *testing.T) func() (metricFamilies, error) {
	t.Helper()
	if c.fullKernel {
		// Guest mode: the controller runs on this machine, its metrics on
		// a free port of its loopback.
		hc := &http.Client{Timeout: 10 * time.Second}
		return func() (metricFamilies, error) {
			return metricstest.Get(hc, "http://"+c.state.ControllerMetrics+"/metrics", "")
		}
	}
	if !c.kubelet {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext: (&handler.NetNSDialer{Path: "/run/netns/" + c.state.SwitchNS}).DialContext,
		}}
		return func() (metricFamilies, error) {
			return metricstest.Get(hc, "http://"+lab.ControllerMetricsAddress+"/metrics", "")
		}
	}
	c.kubectl.MustIn(t, `apiVersion: v1
kind: ServiceAccount
metadata: {name: e2e-prometheus, namespace: nmstate}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: knmstate-metrics-reader}
subjects: [{kind: ServiceAccount, name: e2e-prometheus, namespace: nmstate}]
`, "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = c.kubectl.Try(t, "", "delete", "clusterrolebinding", "e2e-prometheus")
		_, _ = c.kubectl.Try(t, "", "-n", "nmstate", "delete", "serviceaccount", "e2e-prometheus")
	})
	token := c.kubectl.Must(t, "-n", "nmstate", "create", "token", "e2e-prometheus")
	var node01 string
	for _, n := range c.state.Nodes {
		if n.Name == "node01" {
			node01 = n.NetNS
		}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     (&handler.NetNSDialer{Path: node01}).DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the endpoint's certificate is self-signed
	}}
	return func() (metricFamilies, error) {
		holder, err := c.kubectl.Try(t, "", "-n", "nmstate", "get", "lease", "knmstate-controller", "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil {
			return nil, err
		}
		pod, _, _ := strings.Cut(holder, "_")
		ip, err := c.kubectl.Try(t, "", "-n", "nmstate", "get", "pod", pod, "-o", "jsonpath={.status.podIP}")
		if err != nil {
			return nil, err
		}
		return metricstest.Get(hc, "https://"+ip+":8089/metrics", token)
	}
}

// TestMetrics is kubernetes-nmstate's metrics e2e on the lab: a policy
// adds a linux bridge and a static route on every node; the leader's
// interface, route, policy and enactment gauges go up by what the handlers
// report, and back once the configuration is removed and the policies
// deleted.
func TestMetrics(t *testing.T) {
	requirePolicies(t)
	scrape := controllerScraper(t)
	var base metricFamilies
	suite.Eventually(t, time.Minute*c.slowdown, "the controller's gauges", func() error {
		m, err := scrape()
		switch {
		case err != nil:
			return err
		case m["kubernetes_nmstate_policies_status"] == nil:
			return errors.New("no kubernetes_nmstate_policies_status")
		}
		base = m
		return nil
	})
	bridges := map[string]string{"type": "linux-bridge"}
	static := map[string]string{"ip_stack": "ipv4", "type": "static"}
	available := map[string]string{"status": "Available"}
	nodeAvailable := func(n string) map[string]string { return map[string]string{"node": n, "status": "Available"} }
	type counts struct{ bridges, static, policies, node01, node02, node03 float64 }
	read := func(m metricFamilies) counts {
		return counts{
			m.Sum("kubernetes_nmstate_network_interfaces", bridges),
			m.Sum("kubernetes_nmstate_routes", static),
			m.Sum("kubernetes_nmstate_policies_status", available),
			m.Sum("kubernetes_nmstate_enactments_status", nodeAvailable("node01")),
			m.Sum("kubernetes_nmstate_enactments_status", nodeAvailable("node02")),
			m.Sum("kubernetes_nmstate_enactments_status", nodeAvailable("node03")),
		}
	}
	before := read(base)
	expect := func(what string, want counts) {
		t.Helper()
		suite.Eventually(t, time.Minute*c.slowdown, what, func() error {
			m, err := scrape()
			if err != nil {
				return err
			}
			if got := read(m); got != want {
				return fmt.Errorf("%+v, want %+v", got, want)
			}
			return nil
		})
	}

	const policy, cleanup = "e2e-metrics", "e2e-metrics-cleanup"
	begin := time.Now()
	c.kubectl.MustIn(t, policyYAML(policy, `
interfaces:
- {name: br-metrics, type: linux-bridge, state: up, ipv4: {enabled: false}, bridge: {options: {stp: {enabled: false}}, port: []}}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth0}
`), "apply", "-f", "-")
	if err := policyReaches(t, policy, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	up := before
	up.bridges += 3
	up.static += 3
	up.policies++
	up.node01++
	up.node02++
	up.node03++
	expect("a bridge and a static route per node, one more Available policy and enactment per node", up)
	t.Logf("gauges up %v after the apply", time.Since(begin).Round(time.Millisecond))

	c.kubectl.MustIn(t, policyYAML(cleanup, `
interfaces:
- {name: br-metrics, type: linux-bridge, state: absent}
routes:
  config:
  - {destination: 198.51.100.0/24, next-hop-interface: eth0, state: absent}
`), "apply", "-f", "-")
	if err := policyReaches(t, cleanup, "Available", availableTimeout); err != nil {
		t.Fatal(err)
	}
	deletePolicy(t, policy)
	deletePolicy(t, cleanup)
	expect("the gauges back where they were", before)
	for _, n := range allNodes {
		pristine(t, n)
	}
}
