package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ApplyResult is how one policy apply (a transaction: probe selection,
// checkpoint, apply, verify, probes, commit or rollback) ended.
type ApplyResult string

// The apply results.
const (
	// ApplySuccess: committed, or nothing to change.
	ApplySuccess ApplyResult = "success"
	// ApplyRolledBack: the node was changed, then restored to the
	// checkpoint (a probe or the verification failed, or execution).
	ApplyRolledBack ApplyResult = "rolled_back"
	// ApplyRollbackFailed: the rollback itself failed; the node's state is
	// whatever the failure left.
	ApplyRollbackFailed ApplyResult = "rollback_failed"
	// ApplyFailed: failed without a rollback, mostly before anything
	// changed (the state could not be read, merged or planned; another
	// checkpoint was pending), or the commit failed.
	ApplyFailed ApplyResult = "failed"
)

// RollbackReason is why the handler rolled a checkpoint back.
type RollbackReason string

// The rollback reasons.
const (
	// RollbackProbe: a probe failed after the apply (which one:
	// knmstate_handler_probe_failures_total).
	RollbackProbe RollbackReason = "probe"
	// RollbackVerification: the node did not show the desired state.
	RollbackVerification RollbackReason = "verification"
	// RollbackError: executing the plan failed.
	RollbackError RollbackReason = "error"
	// RollbackPendingCheckpoint: a checkpoint nobody committed (a handler
	// or nmstatectl that died between apply and commit) was found at start
	// or before an apply.
	RollbackPendingCheckpoint RollbackReason = "pending_checkpoint"
)

// NNSWrite is the kind of a NodeNetworkState write.
type NNSWrite string

// The NodeNetworkState writes.
const (
	NNSCreate NNSWrite = "create"
	NNSStatus NNSWrite = "status"
)

// ApplyBuckets are the apply duration histogram's buckets, in seconds: an
// apply without probes takes well under a second; probes add seconds, a
// failing one its whole timeout (40–60 s by default) plus the rollback.
var ApplyBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Handler holds the handler's metrics, labelled by node: a DaemonSet's
// pods are told apart by their node even when a ServiceMonitor drops the
// pod and instance labels (as kubernetes-nmstate's does), and the lab runs
// several nodes' handlers in one process. A nil *Handler records nothing.
type Handler struct {
	applyDuration   *prometheus.HistogramVec
	rollbacks       *prometheus.CounterVec
	probeFailures   *prometheus.CounterVec
	nnsWrites       *prometheus.CounterVec
	enactmentWrites *prometheus.CounterVec
	drifts          *prometheus.CounterVec
	repairs         *prometheus.CounterVec
}

// NewHandler registers the handler's metrics with reg; registered already
// (another handler in this process), it shares them.
func NewHandler(reg prometheus.Registerer) (*Handler, error) {
	var h Handler
	var err error
	if h.applyDuration, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "knmstate_handler_apply_duration_seconds",
		Help:    "Duration of policy applies on the node (probe selection, checkpoint, apply, verification, probes, commit or rollback), by result: success, rolled_back, rollback_failed, failed.",
		Buckets: ApplyBuckets,
	}, []string{"node", "result"})); err != nil {
		return nil, err
	}
	if h.rollbacks, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "knmstate_handler_rollbacks_total",
		Help: "Checkpoints the handler rolled back, by reason: probe, verification, error, pending_checkpoint.",
	}, []string{"node", "reason"})); err != nil {
		return nil, err
	}
	if h.probeFailures, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "knmstate_handler_probe_failures_total",
		Help: "Probes that failed after a policy apply (each failure rolls the apply back), by probe: ping, dns, api-server, node-readiness.",
	}, []string{"node", "probe"})); err != nil {
		return nil, err
	}
	if h.nnsWrites, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "knmstate_handler_nns_writes_total",
		Help: "Writes of the node's NodeNetworkState, by kind: create, status.",
	}, []string{"node", "kind"})); err != nil {
		return nil, err
	}
	if h.enactmentWrites, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "knmstate_handler_enactment_status_writes_total",
		Help: "Status writes of the node's NodeNetworkConfigurationEnactments.",
	}, []string{"node"})); err != nil {
		return nil, err
	}
	if h.drifts, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "knmstate_handler_drifts_total",
		Help: "Times an Available policy stopped showing on the node (its enactment's Drifted condition turned True).",
	}, []string{"node"})); err != nil {
		return nil, err
	}
	if h.repairs, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "knmstate_handler_drift_repairs_total",
		Help: "Re-applies of Available policies the node no longer showed (knmstate.io/enforce, or a reconcile that found the drift), by result: success, failed.",
	}, []string{"node", "result"})); err != nil {
		return nil, err
	}
	return &h, nil
}

// Drifted counts a policy that stopped showing on the node.
func (h *Handler) Drifted(node string) {
	if h == nil {
		return
	}
	h.drifts.WithLabelValues(node).Inc()
}

// Repaired counts a re-apply of a drifted policy; ok is its outcome.
func (h *Handler) Repaired(node string, ok bool) {
	if h == nil {
		return
	}
	result := "success"
	if !ok {
		result = "failed"
	}
	h.repairs.WithLabelValues(node, result).Inc()
}

// ObserveApply records one apply's duration and result.
func (h *Handler) ObserveApply(node string, result ApplyResult, d time.Duration) {
	if h == nil {
		return
	}
	h.applyDuration.WithLabelValues(node, string(result)).Observe(d.Seconds())
}

// RolledBack counts one rollback.
func (h *Handler) RolledBack(node string, reason RollbackReason) {
	if h == nil {
		return
	}
	h.rollbacks.WithLabelValues(node, string(reason)).Inc()
}

// ProbeFailed counts one failed probe.
func (h *Handler) ProbeFailed(node, probe string) {
	if h == nil {
		return
	}
	h.probeFailures.WithLabelValues(node, probe).Inc()
}

// NNSWritten counts one NodeNetworkState write.
func (h *Handler) NNSWritten(node string, kind NNSWrite) {
	if h == nil {
		return
	}
	h.nnsWrites.WithLabelValues(node, string(kind)).Inc()
}

// EnactmentStatusWritten counts one enactment status write.
func (h *Handler) EnactmentStatusWritten(node string) {
	if h == nil {
		return
	}
	h.enactmentWrites.WithLabelValues(node).Inc()
}
