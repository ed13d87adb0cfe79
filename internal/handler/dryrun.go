package handler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/pkg/apply"
)

// dryRun reports what applying the policy on this node would do, and does
// nothing (knmstate.io/dry-run: "true"): the desired state rendered against
// the live state (captures resolved), the plan pkg/apply would execute in
// its text form (what `nmstatectl apply --dry-run` prints), and a DryRun
// condition saying nothing was applied. It asks for no permit and takes no
// checkpoint, so it may run whatever the rollout of other nodes does.
func (r *PolicyReconciler) dryRun(ctx context.Context, e *enactment, policy *nmstatev1.NodeNetworkConfigurationPolicy, node *corev1.Node, ext extension.Settings) error {
	gen := policy.Generation
	current, err := r.opts.Backend.Show(ctx)
	if err != nil {
		return fmt.Errorf("reading the network state: %w", err)
	}
	now := time.Now()
	out, err := renderPolicy(policy.Spec, current, e.Status.CapturedStates, now, r.renderOptions(node, ext))
	if err == nil && out.Desired != nil {
		var res *apply.Result
		res, err = apply.Apply(ctx, r.opts.Backend, out.Desired, apply.Options{DryRun: true})
		if err == nil {
			return r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
				setEnactmentDryRun(&st.Conditions, now, dryRunMessage(res.Plan.String()))
			})
		}
	}
	if err != nil {
		r.log.Info("dry run failed", "policy", policy.Name, "error", err.Error())
		return r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
			setEnactmentFailedToConfigure(&st.Conditions, now, "dry run: "+err.Error())
		})
	}
	return r.writeStatus(ctx, e, gen, out, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
		setEnactmentDryRun(&st.Conditions, now, dryRunMessage(""))
	})
}

// dryRunMessage is the DryRun condition's message: that nothing was
// applied, then the plan's text, one operation a line.
func dryRunMessage(plan string) string {
	if plan == "" {
		return "nothing was applied; the plan is empty: the node already shows the desired state"
	}
	return "nothing was applied; the plan against the node's live state:\n" + plan
}

// setEnactmentDryRun sets the five upstream conditions False (nothing is
// pending, progressing, failing, available or aborted: nothing was
// attempted) and adds the DryRun condition with the plan. writeStatus
// removes the DryRun condition at every other write.
func setEnactmentDryRun(l *shared.ConditionList, now time.Time, message string) {
	enactmentConditions{
		available: condFalse, failing: condFalse, progressing: condFalse, pending: condFalse, aborted: condFalse,
		reason: extension.DryRunReason,
	}.apply(l, now)
	l.SetAt(now, extension.DryRunCondition, condTrue, extension.DryRunReason, message)
}
