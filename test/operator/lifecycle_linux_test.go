//go:build kubelet

package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// TestOperatorLifecycle is a user's path through the operator, in order:
// install the bundle and an NMState, use policies, upgrade the operator,
// delete the NMState, install again with Helm. Each step leaves what the
// next one needs, so they run as subtests of one test and stop at the
// first failure.
func TestOperatorLifecycle(t *testing.T) {
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"install bundle and NMState", testInstall},
		{"policies Available", testPolicy},
		{"handler tokens are node-scoped", testNodeScope},
		{"viewers read, never write", testViewer},
		{"admission", testAdmission},
		{"certificate rotation", testRotation},
		{"steady state", testSteadyState},
		{"upgrade N to N+1", testUpgrade},
		{"uninstall", testUninstall},
		{"install with Helm", testHelm},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.run) {
			t.Fatalf("step %q failed: the later steps need it", st.name)
		}
	}
}

func testInstall(t *testing.T) {
	if out := s.kubectl.Must(t, "get", "crd", "-o", "name"); strings.Contains(out, "nmstate.io") {
		t.Fatalf("the lab has knmstate's CRDs already: %s", out)
	}
	s.kubectl.Must(t, "apply", "--server-side", "--force-conflicts", "-k", kustomization(t, "knmstate"))
	suite.Eventually(t, 3*time.Minute, "the operator Deployment available", func() error {
		out, _ := s.kubectl.Try(t, "", "-n", "nmstate", "get", "deploy", "knmstate-operator", "-o", "jsonpath={.status.availableReplicas}")
		if out != "1" {
			return errors.New("available replicas " + out)
		}
		return nil
	})
	// Nothing else runs before an NMState exists.
	if out := s.kubectl.Must(t, "-n", "nmstate", "get", "pods", "-o", "name"); strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("pods before any NMState: %s", out)
	}
	begin := time.Now()
	s.kubectl.Must(t, "apply", "-f", filepath.Join(s.root, "examples", "nmstate.io_v1_nmstate_cr.yaml"))
	s.kubectl.Must(t, "wait", "--for=condition=Available", "nmstate/nmstate", "--timeout=4m")
	t.Logf("FIGURE nmstate.available: NMState created -> Available in %v", time.Since(begin).Round(time.Millisecond))
	for _, c := range []string{"handler", "controller", "webhook"} {
		out := s.kubectl.Must(t, "-n", "nmstate", "get", "pods", "-l", "app.kubernetes.io/component="+c, "-o", "jsonpath={range .items[*]}{.status.phase} {end}")
		if strings.Count(out, "Running") == 0 {
			t.Errorf("%s pods: %q", c, out)
		}
	}
	suite.Eventually(t, time.Minute, "a NodeNetworkState per node", func() error {
		out := s.kubectl.Must(t, "get", "nns", "-o", "name")
		if n := strings.Count(out, "nodenetworkstate"); n != 3 {
			return fmt.Errorf("%d states: %s", n, out)
		}
		return nil
	})
}

func testPolicy(t *testing.T) {
	s.kubectl.Must(t, "apply", "-f", filepath.Join(s.root, "examples", "linux-bridge.yaml"))
	s.kubectl.Must(t, "wait", "--for=condition=Available", "nncp/linux-bridge", "--timeout=2m")
}

