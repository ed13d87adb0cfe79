package handler

import (
	"testing"
	"time"
)

func TestDebouncer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		signal  bool // signal at ms, else fire at ms
		ms      int
		wantDue int  // for signals: due time in ms
		fired   bool // for fires
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"single change fires after the quiet time", []step{
			{signal: true, ms: 0, wantDue: 200},
			{ms: 199, fired: false},
			{ms: 200, fired: true},
			{ms: 400, fired: false}, // nothing pending any more
		}},
		{"a burst is one refresh after it goes quiet", []step{
			{signal: true, ms: 0, wantDue: 200},
			{signal: true, ms: 150, wantDue: 350},
			{ms: 200, fired: false},
			{ms: 350, fired: true},
		}},
		{"a steady stream still fires at the maximum wait", []step{
			{signal: true, ms: 0, wantDue: 200},
			{signal: true, ms: 190, wantDue: 390},
			{signal: true, ms: 380, wantDue: 580},
			{signal: true, ms: 570, wantDue: 770},
			{signal: true, ms: 760, wantDue: 960},
			{signal: true, ms: 950, wantDue: 1000},
			{ms: 1000, fired: true},
			{signal: true, ms: 1010, wantDue: 1210}, // a new burst
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := debouncer{quiet: 200 * time.Millisecond, maxWait: time.Second}
			for i, s := range tc.steps {
				if s.signal {
					if got := d.signal(at(s.ms)); !got.Equal(at(s.wantDue)) {
						t.Errorf("step %d: signal at %dms: due %v, want %dms", i, s.ms, got.Sub(t0), s.wantDue)
					}
					continue
				}
				if got := d.fire(at(s.ms)); got != s.fired {
					t.Errorf("step %d: fire at %dms = %v, want %v", i, s.ms, got, s.fired)
				}
			}
		})
	}
}
