package handler

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// A reconcile of a policy gathers what it knows into enactmentInputs,
// asks decideEnactment what to do, and does exactly that. Some inputs
// cost (the enactment is created when missing, the network state is a
// kernel dump, the policy is read again past the cache): decideEnactment
// asks for them, one read at a time, only when its answer depends on
// them, so a reconcile reads no more than it needs. decideEnactment is
// pure: everything it looks at is in its inputs, the time included.

// enactmentInputs are what one reconcile of a policy has gathered. A nil
// pointer is an input not read (yet); decideEnactment says when it is
// needed.
type enactmentInputs struct {
	// Now is the reconcile's time: condition times, retry back-off.
	Now time.Time
	// Policy is the policy as the cache shows it; nil when it is gone.
	Policy *nmstatev1.NodeNetworkConfigurationPolicy
	// Node is this node; nil when it does not exist.
	Node *corev1.Node

	// Enactment is the policy's record on this node (read without the
	// cache, created when missing); nil until readEnactment.
	Enactment *enactment
	// Kept is an apply outcome whose status write failed (nil: none).
	Kept *unreported
	// Ext are the policy's knmstate.io settings; ExtErr when they are
	// invalid.
	Ext    extension.Settings
	ExtErr error
	// NotBefore is when this policy's next retry is due (zero: no
	// back-off pending).
	NotBefore time.Time

	// Network is the node's network state and the policy rendered
	// against it; nil until readNetwork.
	Network *networkInputs
	// After is how the policies this one is after are doing here; nil
	// until readAfter.
	After *afterInputs
	// Fresh is the policy read past the cache right before applying; nil
	// until readPolicy.
	Fresh *freshInputs
}

type networkInputs struct {
	Current *nmstate.State
	Out     rendered
	// RenderErr is why the policy could not be rendered (the user's to
	// fix).
	RenderErr error
}

type afterInputs struct {
	// Message says what the policy waits for; "" when nothing.
	Message string
	// Failed: one of them failed on this node.
	Failed bool
}

type freshInputs struct {
	// Deleted: the API server no longer has the policy.
	Deleted    bool
	Generation int64
	// UID is the policy's as the API server has it (the revert record
	// names it).
	UID types.UID
}

// enactmentAction is what a reconcile does: one of the reads
// decideEnactment asks for, or what it ends with.
type enactmentAction int

const (
	// actNothing: ended for this generation, up to date, or to be woken
	// by an event.
	actNothing enactmentAction = iota
	// actForget deletes the enactment and the kept outcome of a policy
	// that is gone.
	actForget
	// actDeleteEnactment deletes the enactment; the network is left as it
	// is (upstream).
	actDeleteEnactment
	// actReportKept writes the kept outcome, then forgets it and looks
	// again.
	actReportKept
	// actDropKept forgets a kept outcome that is older than what the
	// enactment tells, and looks again.
	actDropKept
	// actReport writes the decision's Report (and its Event).
	actReport
	// actRevert reverts the deleted policy (knmstate.io/revert-on-delete).
	actRevert
	// actDryRun reports what an apply would do (knmstate.io/dry-run).
	actDryRun
	// actWait comes back when the retry back-off has passed.
	actWait
	// actApply applies the rendered state under the permit and reports
	// its outcome.
	actApply

	// The reads decideEnactment asks for.
	readEnactment
	readNetwork
	readAfter
	readPolicy
)

func (a enactmentAction) String() string {
	switch a {
	case actNothing:
		return "Nothing"
	case actForget:
		return "Forget"
	case actDeleteEnactment:
		return "DeleteEnactment"
	case actReportKept:
		return "ReportKept"
	case actDropKept:
		return "DropKept"
	case actReport:
		return "Report"
	case actRevert:
		return "Revert"
	case actDryRun:
		return "DryRun"
	case actWait:
		return "Wait"
	case actApply:
		return "Apply"
	case readEnactment:
		return "ReadEnactment"
	case readNetwork:
		return "ReadNetwork"
	case readAfter:
		return "ReadAfter"
	case readPolicy:
		return "ReadPolicy"
	}
	return "enactmentAction(" + strconv.Itoa(int(a)) + ")"
}

func (a enactmentAction) isRead() bool { return a >= readEnactment }

// enactmentDecision is decideEnactment's answer.
type enactmentDecision struct {
	Action enactmentAction
	// Report is the status actReport writes.
	Report enactmentReport
	// Event, when set, is the Warning event on the policy after the write.
	Event string
	// Log, when set, is the constant log message of the decision.
	Log string
	// RequeueAfter is actWait's pause.
	RequeueAfter time.Duration
	// Progressing (actApply): mark the enactment Progressing before the
	// transaction starts, so the controller counts the node as
	// unavailable while it runs.
	Progressing bool
	// Repair (actApply): the policy was Available and the network no
	// longer shows it (drift).
	Repair bool
}

// reportKind names a row of the enactment condition matrix
// (conditions.go).
type reportKind int

