// Package extension owns knmstate's opt-in policy annotations (the
// `knmstate.io/` prefix on a NodeNetworkConfigurationPolicy, documented in
// docs/extensions.md): their names, their parsing into Settings, and the
// errors that name the annotation and the reason; the per-node templates of
// desiredState and the address pool's assignment. The admission webhook
// refuses a policy whose annotations do not parse, and the handler parses
// them again before every use (a policy admitted without the webhook must
// fail the same way, on the node), so both read them through Parse.
//
// It holds no state and does no I/O: values in, values out (it names the
// probes of pkg/probe and builds a controller-runtime predicate, nothing
// more). It must not change the nmstate.io API: an annotation only selects
// behaviour of the handler and the controller.
package extension
