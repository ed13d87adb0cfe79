package operator

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	os.Exit(testenv.RunMain(m, &env))
}

// startOperator runs the operator against the test control plane until
// the test ends.
func startOperator(t *testing.T, opts Options) client.Client {
	t.Helper()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	mgr, stop, err := NewManager(env.Config, opts)
	t.Cleanup(stop)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	return c
}

func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last: %s)", what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestOperatorDeploysOperandsOfTheFirstNMState(t *testing.T) {
	ctx := context.Background()
	const image = "registry.example/knmstate:test"
	c := startOperator(t, Options{Image: image, Version: "test", Logger: testr.New(t)})

	first := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate"},
		Spec: nmstatev1.NMStateSpec{NodeSelector: map[string]string{"role": "net"}, LogLevel: shared.LogLevelDebug}}
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), first) })

	// Every operand exists, owned by the NMState, with the NMState's
	// placement and log level, running the operator's image.
	ns := manifest.DefaultNamespace
	waitFor(t, "the handler DaemonSet", func() (bool, string) {
		var ds appsv1.DaemonSet
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.HandlerName}, &ds)
		return err == nil, errString(err)
	})
	var ds appsv1.DaemonSet
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.HandlerName}, &ds); err != nil {
		t.Fatal(err)
	}
	if got := ds.Spec.Template.Spec.NodeSelector; got["role"] != "net" || len(got) != 1 {
		t.Errorf("handler nodeSelector %v, want the NMState's", got)
	}
	if img := ds.Spec.Template.Spec.Containers[0].Image; img != image {
		t.Errorf("handler image %s, want %s", img, image)
	}
	if !slices.Contains(ds.Spec.Template.Spec.Containers[0].Args, "-v=1") {
		t.Errorf("logLevel debug did not reach the handler's args: %v", ds.Spec.Template.Spec.Containers[0].Args)
	}
	for _, o := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifest.ControllerName}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifest.WebhookName}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifest.WebhookName}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: manifest.HandlerName}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: manifest.HandlerName + "-events"}},
	} {
		waitFor(t, o.GetName(), func() (bool, string) {
			err := c.Get(ctx, client.ObjectKeyFromObject(o), o)
			return err == nil, errString(err)
		})
		refs := o.GetOwnerReferences()
		if len(refs) != 1 || refs[0].Name != first.Name || refs[0].UID != first.UID || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("%T %s: owner references %+v, want the NMState", o, o.GetName(), refs)
		}
	}
	// The controller and the webhook run on the infra nodes, not where
	// the NMState's handler selector says.
	var dep appsv1.Deployment
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.ControllerName}, &dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Spec.NodeSelector; got["role"] != "" {
		t.Errorf("controller nodeSelector %v has the handler's selector", got)
	}
	// The namespace is not owned: it outlives the NMState.
	var nsObj corev1.Namespace
	if err := c.Get(ctx, types.NamespacedName{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	if len(nsObj.OwnerReferences) != 0 {
		t.Errorf("namespace owned by %+v", nsObj.OwnerReferences)
	}
	// No kubelets here: nothing becomes available, the NMState says it
	// is deploying.
	waitFor(t, "the NMState's conditions", func() (bool, string) {
		var nm nmstatev1.NMState
		if err := c.Get(ctx, client.ObjectKeyFromObject(first), &nm); err != nil {
			return false, err.Error()
		}
		p := nm.Status.Conditions.Find(shared.NMStateConditionProgressing)
		a := nm.Status.Conditions.Find(shared.NMStateConditionAvailable)
		ok := p != nil && p.Status == corev1.ConditionTrue && p.Reason == shared.NMStateConditionDeploying &&
			a != nil && a.Status == corev1.ConditionFalse
		return ok, strings.TrimSpace(strings.ReplaceAll(fmtConditions(nm.Status.Conditions), "\n", "; "))
	})

	// A second NMState is deleted; the first one stays.
	second := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "another"}}
	time.Sleep(1100 * time.Millisecond) // creation timestamps have second resolution
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second NMState deleted", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(second), &nmstatev1.NMState{})
		return apierrors.IsNotFound(err), errString(err)
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(first), &nmstatev1.NMState{}); err != nil {
		t.Errorf("the first NMState: %v", err)
	}

	// Changing the NMState updates the operands.
	var nm nmstatev1.NMState
	if err := c.Get(ctx, client.ObjectKeyFromObject(first), &nm); err != nil {
		t.Fatal(err)
	}
	nm.Spec.LogLevel = shared.LogLevelInfo
	nm.Spec.ProbeConfiguration.DNS.Host = "probe.example"
	if err := c.Update(ctx, &nm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the handler's args to follow the NMState", func() (bool, string) {
		var ds appsv1.DaemonSet
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.HandlerName}, &ds); err != nil {
			return false, err.Error()
		}
		args := ds.Spec.Template.Spec.Containers[0].Args
		return !slices.Contains(args, "-v=1") && slices.Contains(args, "--probe-dns-host=probe.example"), strings.Join(args, " ")
	})

	// Every reconcile is counted and timed (docs/metrics.md).
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var reconciles float64
	for _, mf := range mfs {
		if mf.GetName() == "knmstate_operator_reconciles_total" {
			for _, m := range mf.GetMetric() {
				reconciles += m.GetCounter().GetValue()
			}
		}
	}
	if reconciles < 3 {
		t.Errorf("knmstate_operator_reconciles_total = %v, want at least the three changes' reconciles", reconciles)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func fmtConditions(l shared.ConditionList) string {
	var b strings.Builder
	for _, c := range l {
		b.WriteString(string(c.Type) + "=" + string(c.Status) + " " + string(c.Reason) + ": " + c.Message + "\n")
	}
	return b.String()
}
