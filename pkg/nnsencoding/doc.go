// Package nnsencoding holds the encodings of a NodeNetworkState's
// status.currentState: the full nmstate state (upstream's, and ours while
// it fits), and compact-v1, which a handler writes only when the full
// state would make the object too large for the API server (etcd refuses
// requests over 1.5 MiB). A NodeNetworkState written in compact-v1
// carries the annotation knmstate.io/nns-encoding: compact-v1, and
// ExpandJSON turns its currentState back into the full state
// (docs/nns-size.md).
//
// It works on JSON as stored in the object, so that any client, not only
// the handler, can read a compact state. It must not depend on the state
// model (pkg/nmstate): the encodings are about the JSON document.
package nnsencoding
