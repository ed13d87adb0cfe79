package certs

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ConfigKind is the kind of a webhook configuration.
type ConfigKind string

const (
	Validating ConfigKind = "ValidatingWebhookConfiguration"
	Mutating   ConfigKind = "MutatingWebhookConfiguration"
)

// ConfigRef names a webhook configuration.
type ConfigRef struct {
	Kind ConfigKind
	Name string
}

func (r ConfigRef) String() string { return string(r.Kind) + "/" + r.Name }

// WebhookBundles is what a decision needs of a webhook configuration: the
// caBundle of each of its webhooks.
type WebhookBundles struct {
	ConfigRef
	// Found is false when the configuration does not exist (yet).
	Found   bool
	Bundles [][]byte
}

// Input is everything a decision looks at.
type Input struct {
	Now       time.Time
	Intervals Intervals
	// Propagation: see Config.Propagation.
	Propagation time.Duration
	// Names the serving certificate must be valid for (Config.Names).
	Names []string
	// CASecret and ServingSecret as read; nil when absent.
	CASecret, ServingSecret *corev1.Secret
	// Configs are the webhook configurations to inject the bundle into.
	Configs []WebhookBundles
}

// Action is the one write a decision asks for.
type Action int

const (
	// Wait: nothing to do until Decision.Wake (or a change).
	Wait Action = iota
	// IssueCA: make a new CA; its Secret's bundle is the new CA followed
	// by Decision.Bundle (the older CAs still valid).
	IssueCA
	// WriteBundle: rewrite the CA Secret's bundle as Decision.Bundle.
	WriteBundle
	// Inject: set the caBundle of every webhook of Decision.Targets to
	// Decision.Bundle.
	Inject
	// IssueCert: issue the serving certificate with Decision.CA, valid
	// until Decision.NotAfter.
	IssueCert
)

func (a Action) String() string {
	return [...]string{"Wait", "IssueCA", "WriteBundle", "Inject", "IssueCert"}[a]
}

// Decision is the next step towards valid, trusted certificates.
type Decision struct {
	Action Action
	// Reason says why, for logs.
	Reason string
	// Bundle: see the actions.
	Bundle []byte
	// Targets: see Inject.
	Targets []ConfigRef
	// CA signs the serving certificate (IssueCert).
	CA keyPair
	// NotAfter ends the serving certificate's validity (IssueCert).
	NotAfter time.Time
	// Wake is when the next step is due (Wait); zero for never.
	Wake time.Time
}

// Decide returns the next step: a pure function of the Secrets, the webhook
// configurations, the time and the intervals, so that a restart anywhere
// continues where the last run stopped. The order keeps every request
// verifiable: a new CA enters the bundle next to the old one, the bundle
// reaches the webhook configurations, and only Propagation after the new
// CA's issue does a certificate it signs replace the served one; a CA
// leaves the bundle when it expires, after every certificate it signed.
// lifetimeSlack is how much longer than its interval a certificate may
// remain valid before it counts as issued under longer intervals.
const lifetimeSlack = time.Second

