package certs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/knmstate/knmstate/internal/certs"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
	"github.com/knmstate/knmstate/internal/webhook"
)

var (
	env  *testenv.Env
	runs atomic.Int64
)

// unique makes a namespace name unique in the test binary's run.
func unique(name string) string { return fmt.Sprintf("%s-%d", name, runs.Add(1)) }

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	os.Exit(testenv.RunMain(m, &env))
}

// run starts a manager for cfg (in a namespace created on first use), as a user holding
// exactly certs.Rules(cfg), with both webhook configurations (named after
// the namespace) present, and stops it when the test ends.
func run(t *testing.T, cfg certs.Config) (kubernetes.Interface, certs.Config, func()) {
	t.Helper()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := kube.CoreV1().Namespaces().Get(ctx, cfg.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		// First use in this run (namespaces never finish deleting here, so
		// tests pass one made unique by unique()).
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ep := webhook.Endpoint{URL: "https://127.0.0.1:1"}
		v, m := webhook.ValidatingConfiguration(ep), webhook.MutatingConfiguration(ep)
		v.Name, m.Name = cfg.Namespace, cfg.Namespace
		// Never called: no policy is created in these tests.
		if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), v.Name, metav1.DeleteOptions{})
			_ = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), m.Name, metav1.DeleteOptions{})
		})
	}
	cfg.ValidatingConfigs = []string{cfg.Namespace}
	cfg.MutatingConfigs = []string{cfg.Namespace}
	cfg = cfg.WithDefaults()
	user := fmt.Sprintf("certs-%s-%s-%d", cfg.Namespace, strings.ToLower(string(cfg.Issuer)), runs.Add(1))
	grant(t, kube, cfg, user)
	uc, err := env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := certs.New(kubernetes.NewForConfigOrDie(uc), dynamic.NewForConfigOrDie(uc), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return kube, cfg, stop
}

// grant gives user exactly certs.Rules(cfg).
func grant(t *testing.T, kube kubernetes.Interface, cfg certs.Config, user string) {
	t.Helper()
	ctx := context.Background()
	namespaced, cluster := certs.Rules(cfg)
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user, APIGroup: rbacv1.GroupName}}
	if _, err := kube.RbacV1().Roles(cfg.Namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: namespaced}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(cfg.Namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: cluster}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it returns nil or 20 s pass.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// bundles returns the caBundles of every webhook of both configurations.
func bundles(t *testing.T, kube kubernetes.Interface, name string) [][]byte {
	t.Helper()
	var out [][]byte
	v, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	m, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// injected succeeds when every webhook holds the CA Secret's bundle.
func injected(t *testing.T, kube kubernetes.Interface, cfg certs.Config) func() error {
	return func() error {
		s, err := kube.CoreV1().Secrets(cfg.Namespace).Get(t.Context(), cfg.CASecret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i, b := range bundles(t, kube, cfg.Namespace) {
			if !bytes.Equal(b, s.Data[certs.CABundleKey]) {
				return fmt.Errorf("webhook %d: caBundle %d bytes, want the CA Secret's %d", i, len(b), len(s.Data[certs.CABundleKey]))
			}
		}
		return nil
	}
}

// certManagerCRDsInstalled reports whether an earlier run installed them.
func certManagerCRDsInstalled(t *testing.T) bool {
	t.Helper()
	_, err := apiextensions.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "certificates.cert-manager.io", metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// installCertManagerCRDs installs stand-ins of cert-manager's Issuer and
// Certificate CRDs (cert-manager.io/v1, any content): what the manager
// needs to find and write; nothing acts on them here.
func installCertManagerCRDs(t *testing.T) {
	t.Helper()
	ext := apiextensions.NewForConfigOrDie(env.Config)
	for _, kind := range []string{"Issuer", "Certificate"} {
		plural := map[string]string{"Issuer": "issuers", "Certificate": "certificates"}[kind]
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".cert-manager.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "cert-manager.io",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: map[string]string{"Issuer": "issuer", "Certificate": "certificate"}[kind]},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptrTo(true)}}}},
			},
		}
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
