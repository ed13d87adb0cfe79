// Package handler is the per-node side of knmstate: one Handler per node
// reports the node's network state as its NodeNetworkState (event-driven,
// written only when the reported state changes) and reconciles the
// policies that match the node into its network and their enactments.
//
// It owns the node's NodeNetworkState object and the handler's own API
// connections. It reads the node's network only through the kernel backend
// (pkg/backend/kernel) and must not touch any other namespace; it keeps no
// package-level mutable state, so one process can run the handlers of many
// nodes (the lab), each with its own namespace, API client and goroutines.
//
// # Node network state reporting
//
// The reporter is one goroutine per node: the kernel backend's Watch
// signals any rtnetlink change of the namespace (links, addresses, routes,
// rules, netconf) and any change of the node's resolv.conf; signals are
// debounced (Options.Debounce, a burst is reported at most 5× that after
// its start); then Show → Filter → canonical JSON → decide against the
// newest known copy of the object (its own last write, or what the API's
// watch of this one object delivered) → create and/or write status only if
// the content or the version fields differ. A slow resync (Options.Resync)
// runs the same path and so writes nothing when nothing changed. A deleted
// object is recreated (the watch reports the deletion), and a status
// written by someone else is put back. lastSuccessfulUpdateTime moves only
// when currentState changes, as upstream. See Filter for what is left out
// and NoNetworkManager for hostNetworkManagerVersion.
//
// # Policies
//
// PolicyReconciler (one worker per node, so one nmstate transaction at a
// time) follows docs/rollout.md: the enactment `<node>.<policy>`, the
// rendered desired state (captures, upstream's default VLAN trunk on
// linux-bridge ports when the kernel can filter VLANs, features), a
// rollout permit from the controller, then checkpoint, apply, probes and
// commit or rollback, with retries and back-off per generation. A pending
// checkpoint found at start is rolled back first. An Available enactment
// whose state still holds is not applied again.
//
// The opt-in knmstate.io annotations of a policy (internal/extension,
// docs/extensions.md) are read here too, always: dry run (dryrun.go),
// per-policy probes (transaction.go), drift detection from the node's
// kernel events and enforcement (drift.go), revert on delete (revert.go),
// ordering (after.go), per-node values and the address pool (render.go).
//
// API connections are dialed from Options.DialNetNS (NetNSDialer), so in
// the lab a node's handler reaches the API server through the node's own
// network, as a hostNetwork pod does.
package handler
