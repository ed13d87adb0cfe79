package tlsprofile

import (
	"crypto/tls"
	"slices"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
)

func TestFromSpecAndConfig(t *testing.T) {
	tests := []struct {
		name       string
		spec       *configv1.TLSSecurityProfile
		wantMin    uint16
		wantSuites []uint16 // must all be present
		absent     []uint16 // must not be
	}{
		{name: "unset is Intermediate", spec: nil, wantMin: tls.VersionTLS12,
			wantSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
			absent:     []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}},
		{name: "Old", spec: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileOldType}, wantMin: tls.VersionTLS10,
			wantSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA, tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA}},
		{name: "Modern", spec: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType}, wantMin: tls.VersionTLS13},
		{name: "Custom", spec: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType, Custom: &configv1.CustomTLSProfile{
			TLSProfileSpec: configv1.TLSProfileSpec{MinTLSVersion: configv1.VersionTLS12, Ciphers: []string{"ECDHE-RSA-AES256-GCM-SHA384"}}}},
			wantMin: tls.VersionTLS12, wantSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
			absent: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := FromSpec(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var min string
			var ciphers []string
			for _, a := range p.Args() {
				if v, ok := strings.CutPrefix(a, "--tls-min-version="); ok {
					min = v
				}
				if v, ok := strings.CutPrefix(a, "--tls-cipher-suites="); ok {
					ciphers = strings.Split(v, ",")
				}
			}
			cfg, err := Config(min, ciphers)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MinVersion != tc.wantMin {
				t.Errorf("MinVersion %x, want %x", cfg.MinVersion, tc.wantMin)
			}
			for _, s := range tc.wantSuites {
				if !slices.Contains(cfg.CipherSuites, s) {
					t.Errorf("suite %s missing from %v", tls.CipherSuiteName(s), cfg.CipherSuites)
				}
			}
			for _, s := range tc.absent {
				if slices.Contains(cfg.CipherSuites, s) {
					t.Errorf("suite %s allowed", tls.CipherSuiteName(s))
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		spec    *configv1.TLSSecurityProfile
		min     string
		ciphers []string
		want    string
	}{
		{name: "custom without block", spec: &configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType}, want: "without a custom block"},
		{name: "unknown type", spec: &configv1.TLSSecurityProfile{Type: "Weird"}, want: `"Weird" is not Old, Intermediate, Modern or Custom`},
		{name: "bad version", min: "TLS1.2", want: `tls-min-version: "TLS1.2" is not one of`},
		{name: "unknown cipher", ciphers: []string{"ECDHE-RSA-AES128-GCM-SHA256", "CAMELLIA128-SHA"}, want: "tls-cipher-suites: CAMELLIA128-SHA not implemented"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.spec != nil {
				_, err = FromSpec(tc.spec)
			} else {
				_, err = Config(tc.min, tc.ciphers)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
