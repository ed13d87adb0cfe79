package handler

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/internal/metrics/metricstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/probe"
)

// testMetrics is a handler's instruments on a registry of their own.
type testMetrics struct {
	*metrics.Handler
	reg *prometheus.Registry
}

func newTestMetrics(t testing.TB) testMetrics {
	t.Helper()
	reg := prometheus.NewRegistry()
	h, err := metrics.NewHandler(reg)
	if err != nil {
		t.Fatal(err)
	}
	return testMetrics{h, reg}
}

// value sums the series of name whose labels include labels (k, v, k, v,
// ...): counters by value, histograms by sample count.
func (m testMetrics) value(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	f, err := metricstest.Gather(m.reg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	return f.Sum(name, want)
}

// waitValue waits up to timeout for value to reach want, then fails the
// test with the last value seen.
func (m testMetrics) waitValue(t testing.TB, timeout time.Duration, name string, want float64, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := m.value(t, name, labels...)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v after %s, want %v", name, labels, got, timeout, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestApplyErrorOutcome(t *testing.T) {
	verification := &nmstate.Error{Kind: nmstate.Verification, Path: "interfaces[name=eth1].ipv4", Detail: "address missing"}
	backend := &nmstate.Error{Kind: nmstate.Backend, Detail: "operation not permitted"}
	for _, tc := range []struct {
		name string
		err  error
		want txOutcome
	}{
		{"before any change", errors.New("reading the current state: EOF"), txOutcome{result: metrics.ApplyFailed}},
		{"invalid desired state", &nmstate.Error{Kind: nmstate.InvalidArgument}, txOutcome{result: metrics.ApplyFailed}},
		{"checkpoint pending", fmt.Errorf("%w: 123", apply.ErrCheckpointExists), txOutcome{result: metrics.ApplyFailed}},
		{"execution failed, rolled back", &apply.Failure{Err: backend}, txOutcome{result: metrics.ApplyRolledBack, reason: metrics.RollbackError}},
		{"verification failed, rolled back", &apply.Failure{Err: fmt.Errorf("verifying: %w", verification)}, txOutcome{result: metrics.ApplyRolledBack, reason: metrics.RollbackVerification}},
		{"rollback failed", &apply.Failure{Err: verification, Rollback: errors.New("executing the rollback: busy")}, txOutcome{result: metrics.ApplyRollbackFailed, reason: metrics.RollbackVerification}},
		{"wrapped failure", fmt.Errorf("apply: %w", &apply.Failure{Err: backend}), txOutcome{result: metrics.ApplyRolledBack, reason: metrics.RollbackError}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, applyErrorOutcome(tc.err), cmp.AllowUnexported(txOutcome{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A change refused after the apply (a probe, or recording its revert
// state) is told apart from one apply.Apply rolled back itself, and worded
// as upstream words it.
func TestTransactionOutcome(t *testing.T) {
	probeErr := &probe.Failure{Probe: probe.PingName, Err: errors.New("no reply")}
	recordErr := errors.New("recording what to revert on delete: conflict")
	verification := &nmstate.Error{Kind: nmstate.Verification, Detail: "address missing"}
	applied := &apply.Result{Checkpoint: "c1"}
	for _, tc := range []struct {
		name    string
		tx      *apply.TxResult
		err     error
		want    txOutcome
		wantMsg string
	}{
		{"committed", &apply.TxResult{Apply: applied, Committed: true}, nil, txOutcome{result: metrics.ApplySuccess}, ""},
		{"probe failed, rolled back", &apply.TxResult{Apply: applied, Refused: true, Probe: probe.PingName},
			&apply.Failure{Err: probeErr, Checkpoint: "c1"},
			txOutcome{result: metrics.ApplyRolledBack, reason: metrics.RollbackProbe, probe: probe.PingName},
			"rolling back desired state configuration: probe ping: no reply"},
		{"probe failed, rollback failed", &apply.TxResult{Apply: applied, Refused: true, Probe: probe.PingName},
			&apply.Failure{Err: probeErr, Checkpoint: "c1", Rollback: errors.New("busy")},
			txOutcome{result: metrics.ApplyRollbackFailed, reason: metrics.RollbackProbe, probe: probe.PingName},
			"rolling back desired state configuration: probe ping: no reply (rollback failed: busy)"},
		{"revert state not recorded, rolled back", &apply.TxResult{Apply: applied, Refused: true},
			&apply.Failure{Err: recordErr, Checkpoint: "c1"},
			txOutcome{result: metrics.ApplyRolledBack, reason: metrics.RollbackError},
			"rolling back desired state configuration: " + recordErr.Error()},
		{"verification failed in the apply", &apply.TxResult{},
			&apply.Failure{Err: verification, Checkpoint: "c1"},
			txOutcome{result: metrics.ApplyRolledBack, reason: metrics.RollbackVerification},
			(&apply.Failure{Err: verification, Checkpoint: "c1"}).Error()},
		{"commit failed", &apply.TxResult{Apply: applied}, errors.New("committing checkpoint c1: EIO"),
			txOutcome{result: metrics.ApplyFailed}, "committing checkpoint c1: EIO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := transactionOutcome(tc.tx, tc.err)
			if diff := cmp.Diff(tc.want, o, cmp.AllowUnexported(txOutcome{})); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if msg != tc.wantMsg {
				t.Errorf("error %q, want %q", msg, tc.wantMsg)
			}
		})
	}
}
