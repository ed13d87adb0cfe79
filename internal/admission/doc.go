// Package admission decides what the admission webhook says about a
// NodeNetworkConfigurationPolicy: whether its spec can be admitted
// (ValidatePolicy: the desired state decoded strictly and validated by
// pkg/nmstate, the captures parsed by pkg/nmpolicy, every template naming a
// defined capture) and the JSON patches of upstream's mutating webhooks
// (conditions cleared on create and update, set Unknown on a status update
// without any, the nmstate.io/webhook-mutating-timestamp annotation).
//
// It is pure: values in, values out; the time is passed in. No HTTP, no
// API calls, no logging: internal/webhook serves these decisions.
//
// # Templates
//
// A policy's desired state may hold {{ capture.NAME.PATH }} templates that
// each node resolves against its own state, so it cannot be decoded in full
// before that. ValidatePolicy validates everything except the templated
// values: the document is decoded with nmstate.DecodeDeferred (templated
// values left unset; in plain string fields such as names the template
// text stands in, so equal templates still name the same interface), then
// validated, and a problem is reported only when it cannot be caused by a
// templated value:
//
//   - problems at a templated path, below it or at one of its ancestors are
//     dropped (a templated mtu says nothing about the mtu's range; an
//     interface whose ipv4 is templated may well have the addresses it
//     needs);
//   - an entry (interface, route, rule) whose type or state is templated is
//     checked by decoding only: its other rules depend on those (an absent
//     route needs no next hop);
//   - any other problem is kept only if it survives every single template
//     being replaced by each string of the document (and by each other
//     template), which is what a cross-reference such as "eth1 is not in
//     the port list of bond0" with a templated port needs. The search is
//     bounded; past the bound the remaining problems are dropped.
//
// The rule: a valid policy is never refused. Its tests replace every
// value, every subtree and all values at once of every valid example by a
// template and require acceptance.
package admission
