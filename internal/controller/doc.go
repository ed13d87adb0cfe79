// Package controller is the cluster controller of knmstate (`knmstate
// controller`): one active instance per cluster (leader election with a
// Lease; a term of the replica holding it is one fresh manager, term.go)
// runs five reconcilers keyed by policy name, one concern each:
//
//   - status: the single writer of NodeNetworkConfigurationPolicy status,
//     aggregated from the policy's enactments (rollout.PolicyStatus);
//   - permit: grants, revokes and aborts rollout permits by patching
//     enactment annotations (rollout.Permits, docs/rollout.md);
//   - gc: deletes enactments whose policy or node is gone or no longer
//     matches (rollout.Collect);
//   - revert-finalizer: adds and removes the knmstate.io/revert-on-delete
//     finalizer of a policy, holding a deleted one until its nodes have
//     reverted it (rollout.Finalizer, docs/extensions.md);
//   - address-pool: assigns the addresses of a policy's knmstate.io/ipv4-pool
//     and records them on the policy (rollout.Pool).
//
// Each reconciler gathers its inputs from the shared cache, calls the pure
// decision function of internal/rollout and performs the writes the
// decision names; it holds no rollout state of its own, so any instance
// taking over the lease continues where the last one stopped. It talks only
// to the API server: it must never touch a node's network, and it never
// writes an enactment's status (the handlers' alone); of a policy it writes
// the status, and in its metadata only the two knmstate.io extensions
// above.
package controller
