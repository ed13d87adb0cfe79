// Package shared holds the nmstate.io types that several API versions share
// (spec and status of policies, enactments, node states and the NMState
// operator CR), the condition list with its update semantics, and the label
// and name constants of the API. It is kept wire-compatible with
// kubernetes-nmstate (same JSON field names). It must not hold reconcile
// logic or talk to anything.
//
// +kubebuilder:object:generate=true
package shared
