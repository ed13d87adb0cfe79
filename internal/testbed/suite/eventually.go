package suite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Interval is how often Eventually checks.
const Interval = 250 * time.Millisecond

// Until calls check every interval until it returns nil, timeout passes or
// ctx ends; it returns nil or check's last error, wrapped with what ended
// the wait (a check never called is an error too).
func Until(ctx context.Context, timeout, interval time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("still not true after %v: %w", timeout, err)
			}
			return fmt.Errorf("%w (last: %w)", context.Cause(ctx), err)
		case <-tick.C:
		}
	}
}

// Eventually is Until for a test, under the test's context, every
// Interval: it fails t with what and check's last error.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	EventuallyEvery(t, timeout, Interval, what, check)
}

// EventuallyEvery is Eventually checking every interval: for what is
// timed by the polls (the intervals of the figures a test logs). In a
// cleanup, whose t.Context() has ended, it waits under a bounded context
// of its own (testContext), as Kubectl does.
func EventuallyEvery(t testing.TB, timeout, interval time.Duration, what string, check func() error) {
	t.Helper()
	ctx, cancel := testContext(t)
	defer cancel()
	if err := Until(ctx, timeout, interval, check); err != nil {
		if what == "" {
			t.Fatal(err)
		}
		t.Fatalf("%s: %v", what, err)
	}
}

// Cond is a check of a condition and of what to say while it is false.
func Cond(cond func() bool, describe func() string) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errors.New(describe())
	}
}
