package certs

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"

	"github.com/knmstate/knmstate/api/shared"
)

// Intervals are the lifetimes of the self-signed certificates, as
// NMState spec.selfSignConfiguration gives them (kube-admission-webhook's
// semantics, which upstream uses):
//
//   - a CA is valid for CARotate and replaced CAOverlap before it expires;
//     until then both are in the CA bundle;
//   - a serving certificate is valid for CertRotate (never beyond its CA)
//     and replaced CertOverlap before it expires.
type Intervals struct {
	CARotate, CAOverlap, CertRotate, CertOverlap time.Duration
}

// DefaultIntervals are upstream's: a CA for a year, renewed a day early; a
// serving certificate for half a year, renewed a day early.
var DefaultIntervals = Intervals{
	CARotate:    8760 * time.Hour,
	CAOverlap:   24 * time.Hour,
	CertRotate:  4380 * time.Hour,
	CertOverlap: 24 * time.Hour,
}

// IntervalsFrom reads an NMState's selfSignConfiguration. Unlike upstream,
// which defaults only a missing struct (a partial one then fails to
// parse), every empty field takes its default.
func IntervalsFrom(c *shared.SelfSignConfiguration) (Intervals, error) {
	out := DefaultIntervals
	if c == nil {
		return out, nil
	}
	var errs []error
	for _, f := range []struct {
		name string
		text string
		dst  *time.Duration
	}{
		{"caRotateInterval", c.CARotateInterval, &out.CARotate},
		{"caOverlapInterval", c.CAOverlapInterval, &out.CAOverlap},
		{"certRotateInterval", c.CertRotateInterval, &out.CertRotate},
		{"certOverlapInterval", c.CertOverlapInterval, &out.CertOverlap},
	} {
		if f.text == "" {
			continue
		}
		d, err := time.ParseDuration(f.text)
		if err != nil {
			errs = append(errs, fmt.Errorf("selfSignConfiguration.%s: %w", f.name, err))
			continue
		}
		*f.dst = d
	}
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	return out, out.Validate()
}

// Validate reports intervals that cannot rotate without a gap, with
// kube-admission-webhook's rules.
func (i Intervals) Validate() error {
	var errs []error
	if i.CAOverlap <= 0 || i.CertOverlap <= 0 {
		errs = append(errs, errors.New("overlap intervals must be positive"))
	}
	if i.CAOverlap >= i.CARotate {
		errs = append(errs, fmt.Errorf("caOverlapInterval %v must be shorter than caRotateInterval %v", i.CAOverlap, i.CARotate))
	}
	if i.CertRotate > i.CARotate {
		errs = append(errs, fmt.Errorf("certRotateInterval %v must not be longer than caRotateInterval %v", i.CertRotate, i.CARotate))
	}
	if i.CertOverlap >= i.CertRotate {
		errs = append(errs, fmt.Errorf("certOverlapInterval %v must be shorter than certRotateInterval %v", i.CertOverlap, i.CertRotate))
	}
	return errors.Join(errs...)
}

// Issuer selects who issues the webhook's certificates.
type Issuer string

const (
	// SelfSigned: this package's own CA and certificates.
	SelfSigned Issuer = "SelfSigned"
	// CertManager: cert-manager's Certificate and Issuer objects, with
	// the CA injected by cert-manager's cainjector.
	CertManager Issuer = "CertManager"
)

// Config is what the certificate manager manages.
type Config struct {
	// Namespace holds the Secrets and the webhook's Service.
	Namespace string
	// CASecret names the CA's Secret; default "knmstate-webhook-ca".
	// (The defaults are internal/manifest's names.)
	CASecret string
	// ServingSecret names the serving certificate's Secret, the one the
	// webhook server reads; default "knmstate-webhook-serving-cert".
	ServingSecret string
	// Service names the webhook's Service; the certificate is valid for
	// SERVICE, SERVICE.NAMESPACE, SERVICE.NAMESPACE.svc and
	// SERVICE.NAMESPACE.svc.cluster.local. Default "knmstate-webhook".
	Service string
	// ExtraNames are further DNS names or IP addresses of the
	// certificate (a webhook reached by URL, in tests 127.0.0.1).
	ExtraNames []string
	// ValidatingConfigs and MutatingConfigs name the webhook
	// configurations whose every webhook gets the CA bundle.
	ValidatingConfigs, MutatingConfigs []string
	// Intervals are the certificate lifetimes; zero means
	// DefaultIntervals.
	Intervals Intervals
	// Propagation is how long a new CA stays in the injected bundle
	// before the serving certificate it signs is used, so that every API
	// server trusts it first; default 10 s, at most a quarter of
	// Intervals.CAOverlap.
	Propagation time.Duration
	// Issuer selects self-signed certificates (default) or cert-manager.
	Issuer Issuer
	// Labels are set on the objects the manager creates.
	Labels map[string]string
	// Logger receives the manager's logs; default discards.
	Logger logr.Logger
	// Clock returns the current time; default time.Now.
	Clock func() time.Time
}

// WithDefaults returns c with every unset field at its default (the
// Secret and Service names the operator must use too).
func (c Config) WithDefaults() Config {
	c.defaults()
	return c
}

func (c *Config) defaults() {
	if c.CASecret == "" {
		c.CASecret = "knmstate-webhook-ca"
	}
	if c.ServingSecret == "" {
		c.ServingSecret = "knmstate-webhook-serving-cert"
	}
	if c.Service == "" {
		c.Service = "knmstate-webhook"
	}
	if c.Intervals == (Intervals{}) {
		c.Intervals = DefaultIntervals
	}
	if c.Propagation == 0 {
		c.Propagation = min(10*time.Second, c.Intervals.CAOverlap/4)
	}
	if c.Issuer == "" {
		c.Issuer = SelfSigned
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c.defaults()
	var errs []error
	if c.Namespace == "" {
		errs = append(errs, errors.New("namespace is required"))
	}
	if c.CASecret == c.ServingSecret {
		errs = append(errs, fmt.Errorf("the CA and serving Secrets must differ (both %q)", c.CASecret))
	}
	if err := c.Intervals.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Propagation < 0 || c.Propagation >= c.Intervals.CAOverlap {
		errs = append(errs, fmt.Errorf("propagation %v must be shorter than caOverlapInterval %v", c.Propagation, c.Intervals.CAOverlap))
	}
	if c.Issuer != SelfSigned && c.Issuer != CertManager {
		errs = append(errs, fmt.Errorf("unknown issuer %q", c.Issuer))
	}
	return errors.Join(errs...)
}

// Names are the DNS names (and IP addresses) of the serving certificate.
func (c Config) Names() []string {
	c.defaults()
	svc, ns := c.Service, c.Namespace
	names := []string{svc + "." + ns + ".svc", svc, svc + "." + ns, svc + "." + ns + ".svc.cluster.local"}
	for _, n := range c.ExtraNames {
		if net.ParseIP(n) == nil {
			names = append(names, n)
		}
	}
	for _, n := range c.ExtraNames {
		if ip := net.ParseIP(n); ip != nil {
			names = append(names, ip.String())
		}
	}
	return names
}
