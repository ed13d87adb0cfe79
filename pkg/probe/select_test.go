package probe

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

func names(ps []Probe) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	all := Options{API: nil}.All()
	all = append(all, Probe{Name: APIServerName}, Probe{Name: NodeReadinessName})
	tests := []struct {
		name   string
		passed map[string]bool
		want   []string
	}{
		{"both external passed", map[string]bool{PingName: true, DNSName: true}, []string{PingName, DNSName, APIServerName, NodeReadinessName}},
		{"ping failed before", map[string]bool{PingName: false, DNSName: true}, []string{DNSName, APIServerName, NodeReadinessName}},
		{"nothing passed", map[string]bool{}, []string{APIServerName, NodeReadinessName}},
		{"nil map", nil, []string{APIServerName, NodeReadinessName}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, names(Select(all, tt.passed))); diff != "" {
				t.Errorf("Select (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultGateway(t *testing.T) {
	tests := []struct {
		name   string
		state  string
		want   Gateway
		wantOK bool
	}{
		{"ipv4 main table", `routes: {running: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth0, table-id: 254}]}`,
			Gateway{netip.MustParseAddr("192.0.2.1"), "eth0"}, true},
		{"no table id is main", `routes: {running: [{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth0}]}`,
			Gateway{netip.MustParseAddr("192.0.2.1"), "eth0"}, true},
		{"ipv6", `routes: {running: [{destination: "::/0", next-hop-address: "fe80::1", next-hop-interface: eth1, table-id: 254}]}`,
			Gateway{netip.MustParseAddr("fe80::1"), "eth1"}, true},
		{"custom table skipped", `routes: {running: [
			{destination: 0.0.0.0/0, next-hop-address: 198.51.100.1, next-hop-interface: eth1, table-id: 100},
			{destination: 0.0.0.0/0, next-hop-address: 192.0.2.1, next-hop-interface: eth0, table-id: 254}]}`,
			Gateway{netip.MustParseAddr("192.0.2.1"), "eth0"}, true},
		{"only custom table", `routes: {running: [{destination: 0.0.0.0/0, next-hop-address: 198.51.100.1, next-hop-interface: eth1, table-id: 100}]}`,
			Gateway{}, false},
		{"not default", `routes: {running: [{destination: 198.51.100.0/24, next-hop-address: 192.0.2.1, next-hop-interface: eth0}]}`,
			Gateway{}, false},
		{"no routes", `interfaces: []`, Gateway{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := nmstate.Decode([]byte(tt.state))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := DefaultGateway(s)
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("DefaultGateway = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestPollRetriesUntilPass(t *testing.T) {
	n := 0
	err := Poll(context.Background(), time.Minute, time.Millisecond, func(context.Context) error {
		n++
		if n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("Poll = %v after %d attempts, want nil after 3", err, n)
	}
}

func TestPollReturnsLastError(t *testing.T) {
	n := 0
	err := Poll(context.Background(), 20*time.Millisecond, time.Millisecond, func(context.Context) error {
		n++
		return errors.New("down")
	})
	if err == nil || err.Error() != "down" {
		t.Errorf("Poll = %v, want the attempt's error", err)
	}
	if n < 2 {
		t.Errorf("Poll made %d attempts, want retries", n)
	}
}

func TestRunStopsAtFirstFailure(t *testing.T) {
	var ran []string
	mk := func(name string, err error) Probe {
		return Probe{Name: name, Timeout: 5 * time.Millisecond, Attempt: func(context.Context) error { ran = append(ran, name); return err }}
	}
	err := Run(context.Background(), []Probe{mk("a", nil), mk("b", errors.New("x")), mk("c", nil)}, 10*time.Millisecond)
	if err == nil || err.Error() != "probe b: x" {
		t.Errorf("Run = %v, want probe b: x", err)
	}
	var f *Failure
	if !errors.As(err, &f) || f.Probe != "b" {
		t.Errorf("Run = %#v, want a *Failure of probe b", err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, ran); diff != "" {
		t.Errorf("ran (-want +got):\n%s", diff)
	}
}

func TestPassingGivesUpWithoutTarget(t *testing.T) {
	calls := 0
	all := []Probe{
		{Name: PingName, External: true, Timeout: time.Hour, Attempt: func(context.Context) error {
			calls++
			return fmt.Errorf("ping: %w: no default gateway", errNoTarget)
		}},
		{Name: DNSName, External: true, Timeout: time.Hour, Attempt: func(context.Context) error { return nil }},
		{Name: APIServerName, Timeout: time.Hour, Attempt: func(context.Context) error { t.Error("internal probe run before apply"); return nil }},
	}
	got := Passing(context.Background(), all, time.Hour, time.Millisecond)
	if diff := cmp.Diff(map[string]bool{PingName: false, DNSName: true}, got); diff != "" {
		t.Errorf("Passing (-want +got):\n%s", diff)
	}
	if calls != 1 {
		t.Errorf("ping attempted %d times without a target, want 1", calls)
	}
}

// An attempt gets its probe's AttemptTimeout, else the default bound;
// the probes that read the node's state first get room for the read.
func TestAttemptTimeout(t *testing.T) {
	var got []time.Duration
	attempt := func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		if !ok {
			t.Fatal("attempt without a deadline")
		}
		got = append(got, time.Until(dl))
		return nil
	}
	probes := []Probe{
		{Name: "default", Timeout: time.Minute, Attempt: attempt},
		{Name: "long", Timeout: time.Minute, AttemptTimeout: 20 * time.Second, Attempt: attempt},
	}
	if err := Run(context.Background(), probes, time.Second); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] > attemptTimeout(time.Second) || got[0] < attemptTimeout(time.Second)-time.Second ||
		got[1] > 20*time.Second || got[1] < 19*time.Second {
		t.Errorf("attempt bounds %v, want about %v and 20s", got, attemptTimeout(time.Second))
	}
	for _, p := range (Options{}).All() {
		if (p.Name == PingName || p.Name == DNSName) && p.AttemptTimeout < attemptTimeout(DefaultInterval)+stateReadTimeout {
			t.Errorf("probe %s: attempt bound %v leaves no time to read the state", p.Name, p.AttemptTimeout)
		}
	}
}
