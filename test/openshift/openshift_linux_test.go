//go:build kubelet

package openshift

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/suite"
)

// kit is the suite's, from TestMain.
var kit *suite.Kit

func TestMain(m *testing.M) {
	os.Exit(suite.Main(m, suite.Options{Name: "openshift", Require: []string{suite.KubectlPath}}, func(k *suite.Kit) int {
		kit = k
		return m.Run()
	}))
}

const ns = "openshift-nmstate"

// openShiftLab starts a 2-node kubelet lab playing OpenShift on platform
// and removes it (checking nothing is left) when the test ends.
func openShiftLab(t *testing.T, platform, install string) *lab.State {
	t.Helper()
	name := "os-" + strings.ToLower(platform)[:3] + "-" + strconv.Itoa(os.Getpid()%100000)
	l := kit.UpT(t, lab.Options{
		Name: name, Nodes: 2, Kubelet: true, Install: install, OpenShiftPlatform: platform,
	})
	t.Logf("lab %s (OpenShift on %s, install %s); notes: %v", name, platform, install, l.State.Notes)
	return l.State
}

// kube is the real kubectl against the lab of st.
func kube(st *lab.State) suite.Kubectl { return suite.Kubectl{Kubeconfig: st.Kubeconfig} }

// coCondition is ClusterOperator/nmstate's condition: "STATUS REASON: MESSAGE".
func coCondition(t testing.TB, st *lab.State, typ string) string {
	out, err := kube(st).Try(t, "", "get", "clusteroperator", "nmstate", "-o",
		`jsonpath={range .status.conditions[?(@.type=="`+typ+`")]}{.status} {.reason}: {.message}{end}`)
	if err != nil {
		return err.Error()
	}
	return out
}

// pods lists the namespace's pods' component labels.
func components(t testing.TB, st *lab.State) string {
	out, _ := kube(st).Try(t, "", "-n", ns, "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.labels.app\.kubernetes\.io/component} {end}`)
	return strings.TrimSpace(out)
}

const policy = `apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: %s
spec:
  desiredState:
    interfaces:
    - name: br1
      type: linux-bridge
      state: up
      ipv4: {enabled: true, dhcp: true}
      bridge:
        options: {stp: {enabled: false}}
        port:
        - name: eth1
`

// BareMetal: the NMState appears by itself, a handler runs on every node,
// the ClusterOperator is Available with its versions, a policy becomes
// Available. Then the administrator opts out: with the NMState deleted,
// only the operator runs, also after its pod is replaced.
func TestBareMetalEnabledByDefaultThenOptOut(t *testing.T) {
	st := openShiftLab(t, "BareMetal", lab.InstallPayload)
	for _, n := range st.Notes {
		t.Log(n)
	}
	ann := kube(st).MustIn(t, "", "get", "nmstate", "nmstate", "-o", `jsonpath={.metadata.annotations.knmstate\.io/created-by-operator}`)
	if ann != "true" {
		t.Errorf("NMState nmstate not marked as the operator's: %q", ann)
	}
	if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True AsExpected") {
		t.Errorf("ClusterOperator Available: %s", got)
	}
	versions := kube(st).MustIn(t, "", "get", "clusteroperator", "nmstate", "-o", `jsonpath={.status.versions}`)
	if !strings.Contains(versions, `"operator"`) || !strings.Contains(versions, `"handler"`) {
		t.Errorf("ClusterOperator versions %s: want operator and handler", versions)
	}
	ready := kube(st).MustIn(t, "", "-n", ns, "get", "ds", "knmstate-handler", "-o", "jsonpath={.status.numberReady}")
	if ready != strconv.Itoa(len(st.Nodes)) {
		t.Errorf("%s handler pods ready, want one per node (%d)", ready, len(st.Nodes))
	}
	kube(st).MustIn(t, fmt.Sprintf(policy, "br1-eth1"), "apply", "-f", "-")
	kube(st).MustIn(t, "", "wait", "nncp", "br1-eth1", "--for", "condition=Available", "--timeout", "3m")
	testBudget(t, st)
	kube(st).MustIn(t, "", "delete", "nncp", "br1-eth1")
	checkConsolePlugin(t, st)

	// Opt out, then delete the NMState: its operands go and it does not
	// come back.
	kube(st).MustIn(t, "", "-n", ns, "create", "configmap", "knmstate-operator-config", "--from-literal=autoCreateNMState=false")
	kube(st).MustIn(t, "", "delete", "nmstate", "nmstate", "--wait")
	suite.Eventually(t, 3*time.Minute, "only the operator left", func() error {
		if c := components(t, st); c != "operator" {
			return errors.New("pods: " + c)
		}
		return nil
	})
	// The console plugin goes with the NMState (owner references).
	suite.Eventually(t, 2*time.Minute, "the ConsolePlugin gone", func() error {
		if out, err := kube(st).Try(t, "", "get", "consoleplugin", "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
			return errors.New(fmt.Sprint(out, err))
		}
		return nil
	})
	suite.Eventually(t, time.Minute, "ClusterOperator: disabled by the administrator", func() error {
		if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True DisabledByAdministrator") {
			return errors.New(got)
		}
		return nil
	})
	// The operator pod replaced: still nothing. The ClusterOperator is
	// deleted while no operator runs: the new one recreates it in its
	// first reconcile, after it decided about the NMState, so seeing it
	// back is the end of that reconcile.
	kube(st).MustIn(t, "", "-n", ns, "scale", "deploy", "knmstate-operator", "--replicas=0")
	suite.Eventually(t, 2*time.Minute, "no operator pod", func() error {
		if c := components(t, st); c != "" {
			return errors.New("pods: " + c)
		}
		return nil
	})
	kube(st).MustIn(t, "", "delete", "clusteroperator", "nmstate", "--wait")
	kube(st).MustIn(t, "", "-n", ns, "scale", "deploy", "knmstate-operator", "--replicas=1")
	suite.Eventually(t, 2*time.Minute, "the ClusterOperator recreated by the new operator: disabled by the administrator", func() error {
		if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True DisabledByAdministrator") {
			return errors.New(got)
		}
		return nil
	})
	if out := kube(st).MustIn(t, "", "get", "nmstate", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("opted out, yet after the operator restarted: %s", out)
	}
	if c := components(t, st); c != "operator" {
		t.Errorf("opted out: pods %s, want only the operator", c)
	}
	if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True DisabledByAdministrator") {
		t.Errorf("ClusterOperator Available after the restart: %s", got)
	}
}

