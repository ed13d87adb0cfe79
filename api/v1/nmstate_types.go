package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
)

// NMState is the operator CR: it asks for knmstate to be deployed, and how.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nmstates,scope=Cluster
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=".status.conditions[?(@.status==\"True\")].type",description="Status"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.conditions[?(@.status==\"True\")].reason",description="Reason"
type NMState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec defaults to {} so the field defaults below apply even when the
	// user writes no spec at all (the API server defaults only inside
	// objects that exist).
	// +kubebuilder:default={}
	// +optional
	Spec NMStateSpec `json:"spec,omitempty"`
	// +optional
	Status shared.NMStateStatus `json:"status,omitempty"`
}

// NMStateSpec says where and how the knmstate components run.
type NMStateSpec struct {
	// NodeSelector restricts the handler DaemonSet to matching nodes.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations are added to the handler DaemonSet.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity is added to the handler DaemonSet.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// InfraNodeSelector restricts the cluster-wide Deployments (webhook,
	// metrics, ...) to matching nodes.
	// +optional
	InfraNodeSelector map[string]string `json:"infraNodeSelector,omitempty"`
	// InfraTolerations are added to the cluster-wide Deployments.
	// +optional
	InfraTolerations []corev1.Toleration `json:"infraTolerations,omitempty"`
	// InfraAffinity is added to the cluster-wide Deployments.
	// +optional
	InfraAffinity *corev1.Affinity `json:"infraAffinity,omitempty"`
	// SelfSignConfiguration sets certificate lifetimes.
	// +optional
	SelfSignConfiguration *shared.SelfSignConfiguration `json:"selfSignConfiguration,omitempty"`
	// ProbeConfiguration configures the post-apply probes.
	// +kubebuilder:default={}
	// +optional
	ProbeConfiguration shared.NMStateProbeConfiguration `json:"probeConfiguration,omitempty"`
	// MetricsConfiguration configures the metrics endpoint.
	// +kubebuilder:default={}
	// +optional
	MetricsConfiguration NMStateMetricsConfiguration `json:"metricsConfiguration,omitempty"`
	// LogLevel is the handler verbosity.
	// +kubebuilder:default=info
	// +optional
	LogLevel shared.LogLevel `json:"logLevel,omitempty"`
}

// NMStateMetricsConfiguration configures the metrics endpoint.
type NMStateMetricsConfiguration struct {
	// BindAddress is the address metrics are served on.
	// +kubebuilder:default=":8089"
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`
}

// NMStateList is a list of NMState CRs.
//
// +kubebuilder:object:root=true
type NMStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NMState `json:"items"`
}
