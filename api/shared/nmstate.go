package shared

// NMStateStatus is the observed state of the operator CR.
type NMStateStatus struct {
	// +optional
	Conditions ConditionList `json:"conditions,omitempty"`
}

// SelfSignConfiguration sets the lifetimes of the self-signed certificates
// (Go duration strings).
type SelfSignConfiguration struct {
	// CARotateInterval is how long a CA certificate is valid.
	// +optional
	CARotateInterval string `json:"caRotateInterval,omitempty"`
	// CAOverlapInterval is how long an expired CA is still trusted next to
	// its successor.
	// +optional
	CAOverlapInterval string `json:"caOverlapInterval,omitempty"`
	// CertRotateInterval is how long a serving certificate is valid.
	// +optional
	CertRotateInterval string `json:"certRotateInterval,omitempty"`
	// CertOverlapInterval is how long an expired serving certificate is
	// still served next to its successor.
	// +optional
	CertOverlapInterval string `json:"certOverlapInterval,omitempty"`
}

// NMStateProbeConfiguration configures the connectivity probes run after an
// apply.
type NMStateProbeConfiguration struct {
	// +kubebuilder:default={"host": "root-servers.net"}
	// +optional
	DNS NMStateDNSProbeConfiguration `json:"dns,omitempty"`
}

// NMStateDNSProbeConfiguration configures the DNS probe.
type NMStateDNSProbeConfiguration struct {
	// Host is the name the DNS probe resolves.
	// +kubebuilder:default="root-servers.net"
	// +optional
	Host string `json:"host,omitempty"`
}

// LogLevel is the verbosity of the handler.
// +kubebuilder:validation:Enum=info;debug
type LogLevel string

// Log levels.
const (
	LogLevelInfo  LogLevel = "info"
	LogLevelDebug LogLevel = "debug"
)

// Condition types and reasons of the operator CR.
const (
	NMStateConditionAvailable   ConditionType = "Available"
	NMStateConditionDegraded    ConditionType = "Degraded"
	NMStateConditionProgressing ConditionType = "Progressing"

	NMStateConditionInternalError             ConditionReason = "InternalError"
	NMStateConditionDeploying                 ConditionReason = "Deploying"
	NMStateConditionSuccessfullyDeployed      ConditionReason = "SuccessfullyDeployed"
	NMStateConditionTLSProfileNotFullyHonored ConditionReason = "TLSProfileNotFullyHonored"
)
