package lab

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/internal/manifest"
)

// serviceCA plays OpenShift's service CA operator in a lab that plays
// OpenShift, for what knmstate asks of it: a serving certificate in the
// Secret a Service's annotation names, and the CA bundle injected into
// webhook configurations that ask for it. It polls (a lab has a handful of
// such objects) and writes only what is missing or different.
type serviceCA struct {
	cert  *x509.Certificate
	key   *ecdsa.PrivateKey
	caPEM []byte
	log   *slog.Logger
}

func newServiceCA(log *slog.Logger) (*serviceCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("openshift-service-serving-signer@%d", now.Unix())},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &serviceCA{cert: cert, key: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), log: log}, nil
}

// issue signs a serving certificate for a Service's DNS names.
func (s *serviceCA) issue(names []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(2 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.cert, key.Public(), s.key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// run syncs until ctx ends.
func (s *serviceCA) run(ctx context.Context, kube kubernetes.Interface) {
	for {
		if err := s.sync(ctx, kube); err != nil && ctx.Err() == nil {
			s.log.Warn("service CA", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *serviceCA) sync(ctx context.Context, kube kubernetes.Interface) error {
	svcs, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, svc := range svcs.Items {
		name := svc.Annotations[manifest.ServingCertAnnotation]
		if name == "" {
			continue
		}
		_, err := kube.CoreV1().Secrets(svc.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil || !apierrors.IsNotFound(err) {
			continue
		}
		crt, key, err := s.issue([]string{svc.Name + "." + svc.Namespace + ".svc", svc.Name + "." + svc.Namespace + ".svc.cluster.local"})
		if err != nil {
			return err
		}
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: name, Annotations: map[string]string{
				"service.beta.openshift.io/originating-service-name": svc.Name,
			}},
			Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key},
		}
		if _, err := kube.CoreV1().Secrets(svc.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("serving certificate %s/%s: %w", svc.Namespace, name, err)
		}
		s.log.Info("service CA issued a serving certificate", "service", svc.Namespace+"/"+svc.Name, "secret", name)
	}
	vwcs, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range vwcs.Items {
		c := &vwcs.Items[i]
		if c.Annotations[manifest.InjectCABundleAnnotation] != "true" {
			continue
		}
		changed := false
		for j := range c.Webhooks {
			if !bytes.Equal(c.Webhooks[j].ClientConfig.CABundle, s.caPEM) {
				c.Webhooks[j].ClientConfig.CABundle, changed = s.caPEM, true
			}
		}
		if changed {
			if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("CA bundle of %s: %w", c.Name, err)
			}
		}
	}
	mwcs, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range mwcs.Items {
		c := &mwcs.Items[i]
		if c.Annotations[manifest.InjectCABundleAnnotation] != "true" {
			continue
		}
		changed := false
		for j := range c.Webhooks {
			if !bytes.Equal(c.Webhooks[j].ClientConfig.CABundle, s.caPEM) {
				c.Webhooks[j].ClientConfig.CABundle, changed = s.caPEM, true
			}
		}
		if changed {
			if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("CA bundle of %s: %w", c.Name, err)
			}
		}
	}
	return nil
}
