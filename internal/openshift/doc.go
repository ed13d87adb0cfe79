// Package openshift owns knmstate's OpenShift node flows that happen
// outside the cluster's API: reading the per-host NMState of an
// install-config, validating it with the engine, rendering the
// MachineConfigs (Ignition) that put it on the nodes, and the first-boot
// decision of which file a host applies and whether it already has.
//
// Rendering is pure (values in, bytes out); applying is the caller's: the
// first-boot command drives pkg/apply with what Choose and Record decide.
// It must not reach the API server or touch a node's network.
package openshift
