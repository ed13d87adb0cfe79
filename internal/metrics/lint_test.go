package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// gauges serves one sample of each upstream gauge, as the controller's
// collector does.
type gauges struct{}

func (gauges) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range UpstreamGauges() {
		ch <- g.Desc()
	}
}

func (gauges) Collect(ch chan<- prometheus.Metric) {
	for _, g := range UpstreamGauges() {
		labels := make([]string, len(g.Labels))
		for i := range labels {
			labels[i] = "x"
		}
		ch <- prometheus.MustNewConstMetric(g.Desc(), prometheus.GaugeValue, 1, labels...)
	}
}

// everything registers every metric of knmstate with reg and gives each a
// series.
func everything(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	h, err := NewHandler(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewController(reg)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOperator(reg)
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(gauges{})
	h.ObserveApply("n1", ApplySuccess, time.Second)
	h.RolledBack("n1", RollbackProbe)
	h.ProbeFailed("n1", "ping")
	h.NNSWritten("n1", NNSStatus)
	h.EnactmentStatusWritten("n1")
	h.Drifted("n1")
	h.Repaired("n1", true)
	c.PolicyStatusWritten("Available")
	c.PermitsGranted(1)
	c.PermitsRevoked(1)
	c.EnactmentsAborted(1)
	c.EnactmentCollected("policyDeleted")
	o.ObserveReconcile(time.Second, nil)
}

// TestLint runs Prometheus' own linter over every metric knmstate exports
// (names, units, _total on counters, help texts).
func TestLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	everything(t, reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, "knmstate_") && !strings.HasPrefix(name, "kubernetes_nmstate_") {
			t.Errorf("%s: neither knmstate_ nor kubernetes_nmstate_", name)
		}
	}
}

// TestSharedRegistration: a second handler (or controller) in the same
// process counts into the same series.
func TestSharedRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewHandler(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewHandler(reg)
	if err != nil {
		t.Fatal(err)
	}
	a.RolledBack("n1", RollbackVerification)
	b.RolledBack("n1", RollbackVerification)
	b.RolledBack("n2", RollbackVerification)
	if got := testutil.ToFloat64(a.rollbacks.WithLabelValues("n1", "verification")); got != 2 {
		t.Errorf("n1 rollbacks = %v, want 2", got)
	}
	c1, err := NewController(reg)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := NewController(reg)
	if err != nil {
		t.Fatal(err)
	}
	c1.PermitsGranted(2)
	c2.PermitsGranted(3)
	if got := testutil.ToFloat64(c1.permitsGranted); got != 5 {
		t.Errorf("permits granted = %v, want 5", got)
	}

	// A different metric under a taken name is an error.
	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "knmstate_handler_rollbacks_total", Help: "not ours"}))
	if _, err := NewHandler(clash); err == nil {
		t.Error("NewHandler over a clashing metric: no error")
	}
}

func TestNilRecordsNothing(t *testing.T) {
	var h *Handler
	h.ObserveApply("n1", ApplyFailed, time.Second)
	h.RolledBack("n1", RollbackError)
	h.ProbeFailed("n1", "dns")
	h.NNSWritten("n1", NNSCreate)
	h.EnactmentStatusWritten("n1")
	h.Drifted("n1")
	h.Repaired("n1", true)
	var c *Controller
	c.PolicyStatusWritten("Degraded")
	c.PermitsGranted(1)
	c.PermitsRevoked(1)
	c.EnactmentsAborted(1)
	c.EnactmentCollected("nodeDeleted")
	var o *Operator
	o.ObserveReconcile(time.Second, errors.New("x"))
}

func TestOperatorResult(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := NewOperator(reg)
	if err != nil {
		t.Fatal(err)
	}
	o.ObserveReconcile(20*time.Millisecond, nil)
	o.ObserveReconcile(30*time.Millisecond, nil)
	o.ObserveReconcile(time.Second, errors.New("apply failed"))
	got := map[string]float64{}
	for _, r := range []string{ReconcileSuccess, ReconcileError} {
		got[r] = testutil.ToFloat64(o.reconciles.WithLabelValues(r))
	}
	if diff := cmp.Diff(map[string]float64{"success": 2, "error": 1}, got); diff != "" {
		t.Errorf("reconciles (-want +got):\n%s", diff)
	}
	if n := testutil.CollectAndCount(o.duration); n != 2 {
		t.Errorf("%d duration series, want 2", n)
	}
}
