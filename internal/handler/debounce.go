package handler

import "time"

// debouncer turns a burst of change signals into one refresh: the refresh
// is due once no signal came for quiet, but no later than maxWait after
// the burst's first signal, so a steady stream of changes (a flapping
// link) still gets reported. It holds no timer; the caller asks when the
// refresh is due and arms its own.
type debouncer struct {
	quiet, maxWait time.Duration
	first, due     time.Time // zero when no refresh is pending
}

// signal records a change at now and returns when the refresh is due.
func (d *debouncer) signal(now time.Time) time.Time {
	if d.first.IsZero() {
		d.first = now
	}
	d.due = now.Add(d.quiet)
	if limit := d.first.Add(d.maxWait); d.due.After(limit) {
		d.due = limit
	}
	return d.due
}

// pending reports whether a refresh is due at some point.
func (d *debouncer) pending() bool { return !d.first.IsZero() }

// fire reports whether the pending refresh is due at now; if so the burst
// is over and the next signal starts a new one.
func (d *debouncer) fire(now time.Time) bool {
	if d.first.IsZero() || now.Before(d.due) {
		return false
	}
	d.first, d.due = time.Time{}, time.Time{}
	return true
}
