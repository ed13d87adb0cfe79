package shared

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeNetworkConfigurationEnactmentStatus is the result of one policy on one
// node. Enactments have no spec: the handler of the node writes the status.
type NodeNetworkConfigurationEnactmentStatus struct {
	// DesiredState is the policy's desired state rendered for this node
	// (captures resolved, defaults added).
	// +optional
	DesiredState State `json:"desiredState,omitempty"`

	// DesiredStateMetaInfo describes DesiredState.
	// +optional
	DesiredStateMetaInfo NodeNetworkConfigurationEnactmentMetaInfo `json:"desiredStateMetaInfo,omitempty"`

	// CapturedStates caches the resolved captures of the policy, by capture
	// name, so later reconciles resolve them the same way.
	// +optional
	CapturedStates map[string]NodeNetworkConfigurationEnactmentCapturedState `json:"capturedStates,omitempty"`

	// PolicyGeneration is the policy generation this status belongs to.
	// +optional
	PolicyGeneration int64 `json:"policyGeneration,omitempty"`

	// +optional
	Conditions ConditionList `json:"conditions,omitempty"`

	// Features lists the nmstate features the desired state uses.
	// +optional
	Features []string `json:"features,omitempty"`

	// RetryCount counts failed apply attempts per policy generation
	// (decimal string).
	// +optional
	RetryCount map[string]int `json:"retryCount,omitempty"`
}

// NodeNetworkConfigurationEnactmentCapturedState is one resolved capture.
type NodeNetworkConfigurationEnactmentCapturedState struct {
	// +optional
	State State `json:"state,omitempty"`
	// +optional
	MetaInfo NodeNetworkConfigurationEnactmentMetaInfo `json:"metaInfo,omitempty"`
}

// NodeNetworkConfigurationEnactmentMetaInfo records where a state came from.
type NodeNetworkConfigurationEnactmentMetaInfo struct {
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	TimeStamp metav1.Time `json:"time,omitempty"`
}

// Condition types of an enactment.
const (
	NodeNetworkConfigurationEnactmentConditionAvailable   ConditionType = "Available"
	NodeNetworkConfigurationEnactmentConditionFailing     ConditionType = "Failing"
	NodeNetworkConfigurationEnactmentConditionProgressing ConditionType = "Progressing"
	NodeNetworkConfigurationEnactmentConditionPending     ConditionType = "Pending"
	NodeNetworkConfigurationEnactmentConditionAborted     ConditionType = "Aborted"
)

// NodeNetworkConfigurationEnactmentConditionTypes lists the enactment
// condition types in the order a new enactment gets them.
var NodeNetworkConfigurationEnactmentConditionTypes = [...]ConditionType{
	NodeNetworkConfigurationEnactmentConditionAvailable,
	NodeNetworkConfigurationEnactmentConditionFailing,
	NodeNetworkConfigurationEnactmentConditionProgressing,
	NodeNetworkConfigurationEnactmentConditionPending,
	NodeNetworkConfigurationEnactmentConditionAborted,
}

// Condition reasons of an enactment.
const (
	NodeNetworkConfigurationEnactmentConditionFailedToConfigure          ConditionReason = "FailedToConfigure"
	NodeNetworkConfigurationEnactmentConditionRetrying                   ConditionReason = "Retrying"
	NodeNetworkConfigurationEnactmentConditionSuccessfullyConfigured     ConditionReason = "SuccessfullyConfigured"
	NodeNetworkConfigurationEnactmentConditionMaxUnavailableLimitReached ConditionReason = "MaxUnavailableLimitReached"
	NodeNetworkConfigurationEnactmentConditionConfigurationProgressing   ConditionReason = "ConfigurationProgressing"
	NodeNetworkConfigurationEnactmentConditionConfigurationAborted       ConditionReason = "ConfigurationAborted"
)

// EnactmentName is the name of the enactment of policy on node:
// "<node>.<policy>".
func EnactmentName(node, policy string) string {
	return node + "." + policy
}
