package probe

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Probe is one check. Attempt tries once; Run repeats it every interval
// until it passes or Timeout ends.
type Probe struct {
	Name string
	// External probes (ping, DNS) depend on the network outside the node;
	// they are only run after an apply if they passed before it.
	External bool
	Timeout  time.Duration
	// AttemptTimeout bounds one attempt (0: attemptTimeout of the
	// interval).
	AttemptTimeout time.Duration
	Attempt        func(ctx context.Context) error
}

// poll is Poll with the probe's own attempt bound.
func (p Probe) poll(ctx context.Context, timeout, interval time.Duration, attempt func(ctx context.Context) error) error {
	at := p.AttemptTimeout
	if at == 0 {
		at = attemptTimeout(interval)
	}
	return pollEach(ctx, timeout, interval, at, attempt)
}

// Select returns the probes to run after an apply: every internal probe,
// and the external ones that passed before the apply (passed, by name). A
// gateway that did not answer before cannot be blamed on the apply
// (upstream's rule).
func Select(all []Probe, passed map[string]bool) []Probe {
	var out []Probe
	for _, p := range all {
		if !p.External || passed[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

// Names are the probes' names, in order (for logs).
func Names(probes []Probe) []string {
	out := make([]string, len(probes))
	for i, p := range probes {
		out[i] = p.Name
	}
	return out
}

// Poll runs attempt every interval until it succeeds, timeout passes or ctx
// ends; the error is the last attempt's.
func Poll(ctx context.Context, timeout, interval time.Duration, attempt func(ctx context.Context) error) error {
	return pollEach(ctx, timeout, interval, attemptTimeout(interval), attempt)
}

// pollEach is Poll with each attempt bounded by attemptTimeout.
func pollEach(ctx context.Context, timeout, interval, attemptTimeout time.Duration, attempt func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		err := attempt(actx)
		acancel()
		if err == nil {
			return nil
		}
		last = err
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return last
		case <-t.C:
		}
	}
}

// attemptTimeout bounds one attempt: long enough for an ARP/NDP
// resolution and a reply, short enough to retry within the probe's time.
func attemptTimeout(interval time.Duration) time.Duration {
	return max(3*time.Second, interval)
}

// Failure is the error of a probe that did not pass: which probe, and its
// last attempt's error.
type Failure struct {
	Probe string
	Err   error
}

func (f *Failure) Error() string { return fmt.Sprintf("probe %s: %v", f.Probe, f.Err) }

func (f *Failure) Unwrap() error { return f.Err }

// Run runs the probes one after the other; it stops at the first that does
// not pass within its timeout, with a *Failure.
func Run(ctx context.Context, probes []Probe, interval time.Duration) error {
	for _, p := range probes {
		if err := p.poll(ctx, p.Timeout, interval, p.Attempt); err != nil {
			return &Failure{Probe: p.Name, Err: err}
		}
	}
	return nil
}

// Passing runs every external probe of all (each for at most timeout) and
// reports which passed: the input of Select, taken before an apply. A probe
// without a target (no default gateway, no name server), or whose target
// answered no (every name server said the name does not exist or refused),
// is given up at once: waiting would not change it, and it would delay
// every apply. After an apply, Run keeps retrying those.
func Passing(ctx context.Context, all []Probe, timeout, interval time.Duration) map[string]bool {
	passed := map[string]bool{}
	for _, p := range all {
		if !p.External {
			continue
		}
		var noTarget bool
		err := p.poll(ctx, min(timeout, p.Timeout), interval, func(ctx context.Context) error {
			if noTarget {
				return nil // stop polling; the result is decided below
			}
			err := p.Attempt(ctx)
			noTarget = errors.Is(err, errNoTarget) || errors.Is(err, errAnswered)
			return err
		})
		passed[p.Name] = err == nil && !noTarget
	}
	return passed
}

var (
	errNoTarget = errors.New("no target")
	errAnswered = errors.New("answered no")
)