// handlerToken is a client authenticated with a token of the handler's
// ServiceAccount bound to the handler pod of node (as the kubelet mounts
// it into that pod).
func handlerToken(t *testing.T, node string) dynamic.Interface {
	t.Helper()
	pod := strings.TrimSpace(s.kubectl.Must(t, "-n", "nmstate", "get", "pods", "-l", "app.kubernetes.io/component=handler",
		"--field-selector", "spec.nodeName="+node, "-o", "jsonpath={.items[0].metadata.name}"))
	token := strings.TrimSpace(s.kubectl.Must(t, "-n", "nmstate", "create", "token", "knmstate-handler", "--bound-object-kind=Pod", "--bound-object-name="+pod))
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubectl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	anon := rest.AnonymousClientConfig(cfg)
	anon.BearerToken = token
	dyn, err := dynamic.NewForConfig(anon)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func testNodeScope(t *testing.T) {
	own := handlerToken(t, "node01")
	label := func(resource, name string) error {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"test.knmstate.io/touched":"%d"}}}`, time.Now().UnixNano())
		_, err := own.Resource(schema.GroupVersionResource{Group: "nmstate.io", Version: "v1beta1", Resource: resource}).
			Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	for _, tc := range []struct {
		resource, name string
		allowed        bool
	}{
		{"nodenetworkstates", "node01", true},
		{"nodenetworkstates", "node02", false},
		{"nodenetworkconfigurationenactments", "node01.linux-bridge", true},
		{"nodenetworkconfigurationenactments", "node02.linux-bridge", false},
	} {
		err := label(tc.resource, tc.name)
		switch {
		case tc.allowed && err != nil:
			t.Errorf("node01's handler token patching %s %s: %v", tc.resource, tc.name, err)
		case !tc.allowed && (err == nil || !strings.Contains(err.Error(), "may not write")):
			t.Errorf("node01's handler token patching %s %s: %v, want denied by the node scope", tc.resource, tc.name, err)
		}
	}
}

// testViewer: a user bound to the built-in view role (cluster-wide) reads
// policies, enactments and node network states through the aggregated
// reader role, and may not create a policy.
func testViewer(t *testing.T) {
	s.kubectl.Must(t, "create", "clusterrolebinding", "test-viewer", "--clusterrole=view", "--user=viewer")
	defer s.kubectl.Must(t, "delete", "clusterrolebinding", "test-viewer")
	suite.Eventually(t, time.Minute, "view aggregates the reader role", func() error {
		for _, r := range []string{"nncp", "nnce", "nns"} {
			if _, err := s.kubectl.Try(t, "", "get", r, "--as=viewer"); err != nil {
				return err
			}
		}
		return nil
	})
	out, _ := s.kubectl.Try(t, "", "auth", "can-i", "create", "nodenetworkconfigurationpolicies.nmstate.io", "--as=viewer")
	if strings.TrimSpace(out) != "no" {
		t.Errorf("a viewer may create policies: %q", out)
	}
	if _, err := s.kubectl.Try(t, "", "delete", "nncp", "linux-bridge", "--as=viewer", "--dry-run=server"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a viewer deleting a policy: %v, want forbidden", err)
	}
}

// testSteadyState: an idle cluster with knmstate installed and a policy
// Available writes nothing of knmstate's for a minute.
func testSteadyState(t *testing.T) {
	time.Sleep(10 * time.Second) // the policy's last status writes settle
	before := apiWrites(t)
	time.Sleep(time.Minute)
	after := apiWrites(t)
	var knmstate, leases, other float64
	var detail []string
	for k, n := range after {
		d := n - before[k]
		if d == 0 {
			continue
		}
		switch {
		case strings.Contains(k, "nmstate.io"):
			knmstate += d
			detail = append(detail, fmt.Sprintf("%s: %.0f", k, d))
		case strings.Contains(k, "leases"):
			leases += d
		default:
			other += d
		}
	}
	t.Logf("FIGURE steady.writes: %.0f writes/min of nmstate.io objects, %.0f Lease renewals/min (kubelets, leader elections), %.0f other writes/min (Node and Pod status by kubelets)", knmstate, leases, other)
	if knmstate != 0 {
		t.Errorf("writes of nmstate.io objects at steady state: %s", strings.Join(detail, "; "))
	}
	for _, c := range []string{"operator", "webhook", "handler", "controller"} {
		t.Logf("FIGURE memory.%s: %s", c, workingSets(t, c))
	}
}

func testUpgrade(t *testing.T) {
	// mark is the policy that ends the upgrade's window (below).
	const mark = "zz-upgrade-mark"
	enactmentsBefore := enactmentTransitions(t, "")
	oldPods := handlerPods(t)
	// Sample every policy's Available while the operator and its
	// operands roll to N+1.
	type sampled struct {
		n   int
		bad []string
	}
	stop := make(chan struct{})
	samples := make(chan sampled, 1)
	go func() {
		var bad []string
		n := 0
		for {
			select {
			case <-stop:
				samples <- sampled{n, bad}
				return
			case <-time.After(500 * time.Millisecond):
			}
			out, err := s.kubectl.Try(t, "", "get", "nncp", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Available")].status} {end}`)
			if err != nil {
				continue // the API server answers; a failed kubectl is not a policy's state
			}
			n++
			for _, f := range strings.Fields(out) {
				if !strings.HasSuffix(f, "=True") && !strings.HasPrefix(f, mark+"=") {
					bad = append(bad, f)
				}
			}
		}
	}()
	s.kubectl.Must(t, "apply", "--server-side", "--force-conflicts", "-k", kustomization(t, "knmstate:"+s.versionNext))
	want := s.state.Images["knmstate:"+s.versionNext]
	suite.Eventually(t, 5*time.Minute, "the handler DaemonSet rolled to N+1", func() error {
		out := s.kubectl.Must(t, "-n", "nmstate", "get", "ds", "knmstate-handler", "-o",
			"jsonpath={.spec.template.spec.containers[0].image} {.status.updatedNumberScheduled} {.status.numberReady} {.status.desiredNumberScheduled}")
		f := strings.Fields(out)
		if len(f) != 4 || f[0] != want || f[1] != f[3] || f[2] != f[3] {
			return errors.New(out)
		}
		return nil
	})
	s.kubectl.Must(t, "wait", "--for=condition=Available", "nmstate/nmstate", "--timeout=3m")
	suite.Eventually(t, time.Minute, "every NodeNetworkState reports the new handler version", func() error {
		out := s.kubectl.Must(t, "get", "nns", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.handlerNmstateVersion} {end}")
		for _, f := range strings.Fields(out) {
			if !strings.HasSuffix(f, "="+s.versionNext) {
				return errors.New(out)
			}
		}
		return nil
	})
	// A new handler decides about the policies one at a time, waiting ones
	// in name order: a policy created now, named after every other, is
	// applied on a node once its new handler has decided about the others
	// (it changes nothing: its bridge is absent already). The sampling
	// ends with it.
	for _, name := range strings.Fields(s.kubectl.Must(t, "get", "nncp", "-o", "jsonpath={.items[*].metadata.name}")) {
		if name >= mark {
			t.Fatalf("policy %s sorts after the marking policy %s: the new handlers may decide about it after the mark", name, mark)
		}
	}
	s.kubectl.MustIn(t, policyDoc(mark, "  desiredState:\n    interfaces:\n    - {name: br-upgmark, type: linux-bridge, state: absent}\n"), "apply", "-f", "-")
	s.kubectl.Must(t, "wait", "--for=condition=Available", "nncp/"+mark, "--timeout=2m")
	close(stop)
	got := <-samples
	t.Logf("FIGURE upgrade.availability: %d samples of every policy during the upgrade, %d not Available", got.n, len(got.bad))
	if got.n == 0 || len(got.bad) > 0 {
		t.Errorf("policies not Available during the upgrade: %v", got.bad)
	}
	// No handler applied anything again: the enactments never changed
	// condition, and the new handler pods logged no apply but the mark's.
	if after := enactmentTransitions(t, "nmstate.io/policy!="+mark); after != enactmentsBefore {
		t.Errorf("enactment conditions changed during the upgrade:\nbefore %s\nafter  %s", enactmentsBefore, after)
	}
	newPods := 0
	for _, p := range handlerPods(t) {
		if slices.Contains(oldPods, p) {
			continue
		}
		newPods++
		logs := s.kubectl.Must(t, "-n", "nmstate", "logs", p)
		var applies []string
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "msg=applying ") {
				applies = append(applies, l)
			}
		}
		if len(applies) != 1 || !strings.Contains(applies[0], "policy="+mark+" ") {
			t.Errorf("the new handler pod %s: %d applies, want 1, of %s:\n%s", p, len(applies), mark, logs)
		}
	}
	s.kubectl.Must(t, "delete", "nncp", mark, "--wait")
	if newPods != len(s.state.Nodes) {
		t.Errorf("%d new handler pods after the upgrade, want one per node", newPods)
	}
}

