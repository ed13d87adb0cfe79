package manifest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
)

// Names of the objects (and of the ServiceAccounts, which are also the
// components' identities).
const (
	DefaultNamespace = "nmstate"
	// ImagePlaceholder is the image of the YAML files before an installer
	// sets it (kustomize's images:, the Helm chart's values, the lab).
	ImagePlaceholder = "knmstate"

	HandlerName    = "knmstate-handler"
	ControllerName = "knmstate-controller"
	WebhookName    = "knmstate-webhook"
	OperatorName   = "knmstate-operator"
	MetricsName    = "knmstate-metrics"

	// Label keys every object carries.
	LabelName      = "app.kubernetes.io/name"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelComponent = "app.kubernetes.io/component"
	LabelVersion   = "app.kubernetes.io/version"
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// Components, the values of LabelComponent.
const (
	ComponentHandler    = "handler"
	ComponentController = "controller"
	ComponentWebhook    = "webhook"
	ComponentOperator   = "operator"
)

// Params are what the objects depend on.
type Params struct {
	// Namespace holds the components; default DefaultNamespace.
	Namespace string
	// Image is knmstate's image (every component runs the one binary);
	// default ImagePlaceholder.
	Image string
	// ImagePullPolicy default IfNotPresent.
	ImagePullPolicy corev1.PullPolicy
	// Version, when set, is the app.kubernetes.io/version label.
	Version string
	// ManagedBy, when set, is the app.kubernetes.io/managed-by label (the
	// operator's name for what it renders).
	ManagedBy string
	// Spec is the NMState's spec (placement, probes, log level,
	// certificates).
	Spec nmstatev1.NMStateSpec
	// HandlerArgs are appended to the handler's arguments (the lab's
	// shorter probe timeouts, its DNS probe name).
	HandlerArgs []string
	// OperatorResources are the operator container's; default requests of
	// 10m CPU and 40Mi memory.
	OperatorResources *corev1.ResourceRequirements
	// WebhookAnnotations are set on the webhook configurations
	// (cert-manager's CA injection when it issues the certificates).
	WebhookAnnotations map[string]string
	// OpenShift, when set, renders for OpenShift (OpenShiftify).
	OpenShift *OpenShiftParams
}

// WithDefaults returns p with every unset field at its default.
func (p Params) WithDefaults() Params { return p.withDefaults() }

func (p Params) withDefaults() Params {
	if p.Namespace == "" {
		p.Namespace = DefaultNamespace
	}
	if p.Image == "" {
		p.Image = ImagePlaceholder
	}
	if p.ImagePullPolicy == "" {
		p.ImagePullPolicy = corev1.PullIfNotPresent
	}
	return p
}

// labels are the labels of a component's objects.
func (p Params) labels(component string) map[string]string {
	l := map[string]string{
		LabelName:      "knmstate",
		LabelPartOf:    "knmstate",
		LabelComponent: component,
	}
	if p.Version != "" {
		l[LabelVersion] = p.Version
	}
	if p.ManagedBy != "" {
		l[LabelManagedBy] = p.ManagedBy
	}
	return l
}

// selector selects a component's pods (stable across versions: selectors
// of Deployments and DaemonSets are immutable).
func selector(component string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{LabelName: "knmstate", LabelComponent: component}}
}

func (p Params) meta(name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: p.labels(component)}
}

func (p Params) clusterMeta(name, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: p.labels(component)}
}

// ServiceAccountUser is the user name a component's ServiceAccount
// authenticates as.
func (p Params) ServiceAccountUser(name string) string {
	return "system:serviceaccount:" + p.withDefaults().Namespace + ":" + name
}

// Placement defaults, as upstream's operator applies them when the NMState
// leaves them unset.
var (
	defaultNodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	// The handler runs on every node, tainted or not.
	defaultTolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
)

func defaultInfraTolerations() []corev1.Toleration {
	// Upstream also tolerates node-role.kubernetes.io/master, which
	// Kubernetes 1.36 warns about (nodes no longer carry it).
	return []corev1.Toleration{
		{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
}

func defaultInfraAffinity() *corev1.Affinity {
	pref := func(key string, weight int32) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpExists}},
		}}
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			pref("node-role.kubernetes.io/control-plane", 10),
		},
	}}
}

// handlerPlacement is the handler DaemonSet's node selector, tolerations
// and affinity.
func (p Params) handlerPlacement() (map[string]string, []corev1.Toleration, *corev1.Affinity) {
	sel, tol := p.Spec.NodeSelector, p.Spec.Tolerations
	if sel == nil {
		sel = defaultNodeSelector
	}
	if tol == nil {
		tol = defaultTolerations
	}
	return sel, tol, p.Spec.Affinity
}

// infraPlacement is that of the cluster-wide Deployments (controller,
// webhook).
func (p Params) infraPlacement() (map[string]string, []corev1.Toleration, *corev1.Affinity) {
	sel, tol, aff := p.Spec.InfraNodeSelector, p.Spec.InfraTolerations, p.Spec.InfraAffinity
	if sel == nil {
		sel = defaultNodeSelector
	}
	if tol == nil {
		tol = defaultInfraTolerations()
	}
	if aff == nil {
		aff = defaultInfraAffinity()
	}
	return sel, tol, aff
}

// dnsProbeHost is the DNS probe's name (upstream's default when unset).
func (p Params) dnsProbeHost() string {
	if h := p.Spec.ProbeConfiguration.DNS.Host; h != "" {
		return h
	}
	return "root-servers.net"
}

func (p Params) debug() bool { return p.Spec.LogLevel == shared.LogLevelDebug }
