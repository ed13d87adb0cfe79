package rollout

import (
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/extension"
)

// The permit protocol (docs/rollout.md). Both annotations live on an
// enactment, are written only by the controller, with a patch that carries
// no resourceVersion, and hold the decimal policy generation they are for;
// a value for another generation means nothing.
const (
	// PermitAnnotation allows the handler to apply generation <value> of the
	// policy on the enactment's node.
	PermitAnnotation = "nmstate.io/rollout-permit"
	// AbortAnnotation tells the handler not to apply generation <value> and
	// to report the enactment Aborted instead.
	AbortAnnotation = "nmstate.io/rollout-abort"
)

// Config holds the time limits of the decisions.
type Config struct {
	// ReclaimAfter is how long a node may be NotReady before the permit its
	// enactment holds is taken back. Zero never reclaims.
	ReclaimAfter time.Duration
	// GCGrace is the minimum age of an enactment before it is collected. It
	// covers the controller's cache lagging behind a handler that just
	// created an enactment for a policy or a node label the controller has
	// not seen yet.
	GCGrace time.Duration
}

// DefaultConfig is the configuration of `knmstate controller`.
var DefaultConfig = Config{ReclaimAfter: 5 * time.Minute, GCGrace: 10 * time.Second}

// Input is everything a decision about one policy depends on. Its
// objects may be shared with the controller's cache: decisions read them
// and never change them.
type Input struct {
	// PolicyName names the policy; Policy is nil when it does not exist.
	PolicyName string
	Policy     *nmstatev1.NodeNetworkConfigurationPolicy
	// Nodes are all nodes of the cluster.
	Nodes []corev1.Node
	// Handlers holds the names of nodes running a handler: those with a
	// NodeNetworkState (the handler creates it at start and recreates it
	// when deleted).
	Handlers map[string]bool
	// Enactments are the enactments labelled with the policy's name.
	Enactments []v1beta1.NodeNetworkConfigurationEnactment
	Now        time.Time
	Config     Config
}

// phase is what an enactment reports about the policy's current generation.
type phase int

const (
	phaseStale       phase = iota // reports another generation (or nothing yet)
	phaseUnknown                  // current generation, no decisive condition
	phasePending                  // waiting for a permit
	phaseProgressing              // applying
	phaseRetrying                 // an attempt failed, retrying (Failing and Progressing)
	phaseFailed                   // retries exhausted
	phaseAvailable                // applied
	phaseAborted                  // gave up without applying
	phaseDryRun                   // reported a dry run's plan (knmstate.io/dry-run)
)

func isTrue(l shared.ConditionList, t shared.ConditionType) bool {
	c := l.Find(t)
	return c != nil && c.Status == corev1.ConditionTrue
}

func phaseOf(e *v1beta1.NodeNetworkConfigurationEnactment, gen int64) phase {
	if e.Status.PolicyGeneration != gen {
		return phaseStale
	}
	c := e.Status.Conditions
	switch {
	case isTrue(c, shared.NodeNetworkConfigurationEnactmentConditionAborted):
		return phaseAborted
	case isTrue(c, shared.NodeNetworkConfigurationEnactmentConditionAvailable):
		return phaseAvailable
	case isTrue(c, shared.NodeNetworkConfigurationEnactmentConditionFailing) &&
		isTrue(c, shared.NodeNetworkConfigurationEnactmentConditionProgressing):
		return phaseRetrying
	case isTrue(c, shared.NodeNetworkConfigurationEnactmentConditionFailing):
		return phaseFailed
	case isTrue(c, shared.NodeNetworkConfigurationEnactmentConditionProgressing):
		return phaseProgressing
	case isTrue(c, shared.NodeNetworkConfigurationEnactmentConditionPending):
		return phasePending
	case isTrue(c, extension.DryRunCondition):
		return phaseDryRun
	}
	return phaseUnknown
}

// annotationGeneration returns the generation an annotation is for, or 0
// when it is absent or not a positive number.
func annotationGeneration(e *v1beta1.NodeNetworkConfigurationEnactment, key string) int64 {
	v, ok := e.Annotations[key]
	if !ok {
		return 0
	}
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil || g < 1 {
		return 0
	}
	return g
}

// nodeInfo is what the decisions need to know about one node.
type nodeInfo struct {
	ready bool
	// notReadySince is when the node stopped being Ready (its Ready
	// condition's transition time, or its creation without one).
	notReadySince time.Time
	matches       bool
	handler       bool
}

// eligible reports whether the node counts for the policy: it matches the
// selector and runs a handler.
func (n nodeInfo) eligible() bool { return n.matches && n.handler }

// view is the classified input, computed once per decision.
type view struct {
	in    Input
	gen   int64
	nodes map[string]nodeInfo
	// enactments sorted by node name, then name, so decisions are stable.
	enactments []*v1beta1.NodeNetworkConfigurationEnactment
}

func newView(in Input) view {
	v := view{in: in, nodes: make(map[string]nodeInfo, len(in.Nodes))}
	var sel labels.Selector
	if in.Policy != nil {
		v.gen = in.Policy.Generation
		sel = labels.SelectorFromSet(in.Policy.Spec.NodeSelector)
	}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		info := nodeInfo{handler: in.Handlers[n.Name], notReadySince: n.CreationTimestamp.Time}
		for _, c := range n.Status.Conditions {
			if c.Type != corev1.NodeReady {
				continue
			}
			info.ready = c.Status == corev1.ConditionTrue
			info.notReadySince = c.LastTransitionTime.Time
		}
		if info.ready {
			info.notReadySince = time.Time{}
		}
		info.matches = sel != nil && sel.Matches(labels.Set(n.Labels))
		v.nodes[n.Name] = info
	}
	for i := range in.Enactments {
		v.enactments = append(v.enactments, &in.Enactments[i])
	}
	sort.Slice(v.enactments, func(i, j int) bool {
		a, b := v.enactments[i], v.enactments[j]
		if na, nb := nodeOf(a), nodeOf(b); na != nb {
			return na < nb
		}
		return a.Name < b.Name
	})
	return v
}

// nodeOf names the node of an enactment (its label; handlers always set it).
func nodeOf(e *v1beta1.NodeNetworkConfigurationEnactment) string {
	return e.Labels[shared.EnactmentNodeLabel]
}

// node returns the node of an enactment and whether it exists.
func (v view) node(e *v1beta1.NodeNetworkConfigurationEnactment) (nodeInfo, bool) {
	n, ok := v.nodes[nodeOf(e)]
	return n, ok
}

// eligibleNodes returns how many nodes count for the policy, and how many
// of them are Ready.
func (v view) eligibleNodes() (all, ready int) {
	for _, n := range v.nodes {
		if n.eligible() {
			all++
			if n.ready {
				ready++
			}
		}
	}
	return all, ready
}

// reclaimed reports whether a node has been NotReady long enough for the
// permit of its enactment to be taken back, and otherwise when it will be.
func (v view) reclaimed(n nodeInfo) (bool, time.Time) {
	if n.ready || v.in.Config.ReclaimAfter <= 0 {
		return false, time.Time{}
	}
	at := n.notReadySince.Add(v.in.Config.ReclaimAfter)
	return !v.in.Now.Before(at), at
}