const (
	// reportNone leaves the conditions as they are: only the rendered
	// state is brought up to date.
	reportNone reportKind = iota
	reportPending
	reportSuccess
	reportFailed
	reportWaiting
	reportAborted
)

// enactmentReport is the enactment status a decision writes.
type enactmentReport struct {
	Kind reportKind
	// Reason is the Waiting condition's reason.
	Reason  shared.ConditionReason
	Message string
}

func (r enactmentReport) set(l *shared.ConditionList, now time.Time) {
	switch r.Kind {
	case reportPending:
		setEnactmentPending(l, now)
	case reportSuccess:
		setEnactmentSuccess(l, now, r.Message)
	case reportFailed:
		setEnactmentFailedToConfigure(l, now, r.Message)
	case reportWaiting:
		setEnactmentWaiting(l, now, r.Reason, r.Message)
	case reportAborted:
		setEnactmentAborted(l, now, r.Message)
	}
}

func reportDecision(r enactmentReport) enactmentDecision {
	return enactmentDecision{Action: actReport, Report: r}
}

// decideEnactment is what a reconcile of a policy does with what it has
// gathered (docs/rollout.md), or the read its answer depends on first.
// Its stages follow a policy's way to the node: the record, the policy's
// settings, its rendering, the rollout.
func decideEnactment(in *enactmentInputs) enactmentDecision {
	if d, ok := decideRecord(in); ok {
		return d
	}
	ph := phaseOf(&in.Enactment.Status, in.Policy.Generation)
	if d, ok := decideSettings(in, ph); ok {
		return d
	}
	if d, ok := decideRendering(in, ph); ok {
		return d
	}
	return decideRollout(in, ph)
}

// decideRecord drops a record that no longer belongs here, and tells an
// outcome kept from an earlier apply.
func decideRecord(in *enactmentInputs) (enactmentDecision, bool) {
	p := in.Policy
	switch {
	case p == nil:
		return enactmentDecision{Action: actForget}, true
	case in.Node == nil:
		return enactmentDecision{Action: actNothing}, true // the Node's creation enqueues every policy again
	case !selectorMatches(p.Spec.NodeSelector, in.Node.Labels):
		return enactmentDecision{Action: actDeleteEnactment}, true
	case in.Enactment == nil:
		return enactmentDecision{Action: readEnactment}, true
	}
	if k := in.Kept; k != nil {
		ph := phaseOf(&in.Enactment.Status, p.Generation)
		// Told only while the enactment still shows that apply under way:
		// a newer outcome (of this handler's next term, or of another
		// handler on the node) is not overwritten by an older one.
		if k.Generation == p.Generation && (ph == phaseProgressing || ph == phaseRetrying) {
			return enactmentDecision{Action: actReportKept}, true
		}
		return enactmentDecision{Action: actDropKept}, true
	}
	return enactmentDecision{}, false
}

// decideSettings follows the policy's knmstate.io settings that come
// before any rendering, and ends at an ended generation.
func decideSettings(in *enactmentInputs, ph enactmentPhase) (enactmentDecision, bool) {
	p := in.Policy
	// The knmstate.io annotations are checked here too: a policy admitted
	// without the webhook must not be applied with settings it misspelt.
	if in.ExtErr != nil {
		d := reportDecision(enactmentReport{Kind: reportFailed, Message: in.ExtErr.Error()})
		d.Log = "the policy's knmstate.io annotations are invalid"
		return d, true
	}
	if p.DeletionTimestamp != nil && slices.Contains(p.Finalizers, extension.RevertFinalizer) {
		return enactmentDecision{Action: actRevert}, true
	}
	if pool := in.Ext.Pool; pool != nil {
		if _, ok := pool.Addresses[in.Node.Name]; !ok {
			// The controller's record of the address wakes us.
			return reportDecision(enactmentReport{Kind: reportWaiting, Reason: extension.WaitingPoolReason, Message: fmt.Sprintf(
				"waiting for the controller to assign this node an address of %s (knmstate.io/ipv4-pool); every address is taken when this lasts", pool.Prefix)}), true
		}
	}
	if in.Ext.DryRun {
		return enactmentDecision{Action: actDryRun}, true
	}
	if ph == phaseFailed || ph == phaseAborted {
		return enactmentDecision{Action: actNothing}, true // ended for this generation
	}
	return enactmentDecision{}, false
}

