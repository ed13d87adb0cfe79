package dhcp

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scripted is a fake exchanger answering from a list of outcomes, one per
// exchange, in order; when the script runs out it blocks until cancelled.
type scripted struct {
	mu       sync.Mutex
	outcomes []outcome
	calls    []string
	released []netip.Prefix
}

type outcome struct {
	addr string // leased address; "" with err
	err  error
}

// next returns the next scripted outcome as a lease short enough for the
// real-clock driver to renew within a test: T1 30ms; T2 (5s) and the lifetime (10s) are far enough that a
// slow scheduler never turns a renewal into a rebind.
func (s *scripted) next(ctx context.Context, call string) (Lease, error) {
	s.mu.Lock()
	s.calls = append(s.calls, call)
	if len(s.outcomes) == 0 {
		s.mu.Unlock()
		<-ctx.Done()
		return Lease{}, ctx.Err()
	}
	o := s.outcomes[0]
	s.outcomes = s.outcomes[1:]
	s.mu.Unlock()
	if o.err != nil {
		return Lease{}, o.err
	}
	return Lease{Address: netip.MustParsePrefix(o.addr), Lifetime: 10 * time.Second, T1: 30 * time.Millisecond, T2: 5 * time.Second}, nil
}

func (s *scripted) acquire(ctx context.Context) (Lease, error) { return s.next(ctx, "acquire") }
func (s *scripted) renew(ctx context.Context, _ Lease) (Lease, error) {
	return s.next(ctx, "renew")
}
func (s *scripted) rebind(ctx context.Context, _ Lease) (Lease, error) {
	return s.next(ctx, "rebind")
}
func (s *scripted) release(_ context.Context, l Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = append(s.released, l.Address)
	return nil
}
func (s *scripted) close() error { return nil }

type kindAddr struct {
	Kind EventKind
	Addr string
}

func TestDriverEvents(t *testing.T) {
	declined := errors.Join(errDeclined)
	for _, tc := range []struct {
		name      string
		script    []outcome
		wantEv    []kindAddr
		wantCalls []string
	}{
		{
			name:      "renewals keep the address",
			script:    []outcome{{addr: "192.0.2.150/24"}, {addr: "192.0.2.150/24"}, {addr: "192.0.2.150/24"}},
			wantEv:    []kindAddr{{LeaseBound, "192.0.2.150/24"}, {LeaseRenewed, "192.0.2.150/24"}, {LeaseRenewed, "192.0.2.150/24"}, {LeaseReleased, "192.0.2.150/24"}},
			wantCalls: []string{"acquire", "renew", "renew", "renew"},
		},
		{
			name:      "declined renewal drops the lease and acquires again",
			script:    []outcome{{addr: "192.0.2.150/24"}, {err: declined}, {addr: "192.0.2.151/24"}},
			wantEv:    []kindAddr{{LeaseBound, "192.0.2.150/24"}, {LeaseExpired, "192.0.2.150/24"}, {LeaseBound, "192.0.2.151/24"}, {LeaseReleased, "192.0.2.151/24"}},
			wantCalls: []string{"acquire", "renew", "acquire", "renew"},
		},
		{
			name:      "a different address from renewal replaces the old one",
			script:    []outcome{{addr: "192.0.2.150/24"}, {addr: "192.0.2.152/24"}},
			wantEv:    []kindAddr{{LeaseBound, "192.0.2.150/24"}, {LeaseExpired, "192.0.2.150/24"}, {LeaseBound, "192.0.2.152/24"}, {LeaseReleased, "192.0.2.152/24"}},
			wantCalls: []string{"acquire", "renew", "renew"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &scripted{outcomes: tc.script}
			ev := make(events, 16)
			c := start(context.Background(), Config{Interface: "eth0", OnEvent: ev.on}, IPv4, ex)
			t.Cleanup(func() { _ = c.Stop(false) })
			var got []kindAddr
			// All but the final Released come from the driver; wait for them.
			for range len(tc.wantEv) - 1 {
				select {
				case e := <-ev:
					got = append(got, kindAddr{e.Kind, e.Lease.Address.String()})
				case <-time.After(5 * time.Second):
					t.Fatalf("events so far %v; want %v", got, tc.wantEv)
				}
			}
			// Wait until the driver has used the whole script and blocks.
			deadline := time.Now().Add(5 * time.Second)
			for {
				ex.mu.Lock()
				n := len(ex.calls)
				ex.mu.Unlock()
				if n == len(tc.wantCalls) || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := c.Stop(true); err != nil {
				t.Fatal(err)
			}
			e := <-ev
			got = append(got, kindAddr{e.Kind, e.Lease.Address.String()})
			if diff := cmp.Diff(tc.wantEv, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, ex.calls); diff != "" {
				t.Errorf("exchanges (-want +got):\n%s", diff)
			}
			if len(ex.released) != 1 {
				t.Errorf("released %v, want one lease", ex.released)
			}
		})
	}
}
