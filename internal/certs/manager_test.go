package certs_test

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/internal/certs"
)

// The manager issues, injects and keeps: a caBundle someone changes is
// restored, a deleted serving Secret comes back, and a lost CA Secret is
// replaced without dropping the CA of the certificate still served.
func TestManagerKeepsTrust(t *testing.T) {
	kube, cfg, _ := run(t, certs.Config{Namespace: unique("keep")})
	ctx := t.Context()
	var first *corev1.Secret
	eventually(t, "certificates issued, bundle injected", func() error {
		var err error
		if first, err = kube.CoreV1().Secrets(cfg.Namespace).Get(ctx, cfg.ServingSecret, metav1.GetOptions{}); err != nil {
			return err
		}
		return injected(t, kube, cfg)()
	})

	v, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, cfg.Namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v.Webhooks[0].ClientConfig.CABundle = []byte("someone else's")
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bundle re-injected", injected(t, kube, cfg))

	if err := kube.CoreV1().Secrets(cfg.Namespace).Delete(ctx, cfg.ServingSecret, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "serving Secret re-created", func() error {
		s, err := kube.CoreV1().Secrets(cfg.Namespace).Get(ctx, cfg.ServingSecret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if bytes.Equal(s.Data["tls.crt"], first.Data["tls.crt"]) {
			return fmt.Errorf("same certificate")
		}
		return nil
	})

	served, err := kube.CoreV1().Secrets(cfg.Namespace).Get(ctx, cfg.ServingSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldCA := served.Data[certs.CABundleKey]
	if err := kube.CoreV1().Secrets(cfg.Namespace).Delete(ctx, cfg.CASecret, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "new CA, old one kept in the bundle", func() error {
		s, err := kube.CoreV1().Secrets(cfg.Namespace).Get(ctx, cfg.CASecret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if bytes.Equal(s.Data["tls.crt"], oldCA) {
			return fmt.Errorf("same CA")
		}
		if n := len(pemCerts(s.Data[certs.CABundleKey])); n != 2 || !bytes.Contains(s.Data[certs.CABundleKey], oldCA) {
			return fmt.Errorf("bundle of %d certificates, want the new CA and the served certificate's", n)
		}
		return injected(t, kube, cfg)()
	})
}

func pemCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// With cert-manager asked for and its CRDs installed, the manager writes
// cert-manager's objects and the cainjector annotation, and no Secret or
// caBundle of its own; switching back removes both and the self-signed
// path takes over. (cert-manager itself cannot run here: no images; its
// CRDs are stand-ins accepting any content.)
func TestCertManagerMode(t *testing.T) {
	d := discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	if !certManagerCRDsInstalled(t) { // the first run of this test
		if ok, err := certs.CertManagerInstalled(d); err != nil || ok {
			t.Fatalf("CertManagerInstalled before the CRDs = %v, %v; want false", ok, err)
		}
	}
	installCertManagerCRDs(t)
	eventually(t, "cert-manager.io/v1 served", func() error {
		d := discovery.NewDiscoveryClientForConfigOrDie(env.Config) // no cached discovery
		if ok, err := certs.CertManagerInstalled(d); err != nil || !ok {
			return fmt.Errorf("installed = %v, %v", ok, err)
		}
		return nil
	})
	issuer, reason := certs.ChooseIssuer(map[string]string{certs.CertManagerAnnotation: "true"}, true)
	if issuer != certs.CertManager || reason != "" {
		t.Fatalf("ChooseIssuer = %v, %q", issuer, reason)
	}

	base := certs.Config{Namespace: unique("cm"), Issuer: certs.CertManager}
	kube, cfg, stopCM := run(t, base)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	gvr := func(r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: r}
	}
	eventually(t, "cert-manager objects and annotations", func() error {
		for _, o := range certs.CertManagerObjects(cfg) {
			r := map[string]string{"Issuer": "issuers", "Certificate": "certificates"}[o.GetKind()]
			got, err := dyn.Resource(gvr(r)).Namespace(cfg.Namespace).Get(t.Context(), o.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if fmt.Sprint(got.Object["spec"]) != fmt.Sprint(o.Object["spec"]) {
				return fmt.Errorf("%s %s spec %v, want %v", o.GetKind(), o.GetName(), got.Object["spec"], o.Object["spec"])
			}
		}
		return annotated(t, kube, cfg.Namespace, cfg.InjectCAFrom())
	})
	for _, name := range []string{cfg.CASecret, cfg.ServingSecret} {
		if _, err := kube.CoreV1().Secrets(cfg.Namespace).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s with cert-manager: %v, want none (cert-manager writes it)", name, err)
		}
	}
	for i, b := range bundles(t, kube, cfg.Namespace) {
		if len(b) != 0 {
			t.Errorf("webhook %d has a caBundle with cert-manager (cainjector's job)", i)
		}
	}

	// Back to self-signed.
	stopCM()
	base.Issuer = certs.SelfSigned
	kube, cfg, _ = run(t, base)
	eventually(t, "self-signed again", func() error {
		if err := annotated(t, kube, cfg.Namespace, ""); err != nil {
			return err
		}
		for _, o := range certs.CertManagerObjects(cfg) {
			r := map[string]string{"Issuer": "issuers", "Certificate": "certificates"}[o.GetKind()]
			if _, err := dyn.Resource(gvr(r)).Namespace(cfg.Namespace).Get(t.Context(), o.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %s still there: %v", o.GetKind(), o.GetName(), err)
			}
		}
		return injected(t, kube, cfg)()
	})
}

// annotated checks the cainjector annotation of both configurations
// ("" for none).
func annotated(t *testing.T, kube kubernetes.Interface, name, want string) error {
	t.Helper()
	v, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	m, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, a := range []map[string]string{v.Annotations, m.Annotations} {
		if got := a[certs.InjectCAAnnotation]; got != want {
			return fmt.Errorf("%s = %q, want %q", certs.InjectCAAnnotation, got, want)
		}
	}
	return nil
}
