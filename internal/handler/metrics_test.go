package handler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/internal/metrics/metricstest"
	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
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
