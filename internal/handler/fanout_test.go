package handler

import (
	"context"
	"testing"
	"time"
)

// recv reports whether ch yields within a while (a hang guard): "signal",
// "closed" or "nothing".
func recv(t *testing.T, ch <-chan struct{}, wait time.Duration) string {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			return "closed"
		}
		return "signal"
	case <-time.After(wait):
		return "nothing"
	}
}

// pending reports what ch holds now, without waiting: "signal", "closed"
// or "nothing". broadcast fills the subscribers' buffers before it
// returns, so after it nothing is still on its way.
func pending(ch <-chan struct{}) string {
	select {
	case _, ok := <-ch:
		if !ok {
			return "closed"
		}
		return "signal"
	default:
		return "nothing"
	}
}

func TestChangeFanout(t *testing.T) {
	const long = 5 * time.Second
	tests := []struct {
		name string
		run  func(t *testing.T, f *changeFanout, src chan struct{})
	}{
		{"every subscriber gets the signal", func(t *testing.T, f *changeFanout, src chan struct{}) {
			a, _ := f.Subscribe(t.Context())
			b, _ := f.Subscribe(t.Context())
			f.broadcast()
			if got := recv(t, a, long); got != "signal" {
				t.Errorf("first subscriber: %s, want signal", got)
			}
			if got := recv(t, b, long); got != "signal" {
				t.Errorf("second subscriber: %s, want signal", got)
			}
		}},
		{"signals coalesce for a slow subscriber", func(t *testing.T, f *changeFanout, src chan struct{}) {
			a, _ := f.Subscribe(t.Context())
			f.broadcast()
			f.broadcast()
			f.broadcast()
			if got := recv(t, a, long); got != "signal" {
				t.Errorf("first receive: %s, want signal", got)
			}
			if got := pending(a); got != "nothing" {
				t.Errorf("second receive: %s, want nothing (coalesced)", got)
			}
		}},
		{"a later subscriber misses earlier signals", func(t *testing.T, f *changeFanout, src chan struct{}) {
			f.broadcast()
			a, _ := f.Subscribe(t.Context())
			if got := pending(a); got != "nothing" {
				t.Errorf("receive: %s, want nothing", got)
			}
		}},
		{"a cancelled subscriber is closed, the others go on", func(t *testing.T, f *changeFanout, src chan struct{}) {
			ctx, cancel := context.WithCancel(t.Context())
			a, _ := f.Subscribe(ctx)
			b, _ := f.Subscribe(t.Context())
			cancel()
			if got := recv(t, a, long); got != "closed" {
				t.Errorf("cancelled subscriber: %s, want closed", got)
			}
			f.broadcast()
			if got := recv(t, b, long); got != "signal" {
				t.Errorf("other subscriber: %s, want signal", got)
			}
		}},
		{"closing the source closes every subscriber and Done", func(t *testing.T, f *changeFanout, src chan struct{}) {
			a, _ := f.Subscribe(t.Context())
			src <- struct{}{} // forwarded by the fanout's goroutine
			if got := recv(t, a, long); got != "signal" {
				t.Errorf("subscriber: %s, want signal", got)
			}
			close(src)
			if got := recv(t, a, long); got != "closed" {
				t.Errorf("subscriber: %s, want closed", got)
			}
			if got := recv(t, f.Done(), long); got != "closed" {
				t.Errorf("Done: %s, want closed", got)
			}
			late, _ := f.Subscribe(t.Context())
			if got := recv(t, late, long); got != "closed" {
				t.Errorf("subscriber after the source closed: %s, want closed", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := make(chan struct{})
			f := newChangeFanout(src)
			tt.run(t, f, src)
		})
	}
}
