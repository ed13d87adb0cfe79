package manifest

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace holds the components. The handler runs privileged pods on the
// host network, so Pod Security admits privileged pods here (as
// kubernetes-nmstate's namespace does).
func Namespace(p Params) *corev1.Namespace {
	p = p.withDefaults()
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: p.Namespace,
		Labels: map[string]string{
			LabelPartOf:                          "knmstate",
			"pod-security.kubernetes.io/enforce": "privileged",
			"pod-security.kubernetes.io/audit":   "privileged",
			"pod-security.kubernetes.io/warn":    "privileged",
		},
	}}
}

// NetworkPolicies deny the namespace's knmstate pods everything they do
// not need: the controller and the webhook may reach the API server (the
// kubernetes Service's port and the API server's own: whether a policy
// sees a Service's port or its endpoint's depends on the network plugin)
// and DNS; the webhook and the metrics port may be reached. The handler
// runs on the host network, where network policies do not apply.
func NetworkPolicies(p Params) []client.Object {
	p = p.withDefaults()
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := func(proto corev1.Protocol, n int) networkingv1.NetworkPolicyPort {
		v := intstr.FromInt32(int32(n))
		return networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &v}
	}
	knmstatePods := metav1.LabelSelector{MatchLabels: map[string]string{LabelName: "knmstate"}}
	np := func(name string, pods metav1.LabelSelector, types []networkingv1.PolicyType) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{
			ObjectMeta: p.meta(name, "network-policy"),
			Spec:       networkingv1.NetworkPolicySpec{PodSelector: pods, PolicyTypes: types},
		}
	}
	deny := np("knmstate-default-deny", knmstatePods, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress})
	egress := np("knmstate-allow-egress-api-dns", knmstatePods, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress})
	egress.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{
		{Ports: []networkingv1.NetworkPolicyPort{port(tcp, 443), port(tcp, 6443)}},
		{Ports: []networkingv1.NetworkPolicyPort{port(udp, 53), port(tcp, 53)}},
	}
	webhook := np("knmstate-allow-ingress-webhook", *selector(ComponentWebhook), []networkingv1.PolicyType{networkingv1.PolicyTypeIngress})
	// The API server calls from the host network: from anywhere.
	webhook.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(tcp, webhookPort), port(tcp, 8081)}}}
	metrics := np("knmstate-allow-ingress-metrics", knmstatePods, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress})
	metrics.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(tcp, metricsPort), port(tcp, 8081)}}}
	return []client.Object{deny, egress, webhook, metrics}
}

// Ports of the cluster-wide components.
const (
	webhookPort = 9443
	metricsPort = 8089
)
