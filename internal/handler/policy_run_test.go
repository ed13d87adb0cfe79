package handler

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/knmstate/knmstate/pkg/probe"
)

func TestBindPolicyFlags(t *testing.T) {
	var s PolicySettings
	fs := pflag.NewFlagSet("handler", pflag.ContinueOnError)
	BindPolicyFlags(fs, &s)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := PolicySettings{
		MaxRetries: DefaultMaxRetries, RetryBackoff: DefaultRetryBackoff, RetryMaxBackoff: DefaultRetryMaxBackoff,
		DNSHost:     probe.DefaultDNSHost,
		PingTimeout: probe.DefaultPingTimeout, DNSTimeout: probe.DefaultDNSTimeout, APITimeout: probe.DefaultAPITimeout,
		NodeTimeout: probe.DefaultNodeTimeout, SelectTimeout: probe.DefaultSelectTimeout,
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if err := fs.Parse([]string{"--max-retries=2", "--probe-ping-timeout=5s", "--probe-dns-host=api.lab.example", "--no-probes"}); err != nil {
		t.Fatal(err)
	}
	want.MaxRetries, want.PingTimeout, want.DNSHost, want.NoProbes = 2, 5*time.Second, "api.lab.example", true
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("after flags (-want +got):\n%s", diff)
	}
	po := PolicyOptionsFor(Options{Node: "n1", StateDir: "/x"}, s, nil, nil)
	if po.MaxRetries != 2 || po.Probes.PingTimeout != 5*time.Second || po.Probes.DNSHost != "api.lab.example" || !po.NoProbes {
		t.Errorf("PolicyOptionsFor = %+v", po)
	}
}
