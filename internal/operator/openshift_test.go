package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	configv1 "github.com/openshift/api/config/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/openshiftcrd"
	"github.com/knmstate/knmstate/internal/webhook"
)

func TestClusterOperatorStatus(t *testing.T) {
	nmstate := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate"}}
	degradedNM := nmstate.DeepCopy()
	degradedNM.Status.Conditions.SetAt(time.Now(), shared.NMStateConditionDegraded, corev1.ConditionTrue, shared.NMStateConditionInternalError, "applying DaemonSet: forbidden")
	old := configv1.ClusterOperatorStatus{Versions: []configv1.OperandVersion{{Name: "operator", Version: "1"}, {Name: "handler", Version: "1"}}}
	type want struct {
		available, progressing, degraded, disabled configv1.ConditionStatus
		reason, msg                                string // of Available
		versions                                   []configv1.OperandVersion
	}
	v2 := []configv1.OperandVersion{{Name: "operator", Version: "2"}}
	tests := []struct {
		name string
		st   observed
		want want
	}{
		{"not enabled on AWS", observed{platform: "AWS"},
			want{"True", "False", "False", "True", reasonNotEnabled, "not enabled by default on platform AWS", v2}},
		{"opted out on BareMetal", observed{platform: "BareMetal", enabled: true, optedOut: true},
			want{"True", "False", "False", "True", reasonOptedOut, "turned off creating the NMState", v2}},
		{"bad config", observed{platform: "BareMetal", enabled: true, configErr: fmt.Errorf(`autoCreateNMState: "maybe" is neither true nor false`)},
			want{"True", "False", "True", "True", reasonWaitingForNMState, "Waiting", v2}},
		{"deploying: old versions kept", observed{nmstate: nmstate, missing: []string{"DaemonSet knmstate-handler"}},
			want{"False", "True", "False", "False", reasonNotAvailable, "DaemonSet knmstate-handler", old.Versions}},
		{"rolling out but available", observed{nmstate: nmstate, rolling: []string{`DaemonSet "knmstate-handler" update is rolling out (1 out of 3 updated)`}},
			want{"True", "True", "False", "False", reasonAsExpected, "Every component runs", old.Versions}},
		{"all done", observed{nmstate: nmstate},
			want{"True", "False", "False", "False", reasonAsExpected, "Every component runs", append(v2, configv1.OperandVersion{Name: "handler", Version: "2"})}},
		{"apply failed", observed{nmstate: degradedNM},
			want{"True", "False", "True", "False", reasonAsExpected, "", append(v2, configv1.OperandVersion{Name: "handler", Version: "2"})}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conds, versions := coStatus(tc.st, []string{"BareMetal"}, "2", old)
			get := func(typ string) configv1.ClusterOperatorStatusCondition {
				for _, c := range conds {
					if string(c.Type) == typ {
						return c
					}
				}
				t.Fatalf("no %s condition in %+v", typ, conds)
				return configv1.ClusterOperatorStatusCondition{}
			}
			a := get("Available")
			if a.Status != tc.want.available || a.Reason != tc.want.reason || !strings.Contains(a.Message, tc.want.msg) {
				t.Errorf("Available %s %s %q, want %s %s containing %q", a.Status, a.Reason, a.Message, tc.want.available, tc.want.reason, tc.want.msg)
			}
			for typ, s := range map[string]configv1.ConditionStatus{"Progressing": tc.want.progressing, "Degraded": tc.want.degraded, "Disabled": tc.want.disabled, "Upgradeable": "True"} {
				if c := get(typ); c.Status != s || c.Reason == "" || c.Message == "" {
					t.Errorf("%s %s (%s: %q), want %s with a reason and a message", typ, c.Status, c.Reason, c.Message, s)
				}
			}
			if !slices.Equal(versions, tc.want.versions) {
				t.Errorf("versions %v, want %v", versions, tc.want.versions)
			}
		})
	}
}

// startStoppable runs an operator until stop is called (or the test ends).
func startStoppable(t *testing.T, opts Options) (stop func()) {
	t.Helper()
	mgr, stopCerts, err := NewManager(env.Config, opts)
	if err != nil {
		stopCerts()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
		stopCerts()
	}
	t.Cleanup(stop)
	return stop
}

// installOpenShiftCRDs installs config.openshift.io's CRDs in the test
// control plane (for good: other tests do not read them).
func installOpenShiftCRDs(t *testing.T, c client.Client) {
	t.Helper()
	crds, err := openshiftcrd.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, crd := range crds {
		if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("CRD %s: %v", crd.Name, err)
		}
		waitFor(t, "CRD "+crd.Name+" established", func() (bool, string) {
			var got apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
				return false, err.Error()
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, ""
				}
			}
			return false, "not established"
		})
	}
}