func testUninstall(t *testing.T) {
	s.kubectl.Must(t, "delete", "nmstate", "nmstate", "--wait")
	suite.Eventually(t, 2*time.Minute, "the operands removed", func() error {
		out := s.kubectl.Must(t, "-n", "nmstate", "get", "ds,deploy,svc,pdb", "-o", "name")
		var left []string
		for _, l := range strings.Fields(out) {
			if !strings.Contains(l, "knmstate-operator") {
				left = append(left, l)
			}
		}
		cluster := s.kubectl.Must(t, "get", "validatingwebhookconfigurations,mutatingwebhookconfigurations,validatingadmissionpolicies,clusterroles", "-o", "name")
		for _, l := range strings.Fields(cluster) {
			if strings.Contains(l, "knmstate-handler") || strings.Contains(l, "knmstate-controller") || strings.Contains(l, "knmstate-webhook") || strings.Contains(l, "nncp-validation") {
				left = append(left, l)
			}
		}
		if len(left) > 0 {
			return errors.New(strings.Join(left, ", "))
		}
		return nil
	})
	// The CRDs, the policies and the nodes' network stay.
	s.kubectl.Must(t, "get", "crd", "nodenetworkconfigurationpolicies.nmstate.io")
	s.kubectl.Must(t, "get", "nncp", "linux-bridge")
	// The operator itself goes with its bundle's own objects (the CRDs
	// stay: deleting them would delete every policy).
	s.kubectl.Must(t, "delete", "-f", filepath.Join(s.root, "deploy", "operator", "operator.yaml"), "--wait")
}

