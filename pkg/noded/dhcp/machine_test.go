package dhcp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// lease4 is a DHCPv4 lease granted at start with the given lifetime and
// no T1/T2 from the server.
func lease4(start time.Time, life time.Duration, addr string) Lease {
	return Lease{Family: IPv4, Address: netip.MustParsePrefix(addr), Start: start, Lifetime: life, Preferred: life}
}

// call is one interaction with the machine: either ask Next at a time, or
// report an outcome (granted lease, failure).
type call struct {
	now     time.Duration
	grant   *Lease
	fail    bool
	decline bool
	// what Next returns (only when grant == nil && !fail)
	want      Action
	wantAt    time.Duration // relative to t0; -1 = zero time
	wantState State
}

func runCalls(t *testing.T, m *Machine, calls []call) {
	t.Helper()
	for i, c := range calls {
		now := at(c.now)
		switch {
		case c.grant != nil:
			m.Granted(*c.grant)
		case c.fail:
			m.Failed(now, c.decline)
		default:
			s := m.Next(now)
			type got struct {
				Action Action
				At     time.Duration
				State  State
			}
			g := got{s.Action, s.At.Sub(t0), m.State()}
			if s.At.IsZero() {
				g.At = -1
			}
			w := got{c.want, c.wantAt, c.wantState}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Fatalf("call %d at +%s (-want +got):\n%s", i, c.now, diff)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestMachineLifecycle(t *testing.T) {
	l := lease4(t0, 120*time.Second, "192.0.2.150/24") // T1 60s, T2 105s
	renewed := lease4(at(60*time.Second), 120*time.Second, "192.0.2.150/24")
	for _, tc := range []struct {
		name  string
		calls []call
	}{
		{"acquire then wait for T1", []call{
			{now: 0, want: Acquire, wantAt: 60 * time.Second, wantState: Init},
			{now: 0, grant: &l},
			{now: time.Second, want: Wait, wantAt: 60 * time.Second, wantState: Bound},
		}},
		{"renew at T1 extends the lease", []call{
			{now: 0, grant: &l},
			{now: 60 * time.Second, want: Renew, wantAt: 105 * time.Second, wantState: Renewing},
			{now: 60 * time.Second, grant: &renewed},
			{now: 61 * time.Second, want: Wait, wantAt: 120 * time.Second, wantState: Bound},
		}},
		{"failed renew retries no later than T2, then rebinds", []call{
			{now: 0, grant: &l},
			{now: 60 * time.Second, want: Renew, wantAt: 105 * time.Second, wantState: Renewing},
			{now: 75 * time.Second, fail: true},
			{now: 75 * time.Second, want: Wait, wantAt: 105 * time.Second, wantState: Renewing},
			{now: 105 * time.Second, want: Rebind, wantAt: 120 * time.Second, wantState: Rebinding},
			{now: 110 * time.Second, fail: true},
			{now: 110 * time.Second, want: Wait, wantAt: 120 * time.Second, wantState: Rebinding},
			{now: 120 * time.Second, want: Expire, wantAt: -1, wantState: Init},
			{now: 120 * time.Second, want: Acquire, wantAt: 180 * time.Second, wantState: Init},
		}},
		{"nak while renewing ends the lease at once", []call{
			{now: 0, grant: &l},
			{now: 60 * time.Second, want: Renew, wantAt: 105 * time.Second, wantState: Renewing},
			{now: 61 * time.Second, fail: true, decline: true},
			{now: 61 * time.Second, want: Expire, wantAt: -1, wantState: Init},
			{now: 61 * time.Second, want: Acquire, wantAt: 121 * time.Second, wantState: Init},
		}},
		{"acquire backs off exponentially up to 64s", []call{
			{now: 0, fail: true},
			{now: 0, want: Wait, wantAt: time.Second, wantState: Init},
			{now: time.Second, fail: true},
			{now: time.Second, want: Wait, wantAt: 3 * time.Second, wantState: Init},
			{now: 3 * time.Second, fail: true},
			{now: 3 * time.Second, want: Wait, wantAt: 7 * time.Second, wantState: Init},
			{now: 7 * time.Second, fail: true},
			{now: 8 * time.Second, fail: true},
			{now: 9 * time.Second, fail: true},
			{now: 10 * time.Second, fail: true},
			{now: 11 * time.Second, fail: true},
			{now: 11 * time.Second, want: Wait, wantAt: 75 * time.Second, wantState: Init},
		}},
		{"a first nak while acquiring restarts at once, a second backs off", []call{
			{now: 0, fail: true, decline: true},
			{now: 0, want: Acquire, wantAt: 60 * time.Second, wantState: Init},
			{now: 0, fail: true, decline: true},
			{now: 0, want: Wait, wantAt: 2 * time.Second, wantState: Init},
		}},
		{"long lease retries renew after half the time to T2, at least a minute", []call{
			{now: 0, grant: ptr(lease4(t0, time.Hour, "192.0.2.150/24"))}, // T1 30m, T2 52m30s
			{now: 30 * time.Minute, want: Renew, wantAt: 52*time.Minute + 30*time.Second, wantState: Renewing},
			{now: 30 * time.Minute, fail: true},
			{now: 30 * time.Minute, want: Wait, wantAt: 41*time.Minute + 15*time.Second, wantState: Renewing},
			{now: 52 * time.Minute, fail: true},
			{now: 52 * time.Minute, want: Wait, wantAt: 52*time.Minute + 30*time.Second, wantState: Renewing},
		}},
		{"server timers are used when sane", []call{
			{now: 0, grant: ptr(Lease{Family: IPv4, Start: t0, Lifetime: 100 * time.Second, T1: 20 * time.Second, T2: 40 * time.Second})},
			{now: 0, want: Wait, wantAt: 20 * time.Second, wantState: Bound},
			{now: 20 * time.Second, want: Renew, wantAt: 40 * time.Second, wantState: Renewing},
		}},
		{"late wake-up past expiry expires directly", []call{
			{now: 0, grant: &l},
			{now: 500 * time.Second, want: Expire, wantAt: -1, wantState: Init},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runCalls(t, &Machine{}, tc.calls)
		})
	}
}

func TestMachineStop(t *testing.T) {
	var m Machine
	if _, ok := m.Stop(); ok {
		t.Errorf("Stop without a lease returned a lease to release")
	}
	m = Machine{}
	l := lease4(t0, 120*time.Second, "192.0.2.150/24")
	m.Granted(l)
	got, ok := m.Stop()
	if !ok || got.Address != l.Address {
		t.Errorf("Stop = %v, %v; want the held lease", got.Address, ok)
	}
	if s := m.Next(at(time.Hour)); s.Action != Idle {
		t.Errorf("Next after Stop = %s, want idle", s.Action)
	}
	if m.Granted(l) {
		t.Errorf("Granted after Stop reported a change")
	}
}

func TestGrantedReportsAddressChange(t *testing.T) {
	var m Machine
	a := lease4(t0, 120*time.Second, "192.0.2.150/24")
	b := lease4(at(time.Minute), 120*time.Second, "192.0.2.151/24")
	got := []bool{m.Granted(a), m.Granted(a), m.Granted(b)}
	if diff := cmp.Diff([]bool{true, false, true}, got); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
}

func TestDefaultTimers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     Lease
		t1, t2 time.Duration
	}{
		{"v4 none sent", Lease{Family: IPv4, Lifetime: 120 * time.Second}, 60 * time.Second, 105 * time.Second},
		{"v4 T2 below T1", Lease{Family: IPv4, Lifetime: 120 * time.Second, T1: 80 * time.Second, T2: 10 * time.Second}, 80 * time.Second, 105 * time.Second},
		{"v6 from preferred", Lease{Family: IPv6, Lifetime: 200 * time.Second, Preferred: 100 * time.Second}, 50 * time.Second, 80 * time.Second},
		{"infinite", Lease{Family: IPv4, Lifetime: Infinite}, Infinite, Infinite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.withDefaultTimers()
			if diff := cmp.Diff([]time.Duration{tc.t1, tc.t2}, []time.Duration{got.T1, got.T2}); diff != "" {
				t.Errorf("[T1 T2] (-want +got):\n%s", diff)
			}
		})
	}
}