// setPlatform makes infrastructure/cluster say the platform.
func setPlatform(t *testing.T, c client.Client, platform configv1.PlatformType) {
	t.Helper()
	ctx := context.Background()
	old := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	if err := c.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitFor(t, "infrastructure/cluster gone", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(old), &configv1.Infrastructure{})
		return apierrors.IsNotFound(err), errString(err)
	})
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	if err := c.Create(ctx, infra); err != nil {
		t.Fatal(err)
	}
	infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: platform}
	infra.Status.ControlPlaneTopology = configv1.HighlyAvailableTopologyMode
	infra.Status.InfrastructureTopology = configv1.HighlyAvailableTopologyMode
	if err := c.Status().Update(ctx, infra); err != nil {
		t.Fatalf("infrastructure status: %v", err)
	}
}

func clusterOperatorCondition(ctx context.Context, c client.Client, typ configv1.ClusterStatusConditionType) (configv1.ClusterOperatorStatusCondition, string) {
	var co configv1.ClusterOperator
	if err := c.Get(ctx, client.ObjectKey{Name: manifest.ClusterOperatorName}, &co); err != nil {
		return configv1.ClusterOperatorStatusCondition{}, err.Error()
	}
	var all []string
	var found configv1.ClusterOperatorStatusCondition
	for _, cond := range co.Status.Conditions {
		all = append(all, fmt.Sprintf("%s=%s %s %q", cond.Type, cond.Status, cond.Reason, cond.Message))
		if cond.Type == typ {
			found = cond
		}
	}
	return found, strings.Join(all, "; ")
}

