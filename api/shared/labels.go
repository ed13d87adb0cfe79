package shared

// Labels, annotations and names of the nmstate.io API, shared by every
// component that reads or writes them.
const (
	// EnactmentPolicyLabel on an enactment names its policy.
	EnactmentPolicyLabel = "nmstate.io/policy"
	// EnactmentNodeLabel on an enactment names its node.
	EnactmentNodeLabel = "nmstate.io/node"
	// ForceNNSRefreshLabel on a node network state asks its handler to
	// report the state again now (value: any changing string).
	ForceNNSRefreshLabel = "nmstate.io/force-nns-refresh"
	// WebhookMutatingTimestampAnnotation on a policy records, in Unix
	// nanoseconds, the last create or update admission saw.
	WebhookMutatingTimestampAnnotation = "nmstate.io/webhook-mutating-timestamp"

	// Relationship labels copied onto node network states and enactments.
	ComponentLabel = "app.kubernetes.io/component"
	PartOfLabel    = "app.kubernetes.io/part-of"
	VersionLabel   = "app.kubernetes.io/version"
	ManagedByLabel = "app.kubernetes.io/managed-by"

	// NMStateResourceName is the name of the one NMState CR the operator
	// acts on.
	NMStateResourceName = "nmstate"
)
