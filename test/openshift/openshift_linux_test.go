//go:build kubelet

package openshift

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/lab"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

const kubectlPath = "/usr/bin/kubectl"

var (
	knmstateBin = flag.String("openshift.knmstate", "", "knmstate binary the images hold (make build)")
	imagesDir   = flag.String("openshift.images", "", "images of make images")
)

const ns = "openshift-nmstate"

// openShiftLab starts a 2-node kubelet lab playing OpenShift on platform
// and removes it (checking nothing is left) when the test ends.
func openShiftLab(t *testing.T, platform, install string) *lab.State {
	t.Helper()
	root, err := testenv.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, images := *knmstateBin, *imagesDir
	if bin == "" {
		bin = filepath.Join(root, "bin", "knmstate")
	}
	if images == "" {
		images = filepath.Join(root, "bin", "images")
	}
	name := "os-" + strings.ToLower(platform)[:3] + "-" + strconv.Itoa(os.Getpid()%100000)
	dir := filepath.Join(os.TempDir(), "knmstate-openshift-"+name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := lab.Down(ctx, name, dir); err != nil {
			t.Errorf("lab down: %v", err)
		}
		if left := lab.Leftovers(name, dir); len(left) > 0 {
			t.Errorf("lab down left behind: %v", left)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	begin := time.Now()
	st, err := lab.Up(ctx, lab.Options{
		Name: name, Dir: dir, Nodes: 2, Binary: bin, Kubelet: true, Images: images,
		Install: install, OpenShiftPlatform: platform,
		APIServer: filepath.Join(root, "bin", "kube-apiserver"),
	})
	if err != nil {
		t.Fatalf("lab up: %v", err)
	}
	t.Logf("lab %s (OpenShift on %s, install %s) up in %v; notes: %v", name, platform, install, time.Since(begin).Round(time.Millisecond), st.Notes)
	return st
}

func kubectl(t testing.TB, st *lab.State, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(kubectlPath, append([]string{"--kubeconfig", st.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

func must(t testing.TB, st *lab.State, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, st, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func eventually(t testing.TB, timeout time.Duration, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %s", what, timeout, msg)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// coCondition is ClusterOperator/nmstate's condition: "STATUS REASON: MESSAGE".
func coCondition(t testing.TB, st *lab.State, typ string) string {
	out, err := kubectl(t, st, "", "get", "clusteroperator", "nmstate", "-o",
		`jsonpath={range .status.conditions[?(@.type=="`+typ+`")]}{.status} {.reason}: {.message}{end}`)
	if err != nil {
		return err.Error()
	}
	return out
}

// pods lists the namespace's pods' component labels.
func components(t testing.TB, st *lab.State) string {
	out, _ := kubectl(t, st, "", "-n", ns, "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.labels.app\.kubernetes\.io/component} {end}`)
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
	ann := must(t, st, "", "get", "nmstate", "nmstate", "-o", `jsonpath={.metadata.annotations.knmstate\.io/created-by-operator}`)
	if ann != "true" {
		t.Errorf("NMState nmstate not marked as the operator's: %q", ann)
	}
	if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True AsExpected") {
		t.Errorf("ClusterOperator Available: %s", got)
	}
	versions := must(t, st, "", "get", "clusteroperator", "nmstate", "-o", `jsonpath={.status.versions}`)
	if !strings.Contains(versions, `"operator"`) || !strings.Contains(versions, `"handler"`) {
		t.Errorf("ClusterOperator versions %s: want operator and handler", versions)
	}
	ready := must(t, st, "", "-n", ns, "get", "ds", "knmstate-handler", "-o", "jsonpath={.status.numberReady}")
	if ready != strconv.Itoa(len(st.Nodes)) {
		t.Errorf("%s handler pods ready, want one per node (%d)", ready, len(st.Nodes))
	}
	must(t, st, fmt.Sprintf(policy, "br1-eth1"), "apply", "-f", "-")
	must(t, st, "", "wait", "nncp", "br1-eth1", "--for", "condition=Available", "--timeout", "3m")
	testBudget(t, st)
	must(t, st, "", "delete", "nncp", "br1-eth1")
	checkConsolePlugin(t, st)

	// Opt out, then delete the NMState: its operands go and it does not
	// come back.
	must(t, st, "", "-n", ns, "create", "configmap", "knmstate-operator-config", "--from-literal=autoCreateNMState=false")
	must(t, st, "", "delete", "nmstate", "nmstate", "--wait")
	eventually(t, 3*time.Minute, "only the operator left", func() string {
		if c := components(t, st); c != "operator" {
			return "pods: " + c
		}
		return ""
	})
	// The console plugin goes with the NMState (owner references).
	eventually(t, 2*time.Minute, "the ConsolePlugin gone", func() string {
		if out, err := kubectl(t, st, "", "get", "consoleplugin", "-o", "name"); err != nil || strings.TrimSpace(out) != "" {
			return fmt.Sprint(out, err)
		}
		return ""
	})
	eventually(t, time.Minute, "ClusterOperator: disabled by the administrator", func() string {
		if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True DisabledByAdministrator") {
			return got
		}
		return ""
	})
	// The operator pod replaced: still nothing.
	must(t, st, "", "-n", ns, "delete", "pod", "-l", "app.kubernetes.io/component=operator", "--wait")
	eventually(t, 2*time.Minute, "a new operator pod ready", func() string {
		out, _ := kubectl(t, st, "", "-n", ns, "get", "deploy", "knmstate-operator", "-o", "jsonpath={.status.readyReplicas}")
		if out != "1" {
			return "ready " + out
		}
		return ""
	})
	time.Sleep(10 * time.Second) // the new operator's first reconciles
	if out := must(t, st, "", "get", "nmstate", "-o", "name"); strings.TrimSpace(out) != "" {
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
		must(t, st, string(b), "apply", "--server-side", "--field-manager=cluster-version-operator", "-f", "-")
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
	must(t, st, "", "wait", "crd", "nodenetworkconfigurationpolicies.nmstate.io", "--for", "condition=Established", "--timeout", "1m")
	must(t, st, fmt.Sprintf(policy, "install-time"), "apply", "-f", "-")
	begin := time.Now()
	for _, o := range rest {
		apply(o)
	}
	eventually(t, 3*time.Minute, "ClusterOperator Available: not enabled on AWS", func() string {
		if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True NotEnabledOnPlatform") || !strings.Contains(got, "AWS") {
			return got
		}
		return ""
	})
	t.Logf("payload applied → ClusterOperator Available: %.1f s", time.Since(begin).Seconds())
	time.Sleep(5 * time.Second)
	if c := components(t, st); c != "operator" {
		t.Errorf("on AWS without an NMState: pods %q, want only the operator", c)
	}
	if out := must(t, st, "", "get", "nmstate", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("on AWS the operator created %s", out)
	}
	// Opt in.
	begin = time.Now()
	must(t, st, "apiVersion: nmstate.io/v1\nkind: NMState\nmetadata:\n  name: nmstate\n", "apply", "-f", "-")
	must(t, st, "", "wait", "nncp", "install-time", "--for", "condition=Available", "--timeout", "4m")
	t.Logf("NMState created by hand → the install-time policy Available: %.1f s", time.Since(begin).Seconds())
	eventually(t, 2*time.Minute, "ClusterOperator Available with every component", func() string {
		if got := coCondition(t, st, "Available"); !strings.HasPrefix(got, "True AsExpected") {
			return got
		}
		return ""
	})
	if got := coCondition(t, st, "Disabled"); !strings.HasPrefix(got, "False") {
		t.Errorf("Disabled: %s", got)
	}
}