func Decide(in Input) Decision {
	now := in.Now
	ca, caErr := parseKeyPair(in.CASecret)
	if caErr == nil && !ca.cert.IsCA {
		caErr = fmt.Errorf("not a CA certificate")
	}
	serving, servingErr := parseKeyPair(in.ServingSecret)

	// 1. A CA, renewed CAOverlap before it expires.
	if caErr != nil {
		return Decision{Action: IssueCA, Reason: "no valid CA: " + caErr.Error(),
			Bundle: encodeCerts(priorCAs(in, nil, serving, servingErr)...)}
	}
	if due := ca.cert.NotAfter.Add(-in.Intervals.CAOverlap); !now.Before(due) {
		return Decision{Action: IssueCA, Reason: fmt.Sprintf("CA expires at %s", ca.cert.NotAfter.UTC().Format(time.RFC3339)),
			Bundle: encodeCerts(priorCAs(in, &ca, serving, servingErr)...)}
	}
	// Shortened intervals apply at once, not when the old, longer-lived
	// CA ends.
	if ca.cert.NotAfter.After(now.Add(in.Intervals.CARotate + lifetimeSlack)) {
		return Decision{Action: IssueCA, Reason: fmt.Sprintf("CA valid until %s, longer than caRotateInterval %v", ca.cert.NotAfter.UTC().Format(time.RFC3339), in.Intervals.CARotate),
			Bundle: encodeCerts(priorCAs(in, &ca, serving, servingErr)...)}
	}

	// 2. The bundle: the current CA first, then the older ones until they
	// expire.
	bundle := caBundle(in.CASecret, ca.cert, now)
	if !bytes.Equal(bundle, in.CASecret.Data[CABundleKey]) {
		return Decision{Action: WriteBundle, Reason: "CA bundle outdated", Bundle: bundle}
	}

	// 3. The bundle in every webhook of every configuration.
	var targets []ConfigRef
	for _, c := range in.Configs {
		if !c.Found {
			continue
		}
		for _, b := range c.Bundles {
			if !bytes.Equal(b, bundle) {
				targets = append(targets, c.ConfigRef)
				break
			}
		}
	}
	if len(targets) > 0 {
		return Decision{Action: Inject, Reason: "caBundle differs", Bundle: bundle, Targets: targets}
	}

	// 4. The serving certificate: by the current CA once it is trusted
	// everywhere, for the right names, renewed CertOverlap before it
	// expires unless its CA's end limits it (then the CA's rotation
	// replaces it).
	notAfter := now.Add(in.Intervals.CertRotate)
	if ca.cert.NotAfter.Before(notAfter) {
		notAfter = ca.cert.NotAfter
	}
	issueCert := func(reason string) Decision {
		return Decision{Action: IssueCert, Reason: reason, CA: ca, NotAfter: notAfter}
	}
	if servingErr != nil {
		return issueCert("no valid serving certificate: " + servingErr.Error())
	}
	cert := serving.cert
	if !now.Before(cert.NotAfter) {
		return issueCert("serving certificate expired")
	}
	if cert.NotAfter.After(now.Add(in.Intervals.CertRotate + lifetimeSlack)) {
		return issueCert(fmt.Sprintf("serving certificate valid until %s, longer than certRotateInterval %v", cert.NotAfter.UTC().Format(time.RFC3339), in.Intervals.CertRotate))
	}
	if !slices.Equal(certNames(cert), in.Names) {
		return issueCert(fmt.Sprintf("serving certificate names %v, want %v", certNames(cert), in.Names))
	}
	wake := earliest(ca.cert.NotAfter.Add(-in.Intervals.CAOverlap), bundleExpiry(in.CASecret, now))
	if !signedBy(cert, ca.cert) {
		if !trusted(cert, in.CASecret, now) {
			return issueCert("serving certificate not signed by a CA of the bundle")
		}
		trustedAt := ca.cert.NotBefore.Add(backdate + in.Propagation)
		if !now.Before(trustedAt) {
			return issueCert("serving certificate signed by the previous CA")
		}
		return Decision{Action: Wait, Reason: "new CA propagating", Wake: earliest(wake, trustedAt)}
	}
	if !cert.NotAfter.Equal(ca.cert.NotAfter) {
		due := cert.NotAfter.Add(-in.Intervals.CertOverlap)
		if !now.Before(due) {
			return issueCert(fmt.Sprintf("serving certificate expires at %s", cert.NotAfter.UTC().Format(time.RFC3339)))
		}
		wake = earliest(wake, due)
	}
	return Decision{Action: Wait, Wake: wake}
}

// priorCAs are the CAs a new one must keep trusting: the unexpired ones
// of the CA Secret's bundle (the old current CA included), and the CA of
// the served certificate if a webhook configuration trusts it (so that
// losing the CA Secret does not break the webhook before the serving
// certificate is replaced).
func priorCAs(in Input, ca *keyPair, serving keyPair, servingErr error) []*x509.Certificate {
	var out []*x509.Certificate
	add := func(c *x509.Certificate) {
		if !in.Now.Before(c.NotAfter) || !c.IsCA {
			return
		}
		for _, o := range out {
			if o.Equal(c) {
				return
			}
		}
		out = append(out, c)
	}
	if ca != nil {
		add(ca.cert)
	}
	if in.CASecret != nil {
		if certs, err := parseCerts(in.CASecret.Data[CABundleKey]); err == nil {
			for _, c := range certs {
				add(c)
			}
		}
	}
	if servingErr == nil {
		for _, cfg := range in.Configs {
			for _, b := range cfg.Bundles {
				certs, err := parseCerts(b)
				if err != nil {
					continue
				}
				for _, c := range certs {
					if signedBy(serving.cert, c) {
						add(c)
					}
				}
			}
		}
	}
	return out
}

// caBundle is the bundle the CA Secret should hold: the current CA, then
// the unexpired other CAs of its current bundle, in their order.
func caBundle(s *corev1.Secret, current *x509.Certificate, now time.Time) []byte {
	out := []*x509.Certificate{current}
	if certs, err := parseCerts(s.Data[CABundleKey]); err == nil {
		for _, c := range certs {
			if !c.Equal(current) && c.IsCA && now.Before(c.NotAfter) {
				out = append(out, c)
			}
		}
	}
	return encodeCerts(out...)
}

// bundleExpiry is when the next CA of the bundle expires; zero if none.
func bundleExpiry(s *corev1.Secret, now time.Time) time.Time {
	var t time.Time
	if certs, err := parseCerts(s.Data[CABundleKey]); err == nil {
		for _, c := range certs {
			if now.Before(c.NotAfter) {
				t = earliest(t, c.NotAfter)
			}
		}
	}
	return t
}

// trusted reports whether a CA of the CA Secret's bundle, unexpired,
// signed c.
func trusted(c *x509.Certificate, s *corev1.Secret, now time.Time) bool {
	certs, err := parseCerts(s.Data[CABundleKey])
	if err != nil {
		return false
	}
	for _, ca := range certs {
		if now.Before(ca.NotAfter) && signedBy(c, ca) {
			return true
		}
	}
	return false
}

// earliest is the earlier non-zero time.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
