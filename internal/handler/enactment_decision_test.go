package handler

import (
	"errors"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/internal/rollout"
	"github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// d0 is the time every decision is made at.
var d0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// inputs builds decision inputs: policy p of generation 2 for node1,
// which it selects, with its enactment, network and fresh read already
// gathered unless an option takes them away.
type inputOpt func(*enactmentInputs)

func inputs(opts ...inputOpt) *enactmentInputs {
	in := &enactmentInputs{
		Now:       d0,
		Policy:    &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2}},
		Node:      &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", Labels: map[string]string{"role": "worker"}}},
		Enactment: &enactment{ObjectMeta: metav1.ObjectMeta{Name: "node1.p"}},
		Network: &networkInputs{
			Current: statetest.State(statetest.Interfaces(statetest.Ethernet("eth1", statetest.MTU(1500)))),
			Out:     rendered{Desired: statetest.State(statetest.Interfaces(statetest.Ethernet("eth1", statetest.MTU(1400))))},
		},
		Fresh: &freshInputs{Generation: 2},
	}
	for _, o := range opts {
		o(in)
	}
	return in
}

// phase gives the enactment the conditions of phase ph for generation
// gen, as this handler writes them.
func phase(ph enactmentPhase, gen int64) inputOpt {
	return func(in *enactmentInputs) {
		st := &in.Enactment.Status
		st.PolicyGeneration = gen
		switch ph {
		case phasePending:
			setEnactmentPending(&st.Conditions, d0)
		case phaseProgressing:
			setEnactmentProgressing(&st.Conditions, d0)
		case phaseRetrying:
			setEnactmentRetrying(&st.Conditions, d0, "retrying")
		case phaseAvailable:
			setEnactmentSuccess(&st.Conditions, d0, "ok")
		case phaseFailed:
			setEnactmentFailedToConfigure(&st.Conditions, d0, "failed")
		case phaseAborted:
			setEnactmentAborted(&st.Conditions, d0, "aborted")
		}
	}
}

func annotate(key string, gen int64) inputOpt {
	return func(in *enactmentInputs) {
		if in.Enactment.Annotations == nil {
			in.Enactment.Annotations = map[string]string{}
		}
		in.Enactment.Annotations[key] = strconv.FormatInt(gen, 10)
	}
}

func permit(gen int64) inputOpt { return annotate(rollout.PermitAnnotation, gen) }

func with(f func(*enactmentInputs)) inputOpt { return f }

// desired replaces the rendered desired state; satisfiedNow makes it
// what the network shows.
func satisfiedNow(in *enactmentInputs) {
	in.Network.Out.Desired = statetest.State(statetest.Interfaces(statetest.Ethernet("eth1", statetest.MTU(1500))))
}

func emptyDesired(in *enactmentInputs) { in.Network.Out.Desired = nil }

