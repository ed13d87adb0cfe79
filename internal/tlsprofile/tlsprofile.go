// Package tlsprofile turns an OpenShift TLS security profile (the
// cluster's apiservers.config.openshift.io/cluster) into the flags knmstate's
// servers take and those flags into a Go tls.Config (pure).
package tlsprofile

import (
	"crypto/tls"
	"fmt"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
)

// Profile is what a server needs of a TLS security profile: the lowest
// TLS version (OpenShift's spelling, "VersionTLS12") and the cipher
// suites, in OpenSSL's names as the profiles list them.
type Profile struct {
	MinTLSVersion string
	Ciphers       []string
}

// FromSpec resolves an APIServer's spec.tlsSecurityProfile: unset means
// Intermediate, as OpenShift defines it; Custom takes its own block.
func FromSpec(p *configv1.TLSSecurityProfile) (Profile, error) {
	typ := configv1.TLSProfileIntermediateType
	if p != nil && p.Type != "" {
		typ = p.Type
	}
	var spec *configv1.TLSProfileSpec
	switch typ {
	case configv1.TLSProfileCustomType:
		if p.Custom == nil {
			return Profile{}, fmt.Errorf("tlsSecurityProfile: type Custom without a custom block")
		}
		spec = &p.Custom.TLSProfileSpec
	default:
		var ok bool
		if spec, ok = configv1.TLSProfiles[typ]; !ok {
			return Profile{}, fmt.Errorf("tlsSecurityProfile.type: %q is not Old, Intermediate, Modern or Custom", typ)
		}
	}
	return Profile{MinTLSVersion: string(spec.MinTLSVersion), Ciphers: append([]string(nil), spec.Ciphers...)}, nil
}

// Args are the command-line flags that make a knmstate server follow the
// profile.
func (p Profile) Args() []string {
	args := []string{"--tls-min-version=" + p.MinTLSVersion}
	if len(p.Ciphers) > 0 {
		args = append(args, "--tls-cipher-suites="+strings.Join(p.Ciphers, ","))
	}
	return args
}

var versions = map[string]uint16{
	"VersionTLS10": tls.VersionTLS10,
	"VersionTLS11": tls.VersionTLS11,
	"VersionTLS12": tls.VersionTLS12,
	"VersionTLS13": tls.VersionTLS13,
}

// openSSLNames are the IANA names of the OpenSSL cipher names the
// profiles use (TLS 1.3 suites are spelled alike in both).
var openSSLNames = map[string]string{
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-SHA256":     "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-RSA-AES128-SHA256":       "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
	"AES128-GCM-SHA256":             "TLS_RSA_WITH_AES_128_GCM_SHA256",
	"AES256-GCM-SHA384":             "TLS_RSA_WITH_AES_256_GCM_SHA384",
	"AES128-SHA256":                 "TLS_RSA_WITH_AES_128_CBC_SHA256",
	"AES128-SHA":                    "TLS_RSA_WITH_AES_128_CBC_SHA",
	"AES256-SHA":                    "TLS_RSA_WITH_AES_256_CBC_SHA",
	"DES-CBC3-SHA":                  "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
}

// Config builds the server side of a TLS configuration from the flags'
// values: minVersion in OpenShift's spelling ("" is TLS 1.2), ciphers in
// OpenSSL's or IANA's names (none: Go's defaults). TLS 1.3 suites are
// accepted and have no effect (Go does not make them configurable); a
// name Go does not implement is an error, so a profile is never followed
// only in part without saying so.
func Config(minVersion string, ciphers []string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if minVersion != "" {
		v, ok := versions[minVersion]
		if !ok {
			return nil, fmt.Errorf("tls-min-version: %q is not one of %s", minVersion, strings.Join(sortedKeys(versions), ", "))
		}
		cfg.MinVersion = v
	}
	ids := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		ids[s.Name] = s.ID
	}
	var tls13, unknown []string
	for _, c := range ciphers {
		name := c
		if iana, ok := openSSLNames[c]; ok {
			name = iana
		}
		if id, ok := ids[name]; ok {
			if isTLS13(id) {
				tls13 = append(tls13, c)
				continue
			}
			cfg.CipherSuites = append(cfg.CipherSuites, id)
			continue
		}
		unknown = append(unknown, c)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("tls-cipher-suites: %s not implemented by Go's TLS", strings.Join(unknown, ", "))
	}
	if len(ciphers) > 0 && len(cfg.CipherSuites) == 0 && cfg.MinVersion < tls.VersionTLS13 {
		// Only TLS 1.3 suites were listed: no TLS 1.2 suite is allowed.
		cfg.MinVersion = tls.VersionTLS13
	}
	return cfg, nil
}

func isTLS13(id uint16) bool {
	for _, s := range tls.CipherSuites() {
		if s.ID == id {
			for _, v := range s.SupportedVersions {
				if v != tls.VersionTLS13 {
					return false
				}
			}
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]uint16) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
