package certs

import (
	"crypto/x509"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

var (
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names = []string{"svc.ns.svc", "svc", "svc.ns", "svc.ns.svc.cluster.local"}
	short = Intervals{CARotate: 100 * time.Hour, CAOverlap: 10 * time.Hour, CertRotate: 50 * time.Hour, CertOverlap: 5 * time.Hour}
)

const propagation = time.Minute

// Fixtures: CAs and certificates issued at given times (builders, so that
// each case reads as its situation).

func mkCA(t *testing.T, at time.Time) keyPair {
	t.Helper()
	ca, err := newCA("svc-ca", at, short.CARotate)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mkCert(t *testing.T, ca keyPair, at time.Time, validity time.Duration, n ...string) keyPair {
	t.Helper()
	if n == nil {
		n = names
	}
	notAfter := at.Add(validity)
	if ca.cert.NotAfter.Before(notAfter) {
		notAfter = ca.cert.NotAfter
	}
	c, err := issue(ca, n, at, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tlsSecret(t *testing.T, kp keyPair, bundle ...*x509.Certificate) *corev1.Secret {
	t.Helper()
	key, err := encodeKey(kp.key)
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{
		corev1.TLSCertKey: encodeCerts(kp.cert), corev1.TLSPrivateKeyKey: key,
	}}
	if bundle != nil {
		s.Data[CABundleKey] = encodeCerts(bundle...)
	}
	return s
}

func config(name string, bundles ...[]byte) WebhookBundles {
	return WebhookBundles{ConfigRef: ConfigRef{Validating, name}, Found: true, Bundles: bundles}
}

func input(now time.Time, ca, serving *corev1.Secret, configs ...WebhookBundles) Input {
	return Input{Now: now, Intervals: short, Propagation: propagation, Names: names, CASecret: ca, ServingSecret: serving, Configs: configs}
}

// summary is what a test compares of a decision: the action, the reason,
// the certificates of the bundle (by common name), the targets, the CA
// that signs and the times.
type summary struct {
	Action   string
	Reason   string
	Bundle   []string
	Targets  []string
	CA       string
	NotAfter time.Time
	Wake     time.Time
}

func summarize(d Decision) summary {
	s := summary{Action: d.Action.String(), Reason: d.Reason, NotAfter: d.NotAfter, Wake: d.Wake}
	if certs, err := parseCerts(d.Bundle); err == nil {
		for _, c := range certs {
			s.Bundle = append(s.Bundle, c.Subject.CommonName)
		}
	}
	for _, r := range d.Targets {
		s.Targets = append(s.Targets, r.String())
	}
	if d.CA.cert != nil {
		s.CA = d.CA.cert.Subject.CommonName
	}
	return s
}

func cn(kp keyPair) string { return kp.cert.Subject.CommonName }

func TestDecide(t *testing.T) {
	ca1 := mkCA(t, t0)
	ca2 := mkCA(t, t0.Add(90*time.Hour)) // ca1's successor, issued at its rotation
	cert1 := mkCert(t, ca1, t0, short.CertRotate)
	bundle1 := encodeCerts(ca1.cert)
	bundle21 := encodeCerts(ca2.cert, ca1.cert)
	other := mkCA(t, t0)

	for _, tc := range []struct {
		name string
		in   Input
		want summary
	}{{
		name: "nothing yet: a CA first",
		in:   input(t0, nil, nil),
		want: summary{Action: "IssueCA", Reason: "no valid CA: missing"},
	}, {
		name: "a CA: the serving certificate, for CertRotate",
		in:   input(t0, tlsSecret(t, ca1, ca1.cert), nil),
		want: summary{Action: "IssueCert", Reason: "no valid serving certificate: missing", CA: cn(ca1), NotAfter: t0.Add(50 * time.Hour)},
	}, {
		name: "the bundle goes into every configuration that differs",
		in: input(t0, tlsSecret(t, ca1, ca1.cert), tlsSecret(t, cert1),
			config("same", bundle1, bundle1), config("differs", bundle1, nil), WebhookBundles{ConfigRef: ConfigRef{Mutating, "absent"}}),
		want: summary{Action: "Inject", Reason: "caBundle differs", Bundle: []string{cn(ca1)}, Targets: []string{"ValidatingWebhookConfiguration/differs"}},
	}, {
		name: "all in place: wait for the serving certificate's renewal",
		in:   input(t0.Add(time.Hour), tlsSecret(t, ca1, ca1.cert), tlsSecret(t, cert1), config("c", bundle1)),
		want: summary{Action: "Wait", Wake: t0.Add(45 * time.Hour)},
	}, {
		name: "serving certificate due: CertOverlap before it expires",
		in:   input(t0.Add(45*time.Hour), tlsSecret(t, ca1, ca1.cert), tlsSecret(t, cert1), config("c", bundle1)),
		want: summary{Action: "IssueCert", Reason: "serving certificate expires at 2026-01-03T02:00:00Z", CA: cn(ca1), NotAfter: t0.Add(95 * time.Hour)},
	}, {
		name: "a certificate that ends with its CA is not renewed early: the CA's rotation replaces it",
		in:   input(t0.Add(88*time.Hour), tlsSecret(t, ca1, ca1.cert), tlsSecret(t, mkCert(t, ca1, t0.Add(60*time.Hour), short.CertRotate)), config("c", bundle1)),
		want: summary{Action: "Wait", Wake: t0.Add(90 * time.Hour)},
	}, {
		name: "CA due: CAOverlap before it expires, the old CA stays in the bundle",
		in:   input(t0.Add(90*time.Hour), tlsSecret(t, ca1, ca1.cert), tlsSecret(t, cert1), config("c", bundle1)),
		want: summary{Action: "IssueCA", Reason: "CA expires at 2026-01-05T04:00:00Z", Bundle: []string{cn(ca1)}},
	}, {
		name: "new CA not yet trusted everywhere: inject first",
		in:   input(t0.Add(90*time.Hour), tlsSecret(t, ca2, ca2.cert, ca1.cert), tlsSecret(t, mkCert(t, ca1, t0.Add(60*time.Hour), short.CertRotate)), config("c", bundle1)),
		want: summary{Action: "Inject", Reason: "caBundle differs", Bundle: []string{cn(ca2), cn(ca1)}, Targets: []string{"ValidatingWebhookConfiguration/c"}},
	}, {
		name: "new CA injected: the certificate of the old one stays during Propagation",
		in:   input(t0.Add(90*time.Hour), tlsSecret(t, ca2, ca2.cert, ca1.cert), tlsSecret(t, mkCert(t, ca1, t0.Add(60*time.Hour), short.CertRotate)), config("c", bundle21)),
		want: summary{Action: "Wait", Reason: "new CA propagating", Wake: t0.Add(90*time.Hour + propagation)},
	}, {
		name: "then a certificate of the new CA",
		in:   input(t0.Add(90*time.Hour+propagation), tlsSecret(t, ca2, ca2.cert, ca1.cert), tlsSecret(t, mkCert(t, ca1, t0.Add(60*time.Hour), short.CertRotate)), config("c", bundle21)),
		want: summary{Action: "IssueCert", Reason: "serving certificate signed by the previous CA", CA: cn(ca2), NotAfter: t0.Add(140*time.Hour + propagation)},
	}, {
		name: "the old CA leaves the bundle when it expires",
		in:   input(t0.Add(100*time.Hour), tlsSecret(t, ca2, ca2.cert, ca1.cert), tlsSecret(t, mkCert(t, ca2, t0.Add(91*time.Hour), short.CertRotate)), config("c", bundle21)),
		want: summary{Action: "WriteBundle", Reason: "CA bundle outdated", Bundle: []string{cn(ca2)}},
	}, {
		name: "intervals shortened: a CA valid longer than caRotateInterval is replaced at once",
		in: func() Input {
			long, err := newCA("svc-ca", t0, DefaultIntervals.CARotate)
			if err != nil {
				t.Fatal(err)
			}
			return input(t0.Add(time.Hour), tlsSecret(t, long, long.cert), tlsSecret(t, mkCert(t, long, t0, DefaultIntervals.CertRotate)), config("c", encodeCerts(long.cert)))
		}(),
		want: summary{Action: "IssueCA", Reason: "CA valid until 2027-01-01T00:00:00Z, longer than caRotateInterval 100h0m0s", Bundle: []string{"svc-ca@1767225600"}},
	}, {
		name: "intervals shortened: a serving certificate valid longer than certRotateInterval is replaced at once",
		in:   input(t0.Add(time.Hour), tlsSecret(t, ca1, ca1.cert), tlsSecret(t, mkCert(t, ca1, t0, 99*time.Hour)), config("c", bundle1)),
		want: summary{Action: "IssueCert", Reason: "serving certificate valid until 2026-01-05T03:00:00Z, longer than certRotateInterval 50h0m0s", CA: cn(ca1), NotAfter: t0.Add(51 * time.Hour)},
	}, {
		name: "a bundle without the current CA is repaired",
		in:   input(t0, tlsSecret(t, ca1), nil),
		want: summary{Action: "WriteBundle", Reason: "CA bundle outdated", Bundle: []string{cn(ca1)}},
	}, {
		name: "wrong names",
		in:   input(t0.Add(time.Hour), tlsSecret(t, ca1, ca1.cert), tlsSecret(t, mkCert(t, ca1, t0, short.CertRotate, "other.ns.svc")), config("c", bundle1)),
		want: summary{Action: "IssueCert", Reason: "serving certificate names [other.ns.svc], want [svc.ns.svc svc svc.ns svc.ns.svc.cluster.local]", CA: cn(ca1), NotAfter: t0.Add(51 * time.Hour)},
	}, {
		name: "a key that does not match",
		in: func() Input {
			s := tlsSecret(t, cert1)
			s.Data[corev1.TLSPrivateKeyKey] = tlsSecret(t, ca1).Data[corev1.TLSPrivateKeyKey]
			return input(t0.Add(time.Hour), tlsSecret(t, ca1, ca1.cert), s, config("c", bundle1))
		}(),
		want: summary{Action: "IssueCert", Reason: "no valid serving certificate: the key does not match the certificate", CA: cn(ca1), NotAfter: t0.Add(51 * time.Hour)},
	}, {
		name: "expired",
		in:   input(t0.Add(60*time.Hour), tlsSecret(t, ca1, ca1.cert), tlsSecret(t, cert1), config("c", bundle1)),
		want: summary{Action: "IssueCert", Reason: "serving certificate expired", CA: cn(ca1), NotAfter: t0.Add(100 * time.Hour)},
	}, {
		name: "a certificate no CA of the bundle signed is replaced at once",
		in:   input(t0.Add(time.Hour), tlsSecret(t, ca1, ca1.cert), tlsSecret(t, mkCert(t, other, t0, short.CertRotate)), config("c", bundle1)),
		want: summary{Action: "IssueCert", Reason: "serving certificate not signed by a CA of the bundle", CA: cn(ca1), NotAfter: t0.Add(51 * time.Hour)},
	}, {
		name: "the CA Secret lost: the served certificate's CA, still injected, stays trusted",
		in:   input(t0.Add(time.Hour), nil, tlsSecret(t, cert1), config("c", bundle1)),
		want: summary{Action: "IssueCA", Reason: "no valid CA: missing", Bundle: []string{cn(ca1)}},
	}, {
		name: "a CA Secret holding a serving certificate is no CA",
		in:   input(t0.Add(time.Hour), tlsSecret(t, cert1, ca1.cert), nil),
		want: summary{Action: "IssueCA", Reason: "no valid CA: not a CA certificate", Bundle: []string{cn(ca1)}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(Decide(tc.in))); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRotationNeverBreaksTrust runs the decisions against an in-memory API
// for three years of the default intervals (and for intervals of seconds)
// and checks, after every write, that the served certificate is valid and
// chains to a CA of the bundle every webhook configuration holds, that a
// certificate of a new CA is served only Propagation after that CA was
// injected, and that the rotations happen on schedule.
func TestRotationNeverBreaksTrust(t *testing.T) {
	for _, tc := range []struct {
		name      string
		intervals Intervals
		prop      time.Duration
		span      time.Duration
		minCA     int
		minCert   int
	}{
		{"defaults", DefaultIntervals, 10 * time.Second, 3 * 365 * 24 * time.Hour, 3, 6},
		{"seconds", Intervals{CARotate: 12 * time.Second, CAOverlap: 6 * time.Second, CertRotate: 6 * time.Second, CertOverlap: 3 * time.Second}, time.Second, time.Minute, 8, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			var caSecret, servingSecret *corev1.Secret
			configs := []WebhookBundles{config("v", nil, nil), {ConfigRef: ConfigRef{Mutating, "m"}, Found: true, Bundles: [][]byte{nil, nil, nil}}}
			injectedAt := map[string]time.Time{} // CA common name -> first time every config trusted it
			var caIssues, certIssues int
			for now.Before(t0.Add(tc.span)) {
				in := Input{Now: now, Intervals: tc.intervals, Propagation: tc.prop, Names: names,
					CASecret: caSecret, ServingSecret: servingSecret, Configs: configs}
				d := Decide(in)
				switch d.Action {
				case Wait:
					if d.Wake.IsZero() || !d.Wake.After(now) {
						t.Fatalf("at %v: wait until %v", now, d.Wake)
					}
					// Validity is an interval: valid now and just before
					// the wake-up is valid all the while.
					if err := verifies(servingSecret, configs, d.Wake.Add(-time.Nanosecond)); err != nil {
						t.Fatalf("until %v: %v", d.Wake, err)
					}
					now = d.Wake
					continue
				case IssueCA, WriteBundle:
					data, err := newSecretData(in, d, "ca")
					if err != nil {
						t.Fatal(err)
					}
					caSecret = &corev1.Secret{Type: corev1.SecretTypeTLS, Data: data}
					if d.Action == IssueCA {
						caIssues++
					}
				case Inject:
					for i := range configs {
						for j := range configs[i].Bundles {
							configs[i].Bundles[j] = d.Bundle
						}
					}
					certs, _ := parseCerts(d.Bundle)
					for _, c := range certs {
						if _, ok := injectedAt[c.Subject.CommonName+c.SerialNumber.String()]; !ok {
							injectedAt[c.Subject.CommonName+c.SerialNumber.String()] = now
						}
					}
				case IssueCert:
					data, err := newSecretData(in, d, "")
					if err != nil {
						t.Fatal(err)
					}
					servingSecret = &corev1.Secret{Type: corev1.SecretTypeTLS, Data: data}
					certIssues++
					if at, ok := injectedAt[d.CA.cert.Subject.CommonName+d.CA.cert.SerialNumber.String()]; certIssues > 1 && (!ok || now.Sub(at) < tc.prop) {
						t.Fatalf("at %v: a certificate of a CA injected at %v (ok %v) is served before Propagation", now, at, ok)
					}
				}
				if servingSecret != nil {
					if err := verifies(servingSecret, configs, now); err != nil {
						t.Fatalf("at %v after %v (%s): %v", now, d.Action, d.Reason, err)
					}
				}
			}
			if caIssues < tc.minCA || certIssues < tc.minCert {
				t.Errorf("%d CAs and %d certificates issued in %v, want at least %d and %d", caIssues, certIssues, tc.span, tc.minCA, tc.minCert)
			}
			t.Logf("%v: %d CAs, %d serving certificates", tc.span, caIssues, certIssues)
		})
	}
}

// verifies checks that the serving certificate is valid at now and
// chains, for every webhook, to a CA of its bundle.
func verifies(serving *corev1.Secret, configs []WebhookBundles, now time.Time) error {
	if serving == nil {
		return nil
	}
	kp, err := parseKeyPair(serving)
	if err != nil {
		return err
	}
	for _, c := range configs {
		for i, b := range c.Bundles {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				return fmt.Errorf("%s webhook %d: no bundle", c.ConfigRef, i)
			}
			if _, err := kp.cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, DNSName: names[0]}); err != nil {
				return fmt.Errorf("%s webhook %d: %w", c.ConfigRef, i, err)
			}
		}
	}
	return nil
}
