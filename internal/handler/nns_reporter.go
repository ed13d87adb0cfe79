package handler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1beta1 "github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/metrics"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// shower reads the node's network state (the kernel backend).
type shower interface {
	Show(ctx context.Context) (*nmstate.State, error)
}

// reporter keeps one node's NodeNetworkState equal to the node's filtered
// network state. One goroutine (run) owns all its fields except the event
// queue, which the API watch fills.
type reporter struct {
	node    string
	backend shower
	changes <-chan struct{} // the backend's change signals
	client  client.Client   // direct (uncached) API client for writes and reads
	filter  FilterOptions
	labels  map[string]string
	version string
	// nmVersion is NetworkManager's version when the node is driven
	// through it ("" = kernel backend).
	nmVersion string
	resync    time.Duration
	deb       debouncer
	retryMin  time.Duration
	retryMax  time.Duration
	log       logr.Logger
	now       func() time.Time
	// alive is called after every successful refresh and every
	// heartbeat once one refresh succeeded (the ready file); nil = none.
	alive func()

	// known is the newest copy of the object seen (nil = does not exist).
	known *view
	memo  reportMemo

	mu     sync.Mutex
	events []nnsEvent
	eventc chan struct{} // 1-buffered: events are queued

	// writes counts API writes (creates and status updates), for logs.
	writes int
	// metrics counts them for Prometheus (nil: not counted).
	metrics *metrics.Handler
}

// nnsEvent is one watch event about the node's NodeNetworkState.
type nnsEvent struct {
	obj     *nmstatev1beta1.NodeNetworkState
	deleted bool
}

// observe queues a watch event; called from the watch's goroutine.
func (r *reporter) observe(obj *nmstatev1beta1.NodeNetworkState, deleted bool) {
	if obj == nil || obj.Name != r.node {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, nnsEvent{obj: obj, deleted: deleted})
	r.mu.Unlock()
	select {
	case r.eventc <- struct{}{}:
	default:
	}
}

// applyEvents folds queued watch events into known and reports whether a
// refresh is needed: the object was deleted, or someone else changed it
// (our own writes are not newer than known, so they are no-ops here).
func (r *reporter) applyEvents() (bool, error) {
	r.mu.Lock()
	evs := r.events
	r.events = nil
	r.mu.Unlock()
	refresh := false
	for _, ev := range evs {
		if ev.deleted {
			if r.known != nil && r.known.obj.UID == ev.obj.UID {
				r.known = nil
				refresh = true
			}
			continue
		}
		if !newer(r.known.objOrNil(), ev.obj) {
			continue
		}
		v, err := newView(ev.obj)
		if err != nil {
			return refresh, err
		}
		r.known = v
		refresh = true
	}
	return refresh, nil
}

func (v *view) objOrNil() *nmstatev1beta1.NodeNetworkState {
	if v == nil {
		return nil
	}
	return v.obj
}

// run reports until ctx ends. The first refresh happens at once; then
// every change signal (debounced), every external change to the object,
// and every resync period. A failed refresh is retried with backoff.
func (r *reporter) run(ctx context.Context) error {
	debounce := time.NewTimer(0)
	<-debounce.C
	retry := time.NewTimer(0)
	<-retry.C
	resync := time.NewTicker(r.resync)
	defer debounce.Stop()
	defer retry.Stop()
	defer resync.Stop()
	backoff := time.Duration(0)
	heartbeat := time.NewTicker(heartbeatPeriod)
	defer heartbeat.Stop()
	reported := false

	refresh := func(why string) {
		err := r.refresh(ctx, why)
		if err == nil {
			backoff = 0
			retry.Stop()
			reported = true
			if r.alive != nil {
				r.alive()
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		backoff = min(max(2*backoff, r.retryMin), r.retryMax)
		r.log.Error(err, "refreshing node network state failed", "retryIn", backoff)
		retry.Reset(backoff)
	}
	signal := func() {
		due := r.deb.signal(r.now())
		debounce.Reset(due.Sub(r.now()))
	}

	if _, err := r.applyEvents(); err != nil {
		r.log.Error(err, "reading node network state event")
	}
	refresh("start")
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-r.changes:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("kernel change subscription ended")
			}
			signal()
		case <-r.eventc:
			changed, err := r.applyEvents()
			if err != nil {
				r.log.Error(err, "reading node network state event")
			}
			if changed {
				signal()
			}
		case <-debounce.C:
			if r.deb.fire(r.now()) {
				refresh("change")
			} else if r.deb.pending() {
				debounce.Reset(r.deb.due.Sub(r.now()))
			}
		case <-retry.C:
			refresh("retry")
		case <-resync.C:
			refresh("resync")
		case <-heartbeat.C:
			// The loop still turns: a hung refresh or a stuck loop
			// stops this, and the liveness probe sees it.
			if reported && r.alive != nil {
				r.alive()
			}
		}
	}
}

