package rollout

import (
	"time"

	"github.com/knmstate/knmstate/api/v1beta1"
)

// PermitDecision is what the controller must write to the enactments of one
// policy: each list holds enactment names, sorted by node name.
type PermitDecision struct {
	// Generation is the policy generation the permits and aborts are for.
	Generation int64
	// Limit is maxUnavailable scaled to the eligible nodes; InUse how many
	// permits are held, before Grant.
	Limit, InUse int
	// LimitError is set when spec.maxUnavailable was invalid and the 50%
	// default was used.
	LimitError error
	// Grant get PermitAnnotation = Generation.
	Grant []string
	// Abort get AbortAnnotation = Generation.
	Abort []string
	// Revoke lose PermitAnnotation: their node has been NotReady for longer
	// than Config.ReclaimAfter.
	Revoke []string
	// RequeueAfter, when non-zero, is when the decision will change by
	// itself (a NotReady node reaching ReclaimAfter).
	RequeueAfter time.Duration
}

// Permits decides the rollout of the policy's current generation (none
// for a dry run, knmstate.io/dry-run).
//
// A permit is held by an enactment whose PermitAnnotation names the current
// generation and which has not ended Available or Aborted there: a Failing
// enactment keeps its permit (its node may well be unavailable, and this is
// what bounds the number of failures to maxUnavailable). A permit does not
// count when the enactment's node is gone, no longer matches, or has been
// NotReady for Config.ReclaimAfter (then it is also revoked).
//
// Free permits (Limit - InUse) go to enactments asking for one (Pending for
// the current generation) on Ready eligible nodes, in node-name order. Once
// the enactments that failed (retries exhausted) reach Limit, no permit is
// granted any more and every unfinished enactment without a permit is told
// to abort.
func Permits(in Input) PermitDecision {
	v := newView(in)
	if in.Policy == nil {
		return PermitDecision{}
	}
	d := PermitDecision{Generation: v.gen}
	if isDryRun(in.Policy) {
		// A dry run applies nothing: nobody needs a permit, nobody aborts.
		return d
	}
	matching, _ := v.eligibleNodes()
	d.Limit, d.LimitError = MaxUnavailable(in.Policy.Spec.MaxUnavailable, matching)

	var failed int
	var waiting, unfinished []string
	var nextReclaim time.Time
	for _, e := range v.enactments {
		n, ok := v.node(e)
		if !ok || !n.matches {
			continue // garbage; its permit is free
		}
		ph := phaseOf(e, v.gen)
		holds := annotationGeneration(e, PermitAnnotation) == v.gen
		done := ph == phaseAvailable || ph == phaseAborted
		if ph == phaseFailed {
			failed++
		}
		if holds && !done {
			gone, at := v.reclaimed(n)
			switch {
			case gone:
				d.Revoke = append(d.Revoke, e.Name)
			default:
				d.InUse++
				if !at.IsZero() && (nextReclaim.IsZero() || at.Before(nextReclaim)) {
					nextReclaim = at
				}
			}
			continue
		}
		if holds || done || ph == phaseFailed || !n.eligible() {
			continue
		}
		if annotationGeneration(e, AbortAnnotation) != v.gen {
			unfinished = append(unfinished, e.Name)
		}
		if ph == phasePending && n.ready && annotationGeneration(e, AbortAnnotation) != v.gen {
			waiting = append(waiting, e.Name)
		}
	}
	if !nextReclaim.IsZero() {
		d.RequeueAfter = nextReclaim.Sub(in.Now)
	}
	if failed >= d.Limit {
		d.Abort = unfinished
		return d
	}
	if free := d.Limit - d.InUse; free > 0 {
		if free > len(waiting) {
			free = len(waiting)
		}
		d.Grant = waiting[:free]
	}
	return d
}

// HoldsPermit reports whether the enactment holds a rollout permit for the
// policy generation gen: it has a permit for gen and has not ended
// Available or Aborted there.
func HoldsPermit(e *v1beta1.NodeNetworkConfigurationEnactment, gen int64) bool {
	if annotationGeneration(e, PermitAnnotation) != gen {
		return false
	}
	ph := phaseOf(e, gen)
	return ph != phaseAvailable && ph != phaseAborted
}
