package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ReconcileBuckets are the operator reconcile duration histogram's
// buckets, in seconds: a reconcile renders and applies a few dozen objects.
var ReconcileBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Operator holds the operator's metrics: one NMState reconcile at a time,
// by result. controller-runtime's controller_runtime_reconcile_total and
// controller_runtime_reconcile_time_seconds count the same reconciles by
// controller name; these carry knmstate's result classification and do not
// change when the controller is renamed. A nil *Operator records nothing.
type Operator struct {
	reconciles *prometheus.CounterVec
	duration   *prometheus.HistogramVec
}

// The operator's reconcile results.
const (
	ReconcileSuccess = "success"
	ReconcileError   = "error"
)

// NewOperator registers the operator's metrics with reg (for the
// binary: controller-runtime's metrics.Registry); registered already, it
// shares them.
func NewOperator(reg prometheus.Registerer) (*Operator, error) {
	var o Operator
	var err error
	if o.reconciles, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "knmstate_operator_reconciles_total",
		Help: "NMState reconciles of the operator, by result: success, error.",
	}, []string{"result"})); err != nil {
		return nil, err
	}
	if o.duration, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "knmstate_operator_reconcile_duration_seconds",
		Help:    "Duration of NMState reconciles of the operator, by result: success, error.",
		Buckets: ReconcileBuckets,
	}, []string{"result"})); err != nil {
		return nil, err
	}
	return &o, nil
}

// ObserveReconcile records one reconcile that took d and returned err.
// Call it with the reconcile's own error (deferred, around the whole
// Reconcile):
//
//	start := time.Now()
//	defer func() { r.metrics.ObserveReconcile(time.Since(start), err) }()
func (o *Operator) ObserveReconcile(d time.Duration, err error) {
	if o == nil {
		return
	}
	result := ReconcileSuccess
	if err != nil {
		result = ReconcileError
	}
	o.reconciles.WithLabelValues(result).Inc()
	o.duration.WithLabelValues(result).Observe(d.Seconds())
}