func TestDecideEnactment(t *testing.T) {
	pool := &extension.Pool{Prefix: netip.MustParsePrefix("192.0.2.0/24"), Addresses: map[string]netip.Addr{"node2": netip.MustParseAddr("192.0.2.2")}}
	for _, tc := range []struct {
		name string
		in   *enactmentInputs
		want enactmentDecision
	}{{
		name: "policy gone: forget the record",
		in:   inputs(with(func(in *enactmentInputs) { in.Policy = nil })),
		want: enactmentDecision{Action: actForget},
	}, {
		name: "node gone: its creation wakes us",
		in:   inputs(with(func(in *enactmentInputs) { in.Node = nil })),
		want: enactmentDecision{Action: actNothing},
	}, {
		name: "selector no longer matches: only the record goes",
		in:   inputs(with(func(in *enactmentInputs) { in.Policy.Spec.NodeSelector = map[string]string{"role": "master"} })),
		want: enactmentDecision{Action: actDeleteEnactment},
	}, {
		name: "selector matches: read the enactment",
		in: inputs(with(func(in *enactmentInputs) {
			in.Policy.Spec.NodeSelector = map[string]string{"role": "worker"}
			in.Enactment = nil
		})),
		want: enactmentDecision{Action: readEnactment},
	}, {
		name: "kept outcome of the apply under way: told",
		in:   inputs(phase(phaseProgressing, 2), with(func(in *enactmentInputs) { in.Kept = &unreported{Generation: 2, Outcome: outcomeAvailable} })),
		want: enactmentDecision{Action: actReportKept},
	}, {
		name: "kept outcome while retrying: told",
		in:   inputs(phase(phaseRetrying, 2), with(func(in *enactmentInputs) { in.Kept = &unreported{Generation: 2, Outcome: outcomeFailed} })),
		want: enactmentDecision{Action: actReportKept},
	}, {
		name: "kept outcome older than the enactment's: dropped",
		in:   inputs(phase(phaseAvailable, 2), with(func(in *enactmentInputs) { in.Kept = &unreported{Generation: 2, Outcome: outcomeRetrying} })),
		want: enactmentDecision{Action: actDropKept},
	}, {
		name: "kept outcome of an earlier generation: dropped",
		in:   inputs(phase(phaseProgressing, 2), with(func(in *enactmentInputs) { in.Kept = &unreported{Generation: 1, Outcome: outcomeAvailable} })),
		want: enactmentDecision{Action: actDropKept},
	}, {
		name: "invalid annotations fail the enactment",
		in:   inputs(with(func(in *enactmentInputs) { in.ExtErr = errors.New("metadata.annotations[knmstate.io/after]: bad") })),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportFailed, Message: "metadata.annotations[knmstate.io/after]: bad"},
			Log: "the policy's knmstate.io annotations are invalid"},
	}, {
		name: "deleted with the revert finalizer: revert",
		in: inputs(phase(phaseAvailable, 2), with(func(in *enactmentInputs) {
			in.Policy.DeletionTimestamp = &metav1.Time{Time: d0}
			in.Policy.Finalizers = []string{extension.RevertFinalizer}
		})),
		want: enactmentDecision{Action: actRevert},
	}, {
		name: "pool without this node's address: waiting",
		in:   inputs(with(func(in *enactmentInputs) { in.Ext.Pool = pool })),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportWaiting, Reason: extension.WaitingPoolReason,
			Message: "waiting for the controller to assign this node an address of 192.0.2.0/24 (knmstate.io/ipv4-pool); every address is taken when this lasts"}},
	}, {
		name: "pool with this node's address: on to the permit",
		in: inputs(with(func(in *enactmentInputs) {
			in.Ext.Pool = pool
			in.Node.Name = "node2"
		})),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportPending}},
	}, {
		name: "dry run",
		in:   inputs(phase(phaseAvailable, 2), with(func(in *enactmentInputs) { in.Ext.DryRun = true })),
		want: enactmentDecision{Action: actDryRun},
	}, {
		name: "failed: ended for this generation",
		in:   inputs(phase(phaseFailed, 2), permit(2)),
		want: enactmentDecision{Action: actNothing},
	}, {
		name: "aborted: ended for this generation",
		in:   inputs(phase(phaseAborted, 2), permit(2)),
		want: enactmentDecision{Action: actNothing},
	}, {
		name: "failed for an earlier generation: read the network",
		in:   inputs(phase(phaseFailed, 1), with(func(in *enactmentInputs) { in.Network = nil })),
		want: enactmentDecision{Action: readNetwork},
	}, {
		name: "rendering failed",
		in:   inputs(with(func(in *enactmentInputs) { in.Network.RenderErr = errors.New("capture: bad") })),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportFailed, Message: "capture: bad"},
			Log: "rendering the desired state failed"},
	}, {
		name: "available and still shown: nothing",
		in:   inputs(phase(phaseAvailable, 2), permit(2), satisfiedNow),
		want: enactmentDecision{Action: actNothing},
	}, {
		name: "available with an empty desired state: nothing",
		in:   inputs(phase(phaseAvailable, 2), permit(2), emptyDesired),
		want: enactmentDecision{Action: actNothing},
	}, {
		name: "empty desired state: available without a permit",
		in:   inputs(emptyDesired),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportSuccess, Message: "successfully reconciled"}},
	}, {
		name: "after other policies: read how they are doing",
		in:   inputs(with(func(in *enactmentInputs) { in.Ext.After = []string{"a"} })),
		want: enactmentDecision{Action: readAfter},
	}, {
		name: "after a policy not available yet: waiting",
		in: inputs(with(func(in *enactmentInputs) {
			in.Ext.After = []string{"a"}
			in.After = &afterInputs{Message: "waiting for policy a"}
		})),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportWaiting, Reason: extension.WaitingReason, Message: "waiting for policy a"}},
	}, {
		name: "after a policy that failed here",
		in: inputs(with(func(in *enactmentInputs) {
			in.Ext.After = []string{"a"}
			in.After = &afterInputs{Message: "not applied: policy a failed", Failed: true}
		})),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportWaiting, Reason: extension.WaitingFailedReason, Message: "not applied: policy a failed"}},
	}, {
		name: "after policies all available: on to the permit",
		in: inputs(with(func(in *enactmentInputs) {
			in.Ext.After = []string{"a"}
			in.After = &afterInputs{}
		})),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportPending}},
	}, {
		name: "drifted: repaired under the permit it has, not waiting for the policies it is after",
		in:   inputs(phase(phaseAvailable, 2), permit(2), with(func(in *enactmentInputs) { in.Ext.After = []string{"a"} })),
		want: enactmentDecision{Action: actApply, Progressing: true, Repair: true, Log: "network no longer shows the applied policy; applying it again"},
	}, {
		name: "no permit, aborted by the controller",
		in:   inputs(phase(phasePending, 2), annotate(rollout.AbortAnnotation, 2)),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportAborted, Message: `reconciliation of enactment "node1.p" has aborted`},
			Event: `reconciliation of enactment "node1.p" has aborted`},
	}, {
		name: "an abort of an earlier generation: ask for a permit",
		in:   inputs(annotate(rollout.AbortAnnotation, 1)),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportPending}},
	}, {
		name: "no permit: ask for one",
		in:   inputs(),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportPending}},
	}, {
		name: "a permit of an earlier generation: ask for one",
		in:   inputs(phase(phaseAvailable, 1), permit(1)),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportPending}},
	}, {
		name: "pending already: only the rendering is brought up to date",
		in:   inputs(phase(phasePending, 2)),
		want: enactmentDecision{Action: actReport, Report: enactmentReport{Kind: reportNone}},
	}, {
		name: "permit: read the policy past the cache",
		in:   inputs(phase(phasePending, 2), permit(2), with(func(in *enactmentInputs) { in.Fresh = nil })),
		want: enactmentDecision{Action: readPolicy},
	}, {
		name: "permit, policy gone from the API server",
		in:   inputs(phase(phasePending, 2), permit(2), with(func(in *enactmentInputs) { in.Fresh = &freshInputs{Deleted: true} })),
		want: enactmentDecision{Action: actDeleteEnactment},
	}, {
		name: "permit, policy changed since the cache showed it",
		in:   inputs(phase(phasePending, 2), permit(2), with(func(in *enactmentInputs) { in.Fresh = &freshInputs{Generation: 3} })),
		want: enactmentDecision{Action: actNothing},
	}, {
		name: "permit: mark progressing and apply",
		in:   inputs(phase(phasePending, 2), permit(2)),
		want: enactmentDecision{Action: actApply, Progressing: true},
	}, {
		name: "permit, progressing already (an interrupted apply): apply",
		in:   inputs(phase(phaseProgressing, 2), permit(2)),
		want: enactmentDecision{Action: actApply},
	}, {
		name: "retrying within the back-off: wait",
		in:   inputs(phase(phaseRetrying, 2), permit(2), with(func(in *enactmentInputs) { in.NotBefore = d0.Add(3 * time.Second) })),
		want: enactmentDecision{Action: actWait, RequeueAfter: 3 * time.Second},
	}, {
		name: "retrying past the back-off: apply",
		in:   inputs(phase(phaseRetrying, 2), permit(2), with(func(in *enactmentInputs) { in.NotBefore = d0.Add(-time.Second) })),
		want: enactmentDecision{Action: actApply},
	}, {
		name: "a back-off of an earlier phase does not hold a first attempt",
		in:   inputs(phase(phasePending, 2), permit(2), with(func(in *enactmentInputs) { in.NotBefore = d0.Add(3 * time.Second) })),
		want: enactmentDecision{Action: actApply, Progressing: true},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, decideEnactment(tc.in)); diff != "" {
				t.Errorf("decideEnactment (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideEnactmentReads follows a reconcile that has read nothing yet
// to its end: each read is asked for once, in the order the reconcile
// needs them, and the last answer is the apply.
func TestDecideEnactmentReads(t *testing.T) {
	full := inputs(phase(phasePending, 2), permit(2), with(func(in *enactmentInputs) {
		in.Ext.After = []string{"a"}
		in.After = &afterInputs{}
	}))
	in := &enactmentInputs{Now: full.Now, Policy: full.Policy, Node: full.Node}
	var got []enactmentAction
	for range 8 {
		d := decideEnactment(in)
		got = append(got, d.Action)
		if !d.Action.isRead() {
			break
		}
		switch d.Action {
		case readEnactment:
			in.Enactment, in.Ext = full.Enactment, full.Ext
		case readNetwork:
			in.Network = full.Network
		case readAfter:
			in.After = full.After
		case readPolicy:
			in.Fresh = full.Fresh
		}
	}
	want := []enactmentAction{readEnactment, readNetwork, readAfter, readPolicy, actApply}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

func TestDecideOutcome(t *testing.T) {
	p := retryPolicy{MaxRetries: 3, RetryBackoff: time.Second, RetryMaxBackoff: 30 * time.Second}
	e := func(retries int) *enactment {
		e := &enactment{ObjectMeta: metav1.ObjectMeta{Name: "node1.p"}}
		e.Status.RetryCount = map[string]int{"1": 7, "2": retries}
		return e
	}
	failed := errors.New("link eth1: no such device")
	for _, tc := range []struct {
		name     string
		e        *enactment
		out      rendered
		applyErr error
		want     applyOutcome
	}{{
		name: "committed: available",
		e:    e(1),
		want: applyOutcome{Report: unreported{Generation: 2, Outcome: outcomeAvailable, Message: "successfully reconciled", At: d0}},
	}, {
		name: "committed without the default trunk: says so",
		e:    e(0),
		out:  rendered{NoDefaultTrunk: []string{"br1/eth1"}},
		want: applyOutcome{Report: unreported{Generation: 2, Outcome: outcomeAvailable, Message: successMessage(rendered{NoDefaultTrunk: []string{"br1/eth1"}}), At: d0}},
	}, {
		name:     "first failure: retry after the first back-off",
		e:        e(0),
		applyErr: failed,
		want: applyOutcome{
			Report: unreported{Generation: 2, Outcome: outcomeRetrying, RetryCount: 1, At: d0,
				Message: "failed to reconcile node1.p on node node1: link eth1: no such device. Retrying 1/3"},
			NotBefore: d0.Add(time.Second), RequeueAfter: time.Second,
		},
	}, {
		name:     "second failure: the back-off doubles",
		e:        e(1),
		applyErr: failed,
		want: applyOutcome{
			Report: unreported{Generation: 2, Outcome: outcomeRetrying, RetryCount: 2, At: d0,
				Message: "failed to reconcile node1.p on node node1: link eth1: no such device. Retrying 2/3"},
			NotBefore: d0.Add(2 * time.Second), RequeueAfter: 2 * time.Second,
		},
	}, {
		name:     "last failure: failed, with an event",
		e:        e(2),
		applyErr: failed,
		want: applyOutcome{
			Report: unreported{Generation: 2, Outcome: outcomeFailed, RetryCount: 3, Message: "link eth1: no such device", At: d0},
			Event:  `reconciliation of enactment "node1.p" has failed after 3 retries`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideOutcome(tc.e, "node1", 2, tc.out, tc.applyErr, p, d0)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decideOutcome (-want +got):\n%s", diff)
			}
		})
	}
}

// The report kinds set the conditions of the matrix's rows.
func TestEnactmentReportPhase(t *testing.T) {
	for _, tc := range []struct {
		r    enactmentReport
		want enactmentPhase
	}{
		{enactmentReport{Kind: reportPending}, phasePending},
		{enactmentReport{Kind: reportSuccess, Message: "ok"}, phaseAvailable},
		{enactmentReport{Kind: reportFailed, Message: "bad"}, phaseFailed},
		{enactmentReport{Kind: reportAborted, Message: "aborted"}, phaseAborted},
		{enactmentReport{Kind: reportWaiting, Reason: extension.WaitingReason, Message: "waiting"}, phaseNone},
		{enactmentReport{Kind: reportNone}, phaseNone},
	} {
		st := shared.NodeNetworkConfigurationEnactmentStatus{PolicyGeneration: 1}
		tc.r.set(&st.Conditions, d0)
		if got := phaseOf(&st, 1); got != tc.want {
			t.Errorf("%+v: phase %s, want %s", tc.r, got, tc.want)
		}
	}
}
