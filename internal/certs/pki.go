package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Secret keys: a kubernetes.io/tls Secret's own, plus ca.crt as
// cert-manager writes it.
const (
	// CABundleKey holds, in the CA Secret, the CA bundle (the current CA
	// first, then older ones until they expire); in the serving Secret,
	// the CA that signed the certificate.
	CABundleKey = "ca.crt"
)

// backdate is how far before their issue certificates start to be valid,
// for clocks slightly behind the issuer's.
const backdate = time.Minute

// keyPair is a parsed certificate and its private key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// parseKeyPair reads a kubernetes.io/tls Secret's certificate (the first
// of tls.crt) and key, and checks that they belong together.
func parseKeyPair(s *corev1.Secret) (keyPair, error) {
	if s == nil {
		return keyPair{}, errors.New("missing")
	}
	certs, err := parseCerts(s.Data[corev1.TLSCertKey])
	if err != nil {
		return keyPair{}, fmt.Errorf("%s: %w", corev1.TLSCertKey, err)
	}
	block, _ := pem.Decode(s.Data[corev1.TLSPrivateKeyKey])
	if block == nil {
		return keyPair{}, fmt.Errorf("%s: no PEM block", corev1.TLSPrivateKeyKey)
	}
	key, err := parseKey(block.Bytes)
	if err != nil {
		return keyPair{}, fmt.Errorf("%s: %w", corev1.TLSPrivateKeyKey, err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(certs[0].PublicKey) {
		return keyPair{}, errors.New("the key does not match the certificate")
	}
	return keyPair{cert: certs[0], key: key}, nil
}

func parseKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, errors.New("unsupported key type")
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("not a PKCS#8, EC or PKCS#1 private key")
}

// parseCerts reads every CERTIFICATE block of a PEM text; at least one.
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no certificate")
	}
	return out, nil
}

// encodeCerts writes certificates as one PEM text.
func encodeCerts(certs ...*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

func encodeKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encoding the key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// newCA makes a self-signed CA valid from now (backdated) for validity.
func newCA(name string, now time.Time, validity time.Duration) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return keyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", name, now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return keyPair{}, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, fmt.Errorf("CA certificate: %w", err)
	}
	return keyPair{cert: cert, key: key}, nil
}

// issue makes a serving certificate for names (DNS names and IP
// addresses) signed by ca, valid from now (backdated) until notAfter.
func issue(ca keyPair, names []string, now, notAfter time.Time) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("serving key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return keyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("serving certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, fmt.Errorf("serving certificate: %w", err)
	}
	return keyPair{cert: cert, key: key}, nil
}

// certNames are the names a certificate is valid for, DNS names then IP
// addresses, as issue orders them.
func certNames(c *x509.Certificate) []string {
	out := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

// signedBy reports whether ca signed c.
func signedBy(c, ca *x509.Certificate) bool {
	return c.CheckSignatureFrom(ca) == nil
}