// OpenShift mode against a real API server: the NMState created by itself
// on BareMetal, the service CA's annotations and the TLS profile on the
// operands, the opt-out sticking across a restart, nothing on AWS until
// someone creates the NMState.
func TestOpenShiftMode(t *testing.T) {
	ctx := context.Background()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	installOpenShiftCRDs(t, c)
	ns := manifest.OpenShiftNamespace
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cleanNMStates := func() {
		var list nmstatev1.NMStateList
		_ = c.List(ctx, &list)
		for i := range list.Items {
			_ = c.Delete(ctx, &list.Items[i])
		}
		waitFor(t, "no NMState left", func() (bool, string) {
			var l nmstatev1.NMStateList
			err := c.List(ctx, &l)
			return err == nil && len(l.Items) == 0, fmt.Sprint(len(l.Items), err)
		})
	}
	t.Cleanup(func() {
		cleanNMStates()
		for _, o := range []client.Object{
			&configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: manifest.ClusterOperatorName}},
			&configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
			&configv1.APIServer{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifest.OperatorConfigName}},
		} {
			_ = c.Delete(ctx, o)
		}
	})
	opts := Options{Namespace: ns, Image: "registry.example/knmstate:os", Version: "v2", ReleaseVersion: "4.99.0",
		OpenShift: true, EnabledPlatforms: []string{"BareMetal"}, Logger: testr.New(t)}

	// BareMetal: the NMState appears by itself, marked as the operator's.
	setPlatform(t, c, configv1.BareMetalPlatformType)
	stop := startStoppable(t, opts)
	waitFor(t, "the NMState created by the operator", func() (bool, string) {
		var nm nmstatev1.NMState
		err := c.Get(ctx, client.ObjectKey{Name: "nmstate"}, &nm)
		return err == nil && nm.Annotations[AutoCreatedAnnotation] == "true", errString(err)
	})
	waitFor(t, "ClusterOperator enabled, deploying (no kubelets here)", func() (bool, string) {
		d, all := clusterOperatorCondition(ctx, c, "Disabled")
		a, _ := clusterOperatorCondition(ctx, c, configv1.OperatorAvailable)
		return d.Status == configv1.ConditionFalse && a.Status == configv1.ConditionFalse && a.Reason == reasonNotAvailable, all
	})
	// The service CA issues the webhook's certificate; the webhook
	// follows the cluster's TLS profile (Intermediate when unset).
	waitFor(t, "webhook Service asking the service CA", func() (bool, string) {
		var svc corev1.Service
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.WebhookName}, &svc)
		return err == nil && svc.Annotations[manifest.ServingCertAnnotation] == manifest.WebhookServingSecret, fmt.Sprint(svc.Annotations, err)
	})
	waitFor(t, "webhook configuration asking for the service CA's bundle", func() (bool, string) {
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		err := c.Get(ctx, client.ObjectKey{Name: webhook.ConfigurationName}, &vwc)
		return err == nil && vwc.Annotations[manifest.InjectCABundleAnnotation] == "true", fmt.Sprint(vwc.Annotations, err)
	})
	webhookArgs := func() []string {
		var d appsv1.Deployment
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.WebhookName}, &d); err != nil {
			return nil
		}
		return d.Spec.Template.Spec.Containers[0].Args
	}
	waitFor(t, "webhook on the Intermediate profile", func() (bool, string) {
		return slices.Contains(webhookArgs(), "--tls-min-version=VersionTLS12"), strings.Join(webhookArgs(), " ")
	})
	api := &configv1.APIServer{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: configv1.APIServerSpec{TLSSecurityProfile: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType}}}
	if err := c.Create(ctx, api); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "webhook on the Modern profile", func() (bool, string) {
		return slices.Contains(webhookArgs(), "--tls-min-version=VersionTLS13"), strings.Join(webhookArgs(), " ")
	})

	// Opting out, then deleting the NMState: it does not come back, not
	// even when the operator restarts.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifest.OperatorConfigName}, Data: map[string]string{"autoCreateNMState": "false"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	cleanNMStates()
	waitFor(t, "ClusterOperator: disabled by the administrator", func() (bool, string) {
		a, all := clusterOperatorCondition(ctx, c, configv1.OperatorAvailable)
		return a.Status == configv1.ConditionTrue && a.Reason == reasonOptedOut, all
	})
	stop()
	// The restarted operator's first reconcile recreates the
	// ClusterOperator, after it decided about the NMState: seeing it back
	// is the end of that reconcile.
	if err := c.Delete(ctx, &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: manifest.ClusterOperatorName}}); err != nil {
		t.Fatal(err)
	}
	startStoppable(t, opts)
	waitFor(t, "ClusterOperator recreated by the restarted operator: disabled by the administrator", func() (bool, string) {
		a, all := clusterOperatorCondition(ctx, c, configv1.OperatorAvailable)
		return a.Status == configv1.ConditionTrue && a.Reason == reasonOptedOut, all
	})
	var list nmstatev1.NMStateList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("opted out, yet %d NMState after a restart", len(list.Items))
	}
	// A value that is neither true nor false is reported, not guessed.
	cm.Data["autoCreateNMState"] = "maybe"
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ClusterOperator Degraded by the bad setting", func() (bool, string) {
		d, all := clusterOperatorCondition(ctx, c, configv1.OperatorDegraded)
		return d.Status == configv1.ConditionTrue && d.Reason == reasonConfigError && strings.Contains(d.Message, `"maybe"`), all
	})
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// Without the opt-out the operator creates it again.
	waitFor(t, "the NMState back once the opt-out is gone", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKey{Name: "nmstate"}, &nmstatev1.NMState{})
		return err == nil, errString(err)
	})

	// AWS: nothing until someone creates the NMState; Available all along.
	// A bad setting (no NMState is created while it is there) covers the
	// time until the operator's cache has the new platform, which the
	// ClusterOperator shows once the NMState is gone.
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: manifest.OperatorConfigName}, Data: map[string]string{"autoCreateNMState": "maybe"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	setPlatform(t, c, configv1.AWSPlatformType)
	cleanNMStates()
	notEnabledOnAWS := func(degraded configv1.ConditionStatus) func() (bool, string) {
		return func() (bool, string) {
			a, all := clusterOperatorCondition(ctx, c, configv1.OperatorAvailable)
			d, _ := clusterOperatorCondition(ctx, c, configv1.OperatorDegraded)
			return a.Status == configv1.ConditionTrue && a.Reason == reasonNotEnabled && strings.Contains(a.Message, "AWS") && d.Status == degraded, all
		}
	}
	waitFor(t, "ClusterOperator: not enabled on AWS, Degraded by the bad setting", notEnabledOnAWS(configv1.ConditionTrue))
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// Degraded clears in the first reconcile without the setting, which
	// decided not to create the NMState before writing it.
	waitFor(t, "ClusterOperator: not enabled on AWS, the setting gone", notEnabledOnAWS(configv1.ConditionFalse))
	if err := c.List(ctx, &list); err != nil || len(list.Items) != 0 {
		t.Fatalf("on AWS: %d NMState (%v)", len(list.Items), err)
	}
	nm := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate"}}
	if err := c.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the operands once the NMState exists (opt-in)", func() (bool, string) {
		var ds appsv1.DaemonSet
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.HandlerName}, &ds)
		return err == nil, errString(err)
	})
	var co configv1.ClusterOperator
	if err := c.Get(ctx, client.ObjectKey{Name: manifest.ClusterOperatorName}, &co); err != nil {
		t.Fatal(err)
	}
	if len(co.Status.RelatedObjects) < 2 {
		t.Errorf("relatedObjects %v", co.Status.RelatedObjects)
	}
}
