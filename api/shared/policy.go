package shared

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NodeNetworkConfigurationPolicySpec is what a policy asks of the nodes it
// selects.
type NodeNetworkConfigurationPolicySpec struct {
	// NodeSelector selects the nodes the policy applies to: every pair must
	// equal one of the node's labels. Empty selects all nodes. Values must be
	// valid label values (admission policy).
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="nodeSelector keys must be valid qualified names"
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Capture names nmpolicy expressions evaluated against each node's
	// current state; desiredState refers to them as {{ capture.<name> }}.
	// Immutable once the policy exists (admission policy).
	// +optional
	Capture map[string]string `json:"capture,omitempty"`

	// DesiredState is the nmstate document to apply on each selected node.
	// +optional
	DesiredState State `json:"desiredState,omitempty"`

	// MaxUnavailable is how many selected nodes (a number, or a percentage
	// of them) may be applying the policy at the same time. Unset means
	// 50%.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// NodeNetworkConfigurationPolicyStatus is the cluster-wide result of a
// policy, aggregated from its enactments.
type NodeNetworkConfigurationPolicyStatus struct {
	// +optional
	Conditions ConditionList `json:"conditions,omitempty"`

	// UnavailableNodeCount is the number of nodes that may be unavailable
	// while applying the policy.
	// +optional
	UnavailableNodeCount int `json:"unavailableNodeCount,omitempty"`

	// UnavailableNodeCountMap counts, per policy generation (decimal
	// string), the nodes currently holding a permit to apply it.
	// +optional
	UnavailableNodeCountMap map[string]int `json:"unavailableNodeCountMap,omitempty"`

	// LastUnavailableNodeCountUpdate is when UnavailableNodeCount last
	// changed.
	// +optional
	LastUnavailableNodeCountUpdate *metav1.Time `json:"lastUnavailableNodeCountUpdate,omitempty"`
}

// Condition types of a policy.
const (
	NodeNetworkConfigurationPolicyConditionAvailable   ConditionType = "Available"
	NodeNetworkConfigurationPolicyConditionDegraded    ConditionType = "Degraded"
	NodeNetworkConfigurationPolicyConditionProgressing ConditionType = "Progressing"
	NodeNetworkConfigurationPolicyConditionIgnored     ConditionType = "Ignored"
)

// NodeNetworkConfigurationPolicyConditionTypes lists the policy condition
// types in the order they are first set.
var NodeNetworkConfigurationPolicyConditionTypes = [...]ConditionType{
	NodeNetworkConfigurationPolicyConditionAvailable,
	NodeNetworkConfigurationPolicyConditionDegraded,
	NodeNetworkConfigurationPolicyConditionProgressing,
	NodeNetworkConfigurationPolicyConditionIgnored,
}

// Condition reasons of a policy.
const (
	NodeNetworkConfigurationPolicyConditionFailedToConfigure           ConditionReason = "FailedToConfigure"
	NodeNetworkConfigurationPolicyConditionSuccessfullyConfigured      ConditionReason = "SuccessfullyConfigured"
	NodeNetworkConfigurationPolicyConditionConfigurationProgressing    ConditionReason = "ConfigurationProgressing"
	NodeNetworkConfigurationPolicyConditionConfigurationNoMatchingNode ConditionReason = "NoMatchingNode"
)

// DefaultMaxUnavailable is the policy maxUnavailable when unset.
var DefaultMaxUnavailable = intstr.FromString("50%")
