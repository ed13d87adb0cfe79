// Package probe owns the connectivity checks run after a network change
// on a node, before it is committed: a ping of the main table's default
// gateway, DNS resolution through the node's name servers, reaching the
// API server on a fresh connection, and the node's own Ready condition.
//
// Every socket a probe opens is created inside the node's network
// namespace (on a locked OS thread), so one process can probe many nodes
// and never probes from its own namespace by accident; the API server is
// reached through the dialer the caller puts in the rest.Config. Targets
// (gateway, name servers) are read from the node's live state on every
// attempt, so a probe after an apply checks what the apply left.
//
// Select, the choice of probes before an apply, is a pure function. The
// package must not change the node: it only reads state and sends probes.
package probe
