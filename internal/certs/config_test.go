package certs

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/api/shared"
)

func TestIntervalsFrom(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      *shared.SelfSignConfiguration
		want    Intervals
		wantErr string
	}{
		{name: "nil: upstream's defaults", want: DefaultIntervals},
		{name: "all given", in: &shared.SelfSignConfiguration{CARotateInterval: "2h", CAOverlapInterval: "1h", CertRotateInterval: "1h", CertOverlapInterval: "30m"},
			want: Intervals{2 * time.Hour, time.Hour, time.Hour, 30 * time.Minute}},
		{name: "partial: the rest defaults (upstream would fail to parse)", in: &shared.SelfSignConfiguration{CertOverlapInterval: "48h"},
			want: Intervals{8760 * time.Hour, 24 * time.Hour, 4380 * time.Hour, 48 * time.Hour}},
		{name: "unparsable", in: &shared.SelfSignConfiguration{CARotateInterval: "a year"}, wantErr: "selfSignConfiguration.caRotateInterval"},
		{name: "overlap not shorter than rotation", in: &shared.SelfSignConfiguration{CertRotateInterval: "24h"}, wantErr: "certOverlapInterval 24h0m0s must be shorter than certRotateInterval 24h0m0s"},
		{name: "certificate outliving the CA", in: &shared.SelfSignConfiguration{CARotateInterval: "100h"}, wantErr: "certRotateInterval 4380h0m0s must not be longer than caRotateInterval 100h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IntervalsFrom(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("intervals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	c := Config{Namespace: "nmstate", ExtraNames: []string{"127.0.0.1", "webhook.example", "::1"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []string{"knmstate-webhook.nmstate.svc", "knmstate-webhook", "knmstate-webhook.nmstate", "knmstate-webhook.nmstate.svc.cluster.local",
		"webhook.example", "127.0.0.1", "::1"}
	if diff := cmp.Diff(want, c.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no namespace", Config{}, "namespace is required"},
		{"one Secret for both", Config{Namespace: "n", CASecret: "s", ServingSecret: "s"}, "must differ"},
		{"propagation too long", Config{Namespace: "n", Propagation: 48 * time.Hour}, "propagation 48h0m0s must be shorter than caOverlapInterval 24h0m0s"},
		{"unknown issuer", Config{Namespace: "n", Issuer: "Vault"}, `unknown issuer "Vault"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDefaultPropagation(t *testing.T) {
	c := Config{Namespace: "n"}
	c.defaults()
	if c.Propagation != 10*time.Second {
		t.Errorf("propagation = %v, want 10s", c.Propagation)
	}
	c = Config{Namespace: "n", Intervals: Intervals{CARotate: 12 * time.Second, CAOverlap: 4 * time.Second, CertRotate: 6 * time.Second, CertOverlap: 3 * time.Second}}
	c.defaults()
	if c.Propagation != time.Second {
		t.Errorf("propagation = %v, want a quarter of the CA overlap (1s)", c.Propagation)
	}
}
