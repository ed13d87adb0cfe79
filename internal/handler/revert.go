package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/extension"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Revert on delete (knmstate.io/revert-on-delete): every committed apply
// of such a policy records its revert state (what restores what the apply
// changed, as the checkpoint computed it) in a file of the node's state
// directory, one per policy; deleting the policy applies the recorded
// states newest first, each as an apply of its own (checkpoint, verify,
// probes, rollback on failure), and reports the outcome in the
// enactment's Reverted condition. The controller's finalizer holds the
// policy until every node has reported.

// revertDir holds the records, in the checkpoint's state directory (the
// same lifetime: the node's, not the handler process's).
const revertDir = "revert-on-delete"

// revertRecord is one policy's record on one node.
type revertRecord struct {
	// PolicyUID tells a record of an earlier policy of the same name.
	PolicyUID types.UID `json:"policyUID"`
	// Reverts are the revert states of the applies, oldest first, in
	// their canonical JSON.
	Reverts []json.RawMessage `json:"reverts"`
}

func (r *PolicyReconciler) revertFile(policy string) string {
	return filepath.Join(r.opts.StateDir, revertDir, policy+".json")
}

func (r *PolicyReconciler) readRevert(policy string) (*revertRecord, error) {
	data, err := os.ReadFile(r.revertFile(policy))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading what to revert of policy %s: %w", policy, err)
	}
	rec := &revertRecord{}
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("reading what to revert of policy %s: %w", policy, err)
	}
	return rec, nil
}

// recordRevert appends an apply's revert state to the policy's record
// (started afresh for another policy UID), written atomically.
func (r *PolicyReconciler) recordRevert(policy *nmstatev1.NodeNetworkConfigurationPolicy, revert *nmstate.State) error {
	rec, err := r.readRevert(policy.Name)
	if err != nil {
		return err
	}
	if rec == nil || rec.PolicyUID != policy.UID {
		rec = &revertRecord{PolicyUID: policy.UID}
	}
	raw, err := nmstate.EncodeJSON(revert)
	if err != nil {
		return fmt.Errorf("encoding the revert state: %w", err)
	}
	rec.Reverts = append(rec.Reverts, raw)
	return r.writeRevert(policy.Name, rec)
}

// writeRevert replaces a policy's record atomically (a crash leaves the
// old record or the new one, never half of one).
func (r *PolicyReconciler) writeRevert(policy string, rec *revertRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	file := r.revertFile(policy)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// removeRevert forgets a policy's record.
func (r *PolicyReconciler) removeRevert(policy string) error {
	if err := os.Remove(r.revertFile(policy)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing what to revert of policy %s: %w", policy, err)
	}
	return nil
}

// revertOnDelete reverts a deleted policy on this node, once, and reports
// it in the enactment's Reverted condition.
func (r *PolicyReconciler) revertOnDelete(ctx context.Context, e *enactment, policy *nmstatev1.NodeNetworkConfigurationPolicy, probes extension.Probes) error {
	if e.Status.Conditions.Find(extension.RevertedCondition) != nil {
		return nil // reported; the controller's finalizer does the rest
	}
	report := func(ok bool, msg string) error {
		status, reason := condTrue, extension.RevertedReason
		if !ok {
			status, reason = condFalse, extension.RevertFailedReason
		}
		return r.writeStatus(ctx, e, policy.Generation, rendered{}, func(st *shared.NodeNetworkConfigurationEnactmentStatus) {
			st.Conditions.SetAt(time.Now(), extension.RevertedCondition, status, shared.ConditionReason(reason), msg)
		})
	}
	rec, err := r.readRevert(policy.Name)
	if err != nil {
		return report(false, err.Error())
	}
	if rec == nil || rec.PolicyUID != policy.UID || len(rec.Reverts) == 0 {
		return report(true, "nothing to revert: no apply of this policy changed this node while it had knmstate.io/revert-on-delete")
	}
	r.log.Info("reverting the deleted policy", "policy", policy.Name, "applies", len(rec.Reverts))
	for i := len(rec.Reverts) - 1; i >= 0; i-- {
		revert, err := nmstate.Decode(rec.Reverts[i])
		if err != nil {
			return report(false, fmt.Sprintf("revert state %d of %d: %v", i+1, len(rec.Reverts), err))
		}
		if _, err := r.tx.run(ctx, revert, probes, nil); err != nil {
			// Applies already reverted stay reverted; the record keeps the
			// ones left, so the message tells exactly what was not undone.
			total := len(rec.Reverts)
			rec.Reverts = rec.Reverts[:i+1]
			if werr := r.writeRevert(policy.Name, rec); werr != nil {
				r.log.Error(werr, "recording the applies left to revert", "policy", policy.Name)
			}
			return report(false, fmt.Sprintf("reverting apply %d of %d (the newer ones are reverted): %v", i+1, total, err))
		}
	}
	if err := r.removeRevert(policy.Name); err != nil {
		r.log.Error(err, "forgetting a reverted policy's record", "policy", policy.Name)
	}
	return report(true, fmt.Sprintf("reverted the %d applies of the policy on this node", len(rec.Reverts)))
}