func testHelm(t *testing.T) {
	helm := filepath.Join(s.root, "bin", "helm")
	ref := s.state.Images["knmstate"]
	args := []string{"--kubeconfig", s.kubectl.Kubeconfig, "install", "knmstate", filepath.Join(s.root, "deploy", "helm", "knmstate"),
		"--set", "image=" + ref, "--set", "createNamespace=false", "--set", "createNMState=true",
		"--set", "nmstate.probeConfiguration.dns.host=api.lab.example", "--wait", "--timeout", "4m"}
	if out, err := runCmd(helm, args...); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := runCmd(helm, "--kubeconfig", s.kubectl.Kubeconfig, "uninstall", "knmstate", "--wait"); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})
	s.kubectl.Must(t, "wait", "--for=condition=Available", "nmstate/nmstate", "--timeout=4m")
	s.kubectl.Must(t, "apply", "-f", filepath.Join(s.root, "examples", "static-ip.yaml"))
	s.kubectl.Must(t, "wait", "--for=condition=Available", "nncp/static-ip", "--timeout=2m")
	s.kubectl.Must(t, "wait", "--for=condition=Available", "nncp/linux-bridge", "--timeout=2m")
	s.kubectl.Must(t, "delete", "nmstate", "nmstate", "--wait")
}

// handlerPods are the names of the handler pods.
func handlerPods(t *testing.T) []string {
	t.Helper()
	return strings.Fields(s.kubectl.Must(t, "-n", "nmstate", "get", "pods", "-l", "app.kubernetes.io/component=handler", "-o", "jsonpath={.items[*].metadata.name}"))
}

// enactmentTransitions lists every enactment's conditions with their
// transition times: an apply moves them (Progressing, then Available);
// selector, when not "", is a label selector of the enactments.
func enactmentTransitions(t *testing.T, selector string) string {
	t.Helper()
	args := []string{"get", "nnce"}
	if selector != "" {
		args = append(args, "-l", selector)
	}
	return s.kubectl.Must(t, append(args, "-o", `jsonpath={range .items[*]}{.metadata.name}:{range .status.conditions[*]}{.type}={.status}@{.lastTransitionTime},{end};{end}`)...)
}

// apiWrites reads the API server's write request counters, by
// "verb group/resource".
func apiWrites(t *testing.T) map[string]float64 {
	t.Helper()
	raw := s.kubectl.Must(t, "get", "--raw", "/metrics")
	out := map[string]float64{}
	for _, line := range strings.Split(raw, "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		var verb, group, resource, sub string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "verb":
				verb = v
			case "group":
				group = v
			case "resource":
				resource = v
			case "subresource":
				sub = v
			}
		}
		if !slices.Contains([]string{"POST", "PUT", "PATCH", "APPLY", "DELETE"}, verb) {
			continue
		}
		var v float64
		fmt.Sscan(value, &v)
		out[verb+" "+group+"/"+resource+"/"+sub] += v
	}
	return out
}

// workingSets is the working set of a component's pods as their kubelets
// report it (Summary API).
func workingSets(t *testing.T, component string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubectl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, node := range s.state.Nodes {
		raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node.Name, "proxy/stats/summary").DoRaw(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var sum struct {
			Pods []struct {
				PodRef struct{ Name string } `json:"podRef"`
				Memory *struct {
					WorkingSetBytes *float64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"pods"`
		}
		if err := json.Unmarshal(raw, &sum); err != nil {
			t.Fatal(err)
		}
		for _, p := range sum.Pods {
			if strings.HasPrefix(p.PodRef.Name, "knmstate-"+component) && p.Memory != nil && p.Memory.WorkingSetBytes != nil {
				parts = append(parts, fmt.Sprintf("%s %.1f MiB", p.PodRef.Name, *p.Memory.WorkingSetBytes/(1<<20)))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// runCmd runs a program and returns its combined output.
func runCmd(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
