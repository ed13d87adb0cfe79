package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// SecretSource serves the certificate of a kubernetes.io/tls Secret to a
// TLS server (tls.Config.GetCertificate), watching the Secret through the
// API: a rotated certificate is served at the next handshake, without
// waiting for the kubelet to refresh a mounted volume (a minute or more),
// so the certificate manager can rotate without a failed request.
//
// A Secret that is deleted or holds an unusable certificate leaves the last
// good certificate in service.
type SecretSource struct {
	client          kubernetes.Interface
	namespace, name string
	log             logr.Logger
	cert            atomic.Pointer[tls.Certificate]
}

// NewSecretSource returns a source for Secret namespace/name; Start runs
// it.
func NewSecretSource(client kubernetes.Interface, namespace, name string, log logr.Logger) *SecretSource {
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	return &SecretSource{client: client, namespace: namespace, name: name, log: log}
}

// Start watches the Secret until ctx ends.
func (s *SecretSource) Start(ctx context.Context) error {
	watchNamed(ctx, s.client.CoreV1().Secrets(s.namespace), &corev1.Secret{}, s.name, func(obj any) {
		secret, ok := obj.(*corev1.Secret)
		if !ok {
			s.log.Info("serving certificate Secret deleted; keeping the last certificate", "secret", s.namespace+"/"+s.name)
			return
		}
		cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			s.log.Error(err, "unusable serving certificate; keeping the last one", "secret", s.namespace+"/"+s.name)
			return
		}
		if prev := s.cert.Swap(&cert); prev == nil || !prev.Leaf.Equal(cert.Leaf) {
			s.log.Info("serving certificate loaded", "secret", s.namespace+"/"+s.name,
				"serial", cert.Leaf.SerialNumber.String(), "notAfter", cert.Leaf.NotAfter)
		}
	})
	<-ctx.Done()
	return nil
}

// GetCertificate returns the current certificate.
func (s *SecretSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.cert.Load(); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no serving certificate yet (Secret %s/%s)", s.namespace, s.name)
}

// Ready reports whether a certificate is loaded.
func (s *SecretSource) Ready() error {
	if s.cert.Load() == nil {
		return errors.New("no serving certificate loaded yet")
	}
	return nil
}
