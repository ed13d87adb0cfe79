package benchcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Env is what every measurement gets.
type Env struct {
	// Runs is how many times a measurement repeats what it times (its
	// median is reported); 0 means each measurement's own default.
	Runs int
	// LabDir is the directory under which lab-based measurements create
	// their labs (one subdirectory each, removed afterwards).
	LabDir string
	// Binary is the knmstate executable the labs run (supervisor,
	// handlers, controller); nmstatectl and kube-apiserver are looked up
	// next to it.
	Binary string
	// RepoRoot is the repository checkout (examples/ is read from it).
	RepoRoot string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

func (e Env) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, format+"\n", args...)
	}
}

// runs is Env.Runs, or def when unset.
func (e Env) runs(def int) int {
	if e.Runs > 0 {
		return e.Runs
	}
	return def
}

// Measurement is one named measurement of the issue.
type Measurement struct {
	Name string
	// Timeout bounds the whole measurement, set-up and clean-up included.
	Timeout time.Duration
	// Run takes the measurement. It returns one or more rows; with an
	// error, the rows it has so far are kept.
	Run func(ctx context.Context, env Env) ([]Result, error)
}

// NotMeasurableError says a measurement cannot be taken on this build or
// machine (a component is missing), as opposed to one that failed.
type NotMeasurableError struct{ Reason string }

func (e *NotMeasurableError) Error() string { return "not measurable: " + e.Reason }

func notMeasurable(format string, args ...any) error {
	return &NotMeasurableError{Reason: fmt.Sprintf(format, args...)}
}

// Select returns the measurements named in only (all when only is
// empty), in registry order.
func Select(all []Measurement, only []string) ([]Measurement, error) {
	if len(only) == 0 {
		return all, nil
	}
	var names []string
	for _, m := range all {
		names = append(names, m.Name)
	}
	var errs []error
	for _, n := range only {
		if !slices.Contains(names, n) {
			errs = append(errs, fmt.Errorf("--only: unknown measurement %q (known: %s)", n, strings.Join(names, ", ")))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var out []Measurement
	for _, m := range all {
		if slices.Contains(only, m.Name) {
			out = append(out, m)
		}
	}
	return out, nil
}

// Report is the outcome of Run.
type Report struct {
	Results []Result
	// Failed names the measurements that failed (not those that were not
	// measurable).
	Failed []string
}

// Run takes each measurement in turn under its timeout. A failure or a
// measurement that cannot be taken becomes a row with a note; the others
// still run, unless ctx ends.
func Run(ctx context.Context, ms []Measurement, env Env) Report {
	var rep Report
	for _, m := range ms {
		if ctx.Err() != nil {
			rep.Results = append(rep.Results, Result{Name: m.Name, Note: "not run: interrupted"})
			rep.Failed = append(rep.Failed, m.Name)
			continue
		}
		env.logf("bench: %s (timeout %v)", m.Name, m.Timeout)
		start := time.Now()
		mctx, cancel := context.WithTimeout(ctx, m.Timeout)
		rows, err := m.Run(mctx, env)
		cancel()
		rep.Results = append(rep.Results, rows...)
		var nm *NotMeasurableError
		switch {
		case errors.As(err, &nm):
			rep.Results = append(rep.Results, Result{Name: m.Name, Note: nm.Error()})
		case err != nil:
			if mctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
				err = fmt.Errorf("timed out after %v: %w", m.Timeout, err)
			}
			rep.Results = append(rep.Results, Result{Name: m.Name, Note: "failed: " + err.Error()})
			rep.Failed = append(rep.Failed, m.Name)
		}
		env.logf("bench: %s done in %v", m.Name, time.Since(start).Round(time.Millisecond))
	}
	return rep
}
