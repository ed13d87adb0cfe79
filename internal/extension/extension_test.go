package extension

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/knmstate/knmstate/pkg/probe"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]string
		want Settings
		errs []string
	}{
		{name: "none", in: nil},
		{name: "others' annotations are not looked at", in: map[string]string{"example.com/x": "1", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		{name: "dry run", in: map[string]string{DryRunAnnotation: "true"}, want: Settings{DryRun: true}},
		{name: "dry run off", in: map[string]string{DryRunAnnotation: "false"}},
		{name: "dry run: bad value", in: map[string]string{DryRunAnnotation: "yes"},
			errs: []string{`metadata.annotations[knmstate.io/dry-run]: Invalid value: "yes": must be "true" or "false"`}},
		{name: "misspelt knmstate annotation", in: map[string]string{"knmstate.io/dryrun": "true"},
			errs: []string{`metadata.annotations[knmstate.io/dryrun]: Unsupported value: "knmstate.io/dryrun": supported values: "knmstate.io/after", "knmstate.io/dry-run", "knmstate.io/enforce", "knmstate.io/ipv4-pool", "knmstate.io/ipv4-pool-addresses", "knmstate.io/probes", "knmstate.io/revert-on-delete", "knmstate.io/test-pause-before-probes"`}},
		{name: "test pause", in: map[string]string{TestPauseAnnotation: "3s"}, want: Settings{Probes: Probes{TestPause: 3 * time.Second}}},
		{name: "test pause: bad values", in: map[string]string{TestPauseAnnotation: "2h"},
			errs: []string{`metadata.annotations[knmstate.io/test-pause-before-probes]: Invalid value: "2h": must be more than 0 and at most 1m0s`}},
		{name: "test pause: not a duration", in: map[string]string{TestPauseAnnotation: "3"},
			errs: []string{`metadata.annotations[knmstate.io/test-pause-before-probes]: Invalid value: "3": expected a Go duration such as 3s`}},
		{name: "after", in: map[string]string{AfterAnnotation: "bond0-policy, vlans,bond0-policy"}, want: Settings{After: []string{"bond0-policy", "vlans"}}},
		{name: "after: bad names", in: map[string]string{AfterAnnotation: "a,,B_x"},
			errs: []string{
				`metadata.annotations[knmstate.io/after]: Invalid value: "a,,B_x": expected policy names separated by commas`,
				`metadata.annotations[knmstate.io/after]: Invalid value: "a,,B_x": "B_x" is not a policy name (lowercase letters, digits, '-' and '.')`,
			},
			want: Settings{After: []string{"a"}}},
		{name: "revert on delete", in: map[string]string{RevertOnDeleteAnnotation: "true"}, want: Settings{RevertOnDelete: true}},
		{name: "enforce", in: map[string]string{EnforceAnnotation: "true", DryRunAnnotation: "false"}, want: Settings{Enforce: true}},
		{name: "enforce: bad value", in: map[string]string{EnforceAnnotation: "True"},
			errs: []string{`metadata.annotations[knmstate.io/enforce]: Invalid value: "True": must be "true" or "false"`}},
		{name: "probes", in: map[string]string{ProbesAnnotation: " dns=off, ping.timeout=90s,api-server.timeout=2m , ping.target=192.0.2.1,dns.host=example.org,node-readiness=on"},
			want: Settings{Probes: Probes{
				Off:        map[string]bool{"dns": true},
				Timeouts:   map[string]time.Duration{"ping": 90 * time.Second, "api-server": 2 * time.Minute},
				DNSHost:    "example.org",
				PingTarget: netip.MustParseAddr("192.0.2.1"),
			}}},
		{name: "probes: every problem at once", in: map[string]string{ProbesAnnotation: "dns=no,gateway=off,ping.timeout=soon,dns.timeout=1h,ping.target=nowhere,dns.port=53,dns,ping=off,ping=on"},
			errs: []string{
				`metadata.annotations[knmstate.io/probes]: Invalid value: "dns=no": dns must be "on" or "off"`,
				`metadata.annotations[knmstate.io/probes]: Invalid value: "gateway=off": unknown probe "gateway": one of ping, dns, api-server, node-readiness`,
				`metadata.annotations[knmstate.io/probes]: Invalid value: "ping.timeout=soon": ping.timeout: not a duration (e.g. 30s, 2m)`,
				`metadata.annotations[knmstate.io/probes]: Invalid value: "dns.timeout=1h": dns.timeout: must be more than 0s and at most 10m0s`,
				`metadata.annotations[knmstate.io/probes]: Invalid value: "ping.target=nowhere": ping.target: not an IP address`,
				`metadata.annotations[knmstate.io/probes]: Invalid value: "dns.port=53": unknown setting "port" of probe dns: dns=on|off, dns.timeout, dns.host`,
				`metadata.annotations[knmstate.io/probes]: Invalid value: "dns": expected SETTING=VALUE`,
				`metadata.annotations[knmstate.io/probes]: Invalid value: "ping=on": ping is set more than once`,
			},
			want: Settings{Probes: Probes{Off: map[string]bool{"ping": true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := Parse(tt.in)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			if diff := cmp.Diff(tt.errs, msgs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateComparable(netip.Addr{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProbesOptionsAndSelect(t *testing.T) {
	p, errs := ParseProbes(nil, "dns=off,ping.timeout=7s,node-readiness.timeout=9s,ping.target=198.51.100.7,dns.host=probe.example")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	base := probe.Options{DNSHost: "root-servers.net", PingTimeout: time.Second, DNSTimeout: 2 * time.Second, APITimeout: 3 * time.Second, NodeTimeout: 4 * time.Second}
	got := p.Options(base)
	want := base
	want.PingTimeout, want.NodeTimeout, want.DNSHost, want.PingTarget = 7*time.Second, 9*time.Second, "probe.example", netip.MustParseAddr("198.51.100.7")
	if diff := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Addr{}), cmpopts.IgnoreFields(probe.Options{}, "Show", "API")); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
	all := []probe.Probe{{Name: probe.PingName}, {Name: probe.DNSName}, {Name: probe.APIServerName}}
	var names []string
	for _, pr := range p.Select(all) {
		names = append(names, pr.Name)
	}
	if diff := cmp.Diff([]string{"ping", "api-server"}, names); diff != "" {
		t.Errorf("Select (-want +got):\n%s", diff)
	}
	if got := (Probes{}).Options(base); !cmp.Equal(base, got, cmpopts.EquateComparable(netip.Addr{}), cmpopts.IgnoreFields(probe.Options{}, "Show", "API")) {
		t.Errorf("zero Probes changed the options: %+v", got)
	}
}

func TestChanged(t *testing.T) {
	tests := []struct {
		name     string
		old, new map[string]string
		want     bool
	}{
		{"nothing", nil, nil, false},
		{"other annotation", map[string]string{"a": "1"}, map[string]string{"a": "2"}, false},
		{"added", nil, map[string]string{DryRunAnnotation: "true"}, true},
		{"removed", map[string]string{DryRunAnnotation: "true"}, map[string]string{"a": "1"}, true},
		{"changed", map[string]string{ProbesAnnotation: "dns=off"}, map[string]string{ProbesAnnotation: "dns=on"}, true},
		{"empty value added", nil, map[string]string{ProbesAnnotation: ""}, true},
		{"same", map[string]string{DryRunAnnotation: "true"}, map[string]string{DryRunAnnotation: "true", "a": "b"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Changed(tt.old, tt.new); got != tt.want {
				t.Errorf("Changed = %v, want %v", got, tt.want)
			}
		})
	}
}
