package webhook_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/knmstate/knmstate/api/shared"
	nmv1 "github.com/knmstate/knmstate/api/v1"
	nmv1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/certs"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
	"github.com/knmstate/knmstate/internal/webhook"
)

var (
	env  *testenv.Env
	runs atomic.Int64
)

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	os.Exit(testenv.RunMain(m, &env))
}

// fixture is a running webhook server and certificate manager, each with
// its own least-privilege identity (the RBAC rules of webhook.Rules and
// certs.Rules, nothing more), the webhook configurations pointing at the
// server by URL, and an admin client for policies.
type fixture struct {
	ns     string
	admin  client.Client
	kube   kubernetes.Interface
	cancel context.CancelFunc
	done   chan struct{}
	url    string
	health string // base URL of the plain-HTTP probes
}

// testIntervals rotate in seconds: a CA every 6 s (valid 12 s), a serving
// certificate every 3 s (valid 6 s).
var testIntervals = certs.Intervals{CARotate: 12 * time.Second, CAOverlap: 6 * time.Second, CertRotate: 6 * time.Second, CertOverlap: 3 * time.Second}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{nmv1.AddToScheme, nmv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// start runs the webhook and the certificate manager until the test ends,
// and waits until a policy passes both webhooks.
func start(t *testing.T, ns string, cfg certs.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	// Namespaces never finish deleting here (no namespace controller):
	// each run takes a new one.
	ns = fmt.Sprintf("%s-%d", ns, runs.Add(1))
	admin, err := client.New(env.Config, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	health := hln.Addr().String()
	hln.Close() // free again for the server (a small race with other programs)
	f := &fixture{ns: ns, admin: admin, kube: kube, done: make(chan struct{}), url: "https://" + ln.Addr().String(), health: "http://" + health}

	cfg.Namespace = ns
	cfg.ExtraNames = append(cfg.ExtraNames, "127.0.0.1")
	cfg.ValidatingConfigs = []string{webhook.ConfigurationName}
	cfg.MutatingConfigs = []string{webhook.ConfigurationName}
	certsCfg := identity(t, kube, ns, "knmstate-certs", cfg)
	webhookCfg := identity(t, kube, ns, "knmstate-webhook", certs.Config{})

	mgr, err := certs.New(kubernetes.NewForConfigOrDie(certsCfg), dynamic.NewForConfigOrDie(certsCfg), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	f.cancel = cancel
	errs := make(chan error, 2)
	go func() { errs <- mgr.Start(runCtx) }()
	go func() {
		errs <- webhook.Run(runCtx, webhook.Options{Client: kubernetes.NewForConfigOrDie(webhookCfg),
			SecretNamespace: ns, SecretName: cfg.WithDefaults().ServingSecret, Listener: ln, HealthProbeBindAddress: health})
	}()
	go func() {
		for range 2 {
			if err := <-errs; err != nil {
				t.Errorf("stopped: %v", err)
			}
		}
		close(f.done)
	}()
	ep := webhook.Endpoint{URL: f.url}
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, webhook.ValidatingConfiguration(ep), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, webhook.MutatingConfiguration(ep), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stop)
	f.waitReady(t)
	return f
}

// stop ends the server and the manager and removes the configurations,
// so that the next test's policies meet no webhook.
func (f *fixture) stop() {
	f.cancel()
	<-f.done
	ctx := context.Background()
	_ = f.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, webhook.ConfigurationName, metav1.DeleteOptions{})
	_ = f.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, webhook.ConfigurationName, metav1.DeleteOptions{})
	_ = f.kube.CoreV1().Namespaces().Delete(ctx, f.ns, metav1.DeleteOptions{})
}

// waitReady waits until a (dry-run) policy create passes the validation
// and comes back stamped by the mutation: certificates issued, bundle
// injected, server serving.
func (f *fixture) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		p := policy("ready-probe", ethernet("eth1"))
		last = f.admin.Create(t.Context(), p, client.DryRunAll)
		if last == nil && p.Annotations[shared.WebhookMutatingTimestampAnnotation] != "" {
			f.checkProbes(t)
			return
		}
		if last == nil {
			last = fmt.Errorf("no timestamp annotation: the mutating webhook was not reached")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("webhook not ready after 30 s: %v", last)
}

// checkProbes checks /healthz and /readyz over HTTPS and plain HTTP.
func (f *fixture) checkProbes(t *testing.T) {
	t.Helper()
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, u := range []string{f.url + "/healthz", f.url + "/readyz", f.health + "/healthz", f.health + "/readyz"} {
		resp, err := insecure.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", u, resp.Status)
		}
	}
}

// identity creates a user with exactly the component's RBAC rules and
// returns its client configuration: the certificate manager's (cfg with
// a namespace) or the webhook server's (zero cfg).
func identity(t *testing.T, kube kubernetes.Interface, ns, user string, cfg certs.Config) *rest.Config {
	t.Helper()
	ctx := context.Background()
	var namespaced, cluster []rbacv1.PolicyRule
	if cfg.Namespace != "" {
		namespaced, cluster = certs.Rules(cfg)
	} else {
		namespaced = webhook.Rules(certs.Config{}.WithDefaults().ServingSecret)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user, APIGroup: rbacv1.GroupName}}
	name := user + "-" + ns
	if _, err := kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: namespaced}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(cluster) > 0 {
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: cluster}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	c, err := env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Policy builders.

type policyOpt func(*shared.NodeNetworkConfigurationPolicySpec)

func policy(name string, opts ...policyOpt) *nmv1.NodeNetworkConfigurationPolicy {
	p := &nmv1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(&p.Spec)
	}
	return p
}

func state(doc string) policyOpt {
	return func(s *shared.NodeNetworkConfigurationPolicySpec) {
		st, err := shared.NewState([]byte(doc))
		if err != nil {
			panic(err)
		}
		s.DesiredState = st
	}
}

func ethernet(name string) policyOpt {
	return state(`{"interfaces":[{"name":"` + name + `","type":"ethernet","state":"up"}]}`)
}

func capture(name, expr string) policyOpt {
	return func(s *shared.NodeNetworkConfigurationPolicySpec) {
		if s.Capture == nil {
			s.Capture = map[string]string{}
		}
		s.Capture[name] = expr
	}
}

func nmv1GVK(kind string) schema.GroupVersionKind { return nmv1.GroupVersion.WithKind(kind) }
