package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
)

// NodeNetworkState is the network state one node reports; its name is the
// node's name.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodenetworkstates,shortName=nns,scope=Cluster
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
type NodeNetworkState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Status shared.NodeNetworkStateStatus `json:"status,omitempty"`
}

// NodeNetworkStateList is a list of node network states.
//
// +kubebuilder:object:root=true
type NodeNetworkStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeNetworkState `json:"items"`
}