// decideRendering follows the policy rendered against the network: a
// failure, a state still shown, nothing to apply, the policies it waits
// for.
func decideRendering(in *enactmentInputs, ph enactmentPhase) (enactmentDecision, bool) {
	if in.Network == nil {
		return enactmentDecision{Action: readNetwork}, true
	}
	if err := in.Network.RenderErr; err != nil {
		d := reportDecision(enactmentReport{Kind: reportFailed, Message: err.Error()})
		d.Log = "rendering the desired state failed"
		return d, true
	}
	out := in.Network.Out
	if ph == phaseAvailable {
		if out.Desired == nil || nmstate.Shows(in.Network.Current, out.Desired) {
			return enactmentDecision{Action: actNothing}, true // done, and still true: no re-apply
		}
		return enactmentDecision{}, false // a repair (drift): what it waited for is past
	}
	if out.Desired == nil {
		// Upstream: "Ignoring empty desired state"; no permit needed.
		return reportDecision(enactmentReport{Kind: reportSuccess, Message: successMessage(out)}), true
	}
	if len(in.Ext.After) > 0 {
		if in.After == nil {
			return enactmentDecision{Action: readAfter}, true
		}
		if a := in.After; a.Message != "" {
			// A watch of the other policies' enactments wakes us.
			reason := shared.ConditionReason(extension.WaitingReason)
			if a.Failed {
				reason = extension.WaitingFailedReason
			}
			return reportDecision(enactmentReport{Kind: reportWaiting, Reason: reason, Message: a.Message}), true
		}
	}
	return enactmentDecision{}, false
}

// decideRollout asks for a permit, waits for a retry's back-off, and
// applies under the permit what the API server still has.
func decideRollout(in *enactmentInputs, ph enactmentPhase) enactmentDecision {
	e, gen := in.Enactment, in.Policy.Generation
	if annotationGeneration(e, rollout.PermitAnnotation) != gen {
		if annotationGeneration(e, rollout.AbortAnnotation) == gen {
			msg := abortedMessage(e.Name)
			d := reportDecision(enactmentReport{Kind: reportAborted, Message: msg})
			d.Event = msg
			return d
		}
		// Ask for a permit; the controller's annotation wakes us.
		if ph == phasePending {
			return reportDecision(enactmentReport{Kind: reportNone})
		}
		return reportDecision(enactmentReport{Kind: reportPending})
	}
	// Holding the permit for gen. A retry waits for its back-off.
	if wait := in.NotBefore.Sub(in.Now); ph == phaseRetrying && wait > 0 {
		return enactmentDecision{Action: actWait, RequeueAfter: wait}
	}
	if in.Fresh == nil {
		return enactmentDecision{Action: readPolicy}
	}
	if in.Fresh.Deleted {
		return enactmentDecision{Action: actDeleteEnactment}
	}
	if in.Fresh.Generation != gen {
		// The policy changed since the cache showed it: its update event
		// brings the new generation here again.
		return enactmentDecision{Action: actNothing}
	}
	// A repair: re-applying a policy that was Available (drift).
	repair := ph == phaseAvailable
	d := enactmentDecision{Action: actApply, Repair: repair, Progressing: ph != phaseProgressing && ph != phaseRetrying}
	if repair {
		d.Log = "network no longer shows the applied policy; applying it again"
	}
	return d
}

// retryPolicy is how failed applies are retried (PolicyOptions).
type retryPolicy struct {
	MaxRetries                    int
	RetryBackoff, RetryMaxBackoff time.Duration
}

// backoff is the pause after the n-th failure: RetryBackoff doubled n-1
// times, at most RetryMaxBackoff.
func (p retryPolicy) backoff(n int) time.Duration {
	d := p.RetryBackoff
	for i := 1; i < n && d < p.RetryMaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.RetryMaxBackoff)
}

// applyOutcome is what an apply's end makes of the enactment.
type applyOutcome struct {
	// Report is the outcome to write (or keep when the write fails).
	Report unreported
	// NotBefore is when the next attempt is due; zero when none is.
	NotBefore time.Time
	// RequeueAfter brings the next attempt.
	RequeueAfter time.Duration
	// Event, when set, is the Warning event on the policy.
	Event string
}

// decideOutcome turns an apply of out for generation gen that ended with
// applyErr (nil: committed) into its outcome: Available, Retrying with a
// back-off, or Failed once the retries are spent (the enactment counts
// the failed attempts before this one).
func decideOutcome(e *enactment, node string, gen int64, out rendered, applyErr error, p retryPolicy, now time.Time) applyOutcome {
	if applyErr == nil {
		return applyOutcome{Report: unreported{Generation: gen, Outcome: outcomeAvailable, Message: successMessage(out), At: now}}
	}
	n := e.Status.RetryCount[strconv.FormatInt(gen, 10)] + 1
	if n >= p.MaxRetries {
		return applyOutcome{
			Report: unreported{Generation: gen, Outcome: outcomeFailed, RetryCount: n, Message: applyErr.Error(), At: now},
			Event:  fmt.Sprintf("reconciliation of enactment %q has failed after %d retries", e.Name, n),
		}
	}
	backoff := p.backoff(n)
	return applyOutcome{
		Report:       unreported{Generation: gen, Outcome: outcomeRetrying, RetryCount: n, Message: retryingMessage(e.Name, node, applyErr, n, p.MaxRetries), At: now},
		NotBefore:    now.Add(backoff),
		RequeueAfter: backoff,
	}
}
