package certs

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestChooseIssuer(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		installed   bool
		want        Issuer
		reason      bool
	}{
		{"not asked", nil, true, SelfSigned, false},
		{"asked and installed", map[string]string{CertManagerAnnotation: "true"}, true, CertManager, false},
		{"asked, not installed: self-signed, with a reason", map[string]string{CertManagerAnnotation: "true"}, false, SelfSigned, true},
		{"anything but true is no", map[string]string{CertManagerAnnotation: "yes"}, true, SelfSigned, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := ChooseIssuer(tc.annotations, tc.installed)
			if got != tc.want || (reason != "") != tc.reason {
				t.Errorf("ChooseIssuer = %v, %q; want %v (reason: %v)", got, reason, tc.want, tc.reason)
			}
		})
	}
}

// The objects cert-manager gets, in full: a reviewer reads this.
func TestCertManagerObjects(t *testing.T) {
	cfg := Config{Namespace: "nmstate", Labels: map[string]string{"app": "kubernetes-nmstate"},
		Intervals: Intervals{CARotate: 8760 * time.Hour, CAOverlap: 24 * time.Hour, CertRotate: 4380 * time.Hour, CertOverlap: 24 * time.Hour}}
	var got []string
	for _, o := range CertManagerObjects(cfg) {
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	want := []string{`apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  labels:
    app: kubernetes-nmstate
  name: knmstate-webhook-selfsigned
  namespace: nmstate
spec:
  selfSigned: {}
`, `apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  labels:
    app: kubernetes-nmstate
  name: knmstate-webhook-ca
  namespace: nmstate
spec:
  commonName: knmstate-webhook-ca
  duration: 8760h0m0s
  isCA: true
  issuerRef:
    group: cert-manager.io
    kind: Issuer
    name: knmstate-webhook-selfsigned
  privateKey:
    algorithm: ECDSA
    rotationPolicy: Always
    size: 256
  renewBefore: 24h0m0s
  secretName: knmstate-webhook-ca
  secretTemplate:
    labels:
      app: kubernetes-nmstate
`, `apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  labels:
    app: kubernetes-nmstate
  name: knmstate-webhook-ca
  namespace: nmstate
spec:
  ca:
    secretName: knmstate-webhook-ca
`, `apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  labels:
    app: kubernetes-nmstate
  name: knmstate-webhook
  namespace: nmstate
spec:
  commonName: knmstate-webhook.nmstate.svc
  dnsNames:
  - knmstate-webhook.nmstate.svc
  - knmstate-webhook
  - knmstate-webhook.nmstate
  - knmstate-webhook.nmstate.svc.cluster.local
  duration: 4380h0m0s
  issuerRef:
    group: cert-manager.io
    kind: Issuer
    name: knmstate-webhook-ca
  privateKey:
    algorithm: ECDSA
    rotationPolicy: Always
    size: 256
  renewBefore: 24h0m0s
  secretName: knmstate-webhook-serving-cert
  secretTemplate:
    labels:
      app: kubernetes-nmstate
  usages:
  - server auth
  - digital signature
`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if got := cfg.InjectCAFrom(); got != "nmstate/knmstate-webhook" {
		t.Errorf("InjectCAFrom = %q", got)
	}
}
