package webhook

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
)

// The webhooks, upstream's names and paths (the validating one is ours).
const (
	ValidateName        = "nodenetworkconfigurationpolicies-validate.nmstate.io"
	ValidatePath        = "/nodenetworkconfigurationpolicies-validate"
	MutateName          = "nodenetworkconfigurationpolicies-mutate.nmstate.io"
	MutatePath          = "/nodenetworkconfigurationpolicies-mutate"
	StatusMutateName    = "nodenetworkconfigurationpolicies-status-mutate.nmstate.io"
	StatusMutatePath    = "/nodenetworkconfigurationpolicies-status-mutate"
	TimestampMutateName = "nodenetworkconfigurationpolicies-timestamp-mutate.nmstate.io"
	TimestampMutatePath = "/nodenetworkconfigurationpolicies-timestamp-mutate"
)

// ConfigurationName is the name of both webhook configurations (upstream's
// MutatingWebhookConfiguration is "nmstate").
const ConfigurationName = "nmstate"

// DefaultPort is the webhook server's port (upstream's).
const DefaultPort = 9443

const (
	policies       = "nodenetworkconfigurationpolicies"
	policiesStatus = "nodenetworkconfigurationpolicies/status"
)

// Endpoint says how the API server reaches the webhook server.
type Endpoint struct {
	// ServiceNamespace, ServiceName and ServicePort (default 443) name the
	// webhook's Service, in a cluster.
	ServiceNamespace, ServiceName string
	ServicePort                   int32
	// URL, instead of a Service, is the server's base URL
	// (https://host:port), for a server outside the cluster or in tests.
	URL string
	// CABundle is the PEM bundle the API server verifies the server's
	// certificate with. Leave it nil when the certificate manager
	// injects it (and apply the configuration so that caBundle stays
	// the manager's: server-side apply without the field).
	CABundle []byte
	// Annotations are set on the configuration (cert-manager's
	// cert-manager.io/inject-ca-from).
	Annotations map[string]string
}

func (e Endpoint) client(path string) admissionregistrationv1.WebhookClientConfig {
	cc := admissionregistrationv1.WebhookClientConfig{CABundle: e.CABundle}
	if e.URL != "" {
		cc.URL = ptr.To(e.URL + path)
		return cc
	}
	port := e.ServicePort
	if port == 0 {
		port = 443
	}
	cc.Service = &admissionregistrationv1.ServiceReference{Namespace: e.ServiceNamespace, Name: e.ServiceName, Path: ptr.To(path), Port: ptr.To(port)}
	return cc
}

func rule(ops []admissionregistrationv1.OperationType, resources ...string) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{nmstatev1.GroupVersion.Group},
			APIVersions: []string{"v1", "v1beta1"},
			Resources:   resources,
			Scope:       ptr.To(admissionregistrationv1.ClusterScope),
		},
	}
}

var createUpdate = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}

// ValidatingConfiguration is the ValidatingWebhookConfiguration of the
// policy validation: policies (v1 and v1beta1) on create and update, not
// their status; failurePolicy Fail (a policy the engine cannot read never
// reaches a node), no side effects, AdmissionReview v1.
func ValidatingConfiguration(e Endpoint) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName, Annotations: e.Annotations},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    ValidateName,
			ClientConfig:            e.client(ValidatePath),
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule(createUpdate, policies)},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](10),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// MutatingConfiguration is the MutatingWebhookConfiguration of upstream's
// three mutations: conditions cleared on create and update, set Unknown on
// a status write without any, the timestamp annotation on both;
// failurePolicy Ignore as upstream (a mutation is a nicety, never a reason
// to refuse), no side effects, AdmissionReview v1.
func MutatingConfiguration(e Endpoint) *admissionregistrationv1.MutatingWebhookConfiguration {
	hook := func(name, path string, resources ...string) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name:                    name,
			ClientConfig:            e.client(path),
			Rules:                   []admissionregistrationv1.RuleWithOperations{rule(createUpdate, resources...)},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](10),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		}
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName, Annotations: e.Annotations},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			hook(MutateName, MutatePath, policies),
			hook(StatusMutateName, StatusMutatePath, policiesStatus),
			hook(TimestampMutateName, TimestampMutatePath, policies, policiesStatus),
		},
	}
}
