package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/knmstate/knmstate/api/shared"
)

// An apply's outcome is the enactment's to tell. When its status write
// fails (the node cut off from the API server, which is often why the apply
// failed, or the node lock lost meanwhile), the outcome is kept in the state
// directory and written first when the policy is reconciled again, in this
// term of the handler or a later one: the enactment then says why the
// apply failed (instead of the retry's result alone), and a committed
// generation is reported without being applied again.

// unreported is an apply outcome whose status write failed.
type unreported struct {
	Generation int64 `json:"generation"`
	// Outcome is "available", "retrying" or "failed".
	Outcome    string    `json:"outcome"`
	RetryCount int       `json:"retryCount,omitempty"`
	Message    string    `json:"message"`
	At         time.Time `json:"at"`
}

const (
	outcomeAvailable = "available"
	outcomeRetrying  = "retrying"
	outcomeFailed    = "failed"
)

// set writes the outcome into an enactment status, as the reconcile that
// had it would have.
func (u *unreported) set(st *shared.NodeNetworkConfigurationEnactmentStatus) {
	if u.RetryCount > 0 {
		st.RetryCount[strconv.FormatInt(u.Generation, 10)] = u.RetryCount
	}
	switch u.Outcome {
	case outcomeAvailable:
		setEnactmentSuccess(&st.Conditions, u.At, u.Message)
	case outcomeFailed:
		setEnactmentFailedToConfigure(&st.Conditions, u.At, u.Message)
	default:
		setEnactmentRetrying(&st.Conditions, u.At, u.Message)
	}
}

// unreportedPath is where policy's unreported outcome is kept. Policy
// names are DNS subdomains: safe file names.
func (r *PolicyReconciler) unreportedPath(policy string) string {
	return filepath.Join(r.opts.StateDir, "unreported", policy+".json")
}

// keepUnreported records u for policy, so the next reconcile reports it.
func (r *PolicyReconciler) keepUnreported(policy string, u unreported) error {
	p := r.unreportedPath(policy)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("keeping the outcome of %s: %w", policy, err)
	}
	data, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("keeping the outcome of %s: %w", policy, err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("keeping the outcome of %s: %w", policy, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("keeping the outcome of %s: %w", policy, err)
	}
	return nil
}

// takeUnreported is policy's kept outcome, or nil.
func (r *PolicyReconciler) takeUnreported(policy string) (*unreported, error) {
	data, err := os.ReadFile(r.unreportedPath(policy))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the kept outcome of %s: %w", policy, err)
	}
	var u unreported
	if err := json.Unmarshal(data, &u); err != nil {
		// A torn file says nothing: drop it.
		return nil, errors.Join(fmt.Errorf("the kept outcome of %s: %w", policy, err), r.dropUnreported(policy))
	}
	return &u, nil
}

// dropUnreported forgets policy's kept outcome.
func (r *PolicyReconciler) dropUnreported(policy string) error {
	if err := os.Remove(r.unreportedPath(policy)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dropping the kept outcome of %s: %w", policy, err)
	}
	return nil
}

// reportOutcome writes an apply's outcome to the enactment, or keeps it
// when the write fails.
func (r *PolicyReconciler) reportOutcome(ctx context.Context, e *enactment, policy string, out rendered, u unreported) error {
	err := r.writeStatus(ctx, e, u.Generation, out, u.set)
	if err == nil {
		return nil
	}
	if kerr := r.keepUnreported(policy, u); kerr != nil {
		r.log.Error(kerr, "the outcome of an apply is lost: its status write failed and it could not be kept", "policy", policy, "generation", u.Generation, "outcome", u.Outcome, "writeError", err.Error())
		return errors.Join(err, kerr)
	}
	r.log.Info("the status write of an apply's outcome failed: kept, to be written at the next reconcile", "policy", policy, "generation", u.Generation, "outcome", u.Outcome, "error", err.Error())
	return err
}
