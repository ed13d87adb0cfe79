package shared

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeNetworkStateStatus is the network state one node reports. Node
// network states have no spec: the handler of the node writes the status.
type NodeNetworkStateStatus struct {
	// CurrentState is the node's current network state.
	// +optional
	CurrentState State `json:"currentState,omitempty"`

	// LastSuccessfulUpdateTime is when CurrentState last changed.
	// +optional
	LastSuccessfulUpdateTime metav1.Time `json:"lastSuccessfulUpdateTime,omitempty"`

	// HostNetworkManagerVersion is the version of the network manager of
	// the host (kubernetes-nmstate reports NetworkManager's).
	// +optional
	HostNetworkManagerVersion string `json:"hostNetworkManagerVersion,omitempty"`

	// HandlerNmstateVersion is the nmstate engine version of the handler.
	// +optional
	HandlerNmstateVersion string `json:"handlerNmstateVersion,omitempty"`

	// HandlerNetworkManagerVersion is declared for compatibility.
	// +optional
	HandlerNetworkManagerVersion string `json:"handlerNetworkManagerVersion,omitempty"`

	// +optional
	Conditions ConditionList `json:"conditions,omitempty"`
}

// Condition types and reasons of a node network state (declared for
// compatibility).
const (
	NodeNetworkStateConditionAvailable ConditionType = "Available"
	NodeNetworkStateConditionFailing   ConditionType = "Failing"

	NodeNetworkStateConditionFailedToConfigure      ConditionReason = "FailedToConfigure"
	NodeNetworkStateConditionSuccessfullyConfigured ConditionReason = "SuccessfullyConfigured"
)
