package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Controller holds the cluster controller's counters. Only the leader
// reconciles, so only the leader's move. A nil *Controller records
// nothing.
type Controller struct {
	statusWrites   *prometheus.CounterVec
	permitsGranted prometheus.Counter
	permitsRevoked prometheus.Counter
	aborts         prometheus.Counter
	collected      *prometheus.CounterVec
}

// NewController registers the controller's counters with reg; registered
// already (another controller in this process), it shares them.
func NewController(reg prometheus.Registerer) (*Controller, error) {
	var c Controller
	var err error
	if c.statusWrites, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "knmstate_controller_policy_status_writes_total",
		Help: "Policy status writes, by the status written (the True condition): Available, Degraded, Progressing, Ignored.",
	}, []string{"status"})); err != nil {
		return nil, err
	}
	if c.permitsGranted, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "knmstate_controller_permits_granted_total",
		Help: "Rollout permits granted to enactments (one per node and policy generation that applies).",
	})); err != nil {
		return nil, err
	}
	if c.permitsRevoked, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "knmstate_controller_permits_revoked_total",
		Help: "Rollout permits taken back (stale generation, or a node NotReady for longer than --reclaim-after).",
	})); err != nil {
		return nil, err
	}
	if c.aborts, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "knmstate_controller_enactments_aborted_total",
		Help: "Enactments told to abort because as many nodes as maxUnavailable failed.",
	})); err != nil {
		return nil, err
	}
	if c.collected, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "knmstate_controller_enactments_collected_total",
		Help: "Enactments garbage-collected, by reason: policyDeleted, olderThanPolicy, ownedByOtherPolicy, nodeDeleted, nodeNotMatching.",
	}, []string{"reason"})); err != nil {
		return nil, err
	}
	return &c, nil
}

// PolicyStatusWritten counts one policy status write.
func (c *Controller) PolicyStatusWritten(status string) {
	if c == nil {
		return
	}
	c.statusWrites.WithLabelValues(status).Inc()
}

// PermitsGranted counts n granted permits.
func (c *Controller) PermitsGranted(n int) {
	if c == nil {
		return
	}
	c.permitsGranted.Add(float64(n))
}

// PermitsRevoked counts n revoked permits.
func (c *Controller) PermitsRevoked(n int) {
	if c == nil {
		return
	}
	c.permitsRevoked.Add(float64(n))
}

// EnactmentsAborted counts n aborts.
func (c *Controller) EnactmentsAborted(n int) {
	if c == nil {
		return
	}
	c.aborts.Add(float64(n))
}

// EnactmentCollected counts one garbage-collected enactment.
func (c *Controller) EnactmentCollected(reason string) {
	if c == nil {
		return
	}
	c.collected.WithLabelValues(reason).Inc()
}
