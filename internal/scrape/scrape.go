// Package scrape owns how knmstate's metrics endpoints are served (the
// handler's and the controller's; the operator's when it exists): the
// address, TLS, and who may scrape. The endpoint itself is
// controller-runtime's metrics server, serving its metrics.Registry.
//
// Secure serving authenticates a scraper's bearer token with a TokenReview
// and authorizes `get` on the request's path (a non-resource URL, e.g.
// /metrics) with a SubjectAccessReview, both asked of the API server and
// remembered for a minute, as kube-rbac-proxy and controller-runtime's
// filters package do. It is written here rather than taken from that
// package, which would link k8s.io/apiserver into knmstate (+40 MB).
//
// It must not define metrics (internal/metrics does).
package scrape

import (
	"crypto/tls"
	"net/http"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options configure one metrics endpoint.
type Options struct {
	// BindAddress is the endpoint's address; "" or "0" disables it.
	BindAddress string
	// Secure serves HTTPS, and only to clients the API server
	// authenticates (bearer token) and authorizes for `get` on the path.
	Secure bool
	// CertDir holds the serving certificate, tls.crt and tls.key (reloaded
	// when they change); "" or a directory without them: a self-signed
	// certificate made at start (scrapers then skip verification, as
	// kubernetes-nmstate's ServiceMonitor does off OpenShift).
	CertDir string
}

// Enabled reports whether the endpoint is served.
func (o Options) Enabled() bool { return o.BindAddress != "" && o.BindAddress != "0" }

// BindFlags registers --metrics-bind-address, --metrics-secure and
// --metrics-cert-dir on fs; defaultSecure is --metrics-secure's default.
func BindFlags(fs *pflag.FlagSet, o *Options, defaultSecure bool) {
	fs.StringVar(&o.BindAddress, "metrics-bind-address", "0", `address of the Prometheus metrics endpoint (e.g. ":8443"); "0" disables it`)
	fs.BoolVar(&o.Secure, "metrics-secure", defaultSecure, "serve metrics over HTTPS to clients the API server authorizes for get on /metrics (TokenReview, SubjectAccessReview); false: plain HTTP to anyone")
	fs.StringVar(&o.CertDir, "metrics-cert-dir", "", "directory of the metrics serving certificate (tls.crt, tls.key); default: self-signed")
}

// Server returns controller-runtime's metrics server options for o (a
// disabled endpoint gets BindAddress "0"). HTTP/2 is not offered (the
// rapid-reset attacks, CVE-2023-44487 and CVE-2023-39325), as upstream
// and kubebuilder projects do.
func (o Options) Server() metricsserver.Options {
	if !o.Enabled() {
		return metricsserver.Options{BindAddress: "0"}
	}
	so := metricsserver.Options{BindAddress: o.BindAddress}
	if o.Secure {
		so.SecureServing = true
		so.CertDir = o.CertDir
		so.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
		so.FilterProvider = func(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
			return newAuthFilter(cfg, hc)
		}
	}
	return so
}