// AWS, where knmstate is not enabled by default, with a policy applied
// before the payload (an installer manifest): only the operator runs and
// the ClusterOperator is Available saying so; the NMState created by hand
// brings everything up (opt-in), and the early policy ends Available.
func TestAWSOptInWithInstallTimePolicy(t *testing.T) {
	st := openShiftLab(t, "AWS", lab.InstallNone)
	objs, err := lab.PayloadForLab(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(o map[string]any) {
		t.Helper()
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		kube(st).MustIn(t, string(b), "apply", "--server-side", "--field-manager=cluster-version-operator", "-f", "-")
	}
	// The CRDs first (the installer's manifests wait for them), then the
	// policy, then the rest of the payload.
	var rest []map[string]any
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "Namespace" {
			apply(o.Object)
			continue
		}
		rest = append(rest, o.Object)
	}
	kube(st).MustIn(t, "", "wait", "crd", "nodenetworkconfigurationpolicies.nmstate.io", "--for", "condition=Established", "--timeout", "1m")
	kube(st).MustIn(t, fmt.Sprintf(policy, "install-time"), "apply", "-f", "-")
	begin := time.Now()
	for _, o := range rest {
		apply(o)
	}
	suite.Eventually(t, 3*time.Minute, "ClusterOperator Available: not enabled on AWS", func() error {
		if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True NotEnabledOnPlatform") || !strings.Contains(got, "AWS") {
			return errors.New(got)
		}
		return nil
	})
	t.Logf("payload applied → ClusterOperator Available: %.1f s", time.Since(begin).Seconds())
	// The reconcile that wrote "not enabled" decided, before, not to
	// create the NMState; the ones after it see the same platform.
	if c := components(t, st); c != "operator" {
		t.Errorf("on AWS without an NMState: pods %q, want only the operator", c)
	}
	if out := kube(st).MustIn(t, "", "get", "nmstate", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("on AWS the operator created %s", out)
	}
	// Opt in.
	begin = time.Now()
	kube(st).MustIn(t, "apiVersion: nmstate.io/v1\nkind: NMState\nmetadata:\n  name: nmstate\n", "apply", "-f", "-")
	kube(st).MustIn(t, "", "wait", "nncp", "install-time", "--for", "condition=Available", "--timeout", "4m")
	t.Logf("NMState created by hand → the install-time policy Available: %.1f s", time.Since(begin).Seconds())
	suite.Eventually(t, 2*time.Minute, "ClusterOperator Available with every component", func() error {
		if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True AsExpected") {
			return errors.New(got)
		}
		return nil
	})
	if got := coCondition(t, st, "Disabled"); !strings.HasPrefix(got, "False") {
		t.Errorf("Disabled: %s", got)
	}
}