// heartbeatPeriod is how often a running reporter says it is alive.
const heartbeatPeriod = 30 * time.Second

// refreshTimeout bounds one refresh (read and API calls): the API client
// has no timeout of its own, and a connection that hangs must not stop
// reporting for good.
const refreshTimeout = time.Minute

// refresh reads the state and writes what decide says.
func (r *reporter) refresh(ctx context.Context, why string) error {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	begin := r.now()
	st, err := r.backend.Show(ctx)
	if err != nil {
		return fmt.Errorf("reading network state: %w", err)
	}
	rep, err := r.memo.report(Filter(st, r.filter), r.version)
	rep = rep.withNM(r.nmVersion)
	if err != nil {
		return err
	}
	shown := r.now()
	// A conflict or a vanished object means known was stale; it is
	// replaced by what the API said and decided again, a few times.
	const attempts = 5
	for attempt := 0; attempt < attempts; attempt++ {
		act := decide(r.known, rep)
		if act == actNone {
			if attempt == 0 {
				r.log.V(2).Info("node network state unchanged", "trigger", why)
			} else {
				r.log.V(1).Info("wrote node network state", "trigger", why, "writes", r.writes,
					"showDuration", shown.Sub(begin), "writeDuration", r.now().Sub(shown))
			}
			return nil
		}
		var err error
		switch act {
		case actCreate:
			err = r.create(ctx)
		case actStatus:
			err = r.writeStatus(ctx, rep)
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("node network state %s: still out of date after %d attempts", r.node, attempts)
}

// create creates the object (metadata only: status is a subresource),
// owned by the Node so that it goes away with it. If it exists already
// known becomes the existing object.
func (r *reporter) create(ctx context.Context) error {
	var node corev1.Node
	if err := r.client.Get(ctx, types.NamespacedName{Name: r.node}, &node); err != nil {
		return fmt.Errorf("reading node %s: %w", r.node, err)
	}
	obj := &nmstatev1beta1.NodeNetworkState{
		ObjectMeta: metav1.ObjectMeta{
			Name:   r.node,
			Labels: maps.Clone(r.labels),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		},
	}
	err := r.client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		return r.reread(ctx)
	}
	if err != nil {
		return fmt.Errorf("creating node network state %s: %w", r.node, err)
	}
	r.writes++
	r.metrics.NNSWritten(r.node, metrics.NNSCreate)
	r.log.Info("created node network state")
	return r.setKnown(obj)
}

// writeStatus writes the report over the known object's status.
func (r *reporter) writeStatus(ctx context.Context, rep report) error {
	obj := r.known.obj.DeepCopy()
	obj.Status = nextStatus(obj.Status, r.known.state, rep, r.now())
	err := r.client.Status().Update(ctx, obj)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return r.reread(ctx)
	}
	if err != nil {
		return fmt.Errorf("writing node network state %s status: %w", r.node, err)
	}
	r.writes++
	r.metrics.NNSWritten(r.node, metrics.NNSStatus)
	return r.setKnown(obj)
}

// reread replaces known with the object as the API has it now.
func (r *reporter) reread(ctx context.Context) error {
	var obj nmstatev1beta1.NodeNetworkState
	err := r.client.Get(ctx, types.NamespacedName{Name: r.node}, &obj)
	if apierrors.IsNotFound(err) {
		r.known = nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading node network state %s: %w", r.node, err)
	}
	return r.setKnown(&obj)
}

func (r *reporter) setKnown(obj *nmstatev1beta1.NodeNetworkState) error {
	v, err := newView(obj)
	if err != nil {
		return err
	}
	r.known = v
	return nil
}
