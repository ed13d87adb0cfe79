// Package apply owns the one apply sequence that nmstatectl and the
// knmstate handler share: query → validate and merge → plan → write a
// checkpoint record → execute → re-query and verify (with retries) →
// commit, or on any failure roll back to the pre-apply state. Transact
// wraps it in the probe-guarded transaction both callers run: discard a
// checkpoint nobody committed, select the probes, apply without commit,
// probe, then commit or roll back.
//
// It also owns checkpoints: the on-disk record of a pending apply (the
// pre-apply state, the state that reverts it, a deadline), written
// atomically before the first change, and the operations on it: Commit,
// Rollback, the start-up decision Decide (a pure function of the record and
// the time) and Watch, the loop a detached watchdog runs to roll back a
// checkpoint nobody committed in time. One checkpoint may be pending at a
// time; a flock on the state directory serialises apply, commit, rollback
// and the watchdog across processes.
//
// It must not know netlink or Kubernetes: the node is reached only through
// the Backend interface, and the state model (merge, plan, revert, verify)
// is pkg/nmstate's; the probes are pkg/probe's, chosen by the caller. It
// does not print: callers render Result, TxResult and errors.
package apply
