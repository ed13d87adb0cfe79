package manifest

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OpenShift's names and conventions (reference: openshift-integration.md).
const (
	// OpenShiftNamespace holds knmstate on OpenShift, as it holds
	// kubernetes-nmstate there.
	OpenShiftNamespace = "openshift-nmstate"
	// ClusterOperatorName is the ClusterOperator the operator keeps.
	ClusterOperatorName = "nmstate"
	// OpenShiftImage is the payload's pull spec for knmstate's image; the
	// release tooling substitutes it (image-references, tag
	// OpenShiftImageTag) with the payload's digest.
	OpenShiftImage    = "registry.ci.openshift.org/openshift:knmstate"
	OpenShiftImageTag = "knmstate"
	// ReleaseVersionPlaceholder is the version the release tooling
	// replaces with the payload's.
	ReleaseVersionPlaceholder = "0.0.1-snapshot"
	// Capability is the cluster capability knmstate's payload manifests
	// belong to. OpenShift knows no such capability yet: adding it is an
	// openshift/api change (the constant and the capability sets), and
	// until then the CVO leaves manifests naming it out (docs/openshift.md).
	Capability = "NodeNetworking"
	// OperatorConfigName is the ConfigMap in the operator's namespace an
	// administrator creates to change its defaults (autoCreateNMState).
	// Not in the payload, so neither the CVO nor an upgrade touches it.
	OperatorConfigName = "knmstate-operator-config"
	// DefaultEnabledPlatforms are where the operator creates the NMState
	// by itself.
	DefaultEnabledPlatforms = "BareMetal"

	// Service CA: a Service's annotation asks for a serving certificate in
	// the named Secret; the other for the CA bundle to be injected.
	ServingCertAnnotation    = "service.beta.openshift.io/serving-cert-secret-name"
	InjectCABundleAnnotation = "service.beta.openshift.io/inject-cabundle"
)

// nonRootSCC is the SCC of the non-privileged pods.
const nonRootSCC = "nonroot-v2"

// OpenShiftParams render knmstate for OpenShift.
type OpenShiftParams struct {
	// TLSArgs are the servers' --tls-* flags from the cluster's TLS
	// security profile (tlsprofile.Profile.Args).
	TLSArgs []string
	// EnabledPlatforms, for the operator's Deployment: the platforms where
	// it creates the NMState by itself; default DefaultEnabledPlatforms.
	EnabledPlatforms string
	// ReleaseVersion is the operator's RELEASE_VERSION; default the
	// placeholder the release tooling replaces.
	ReleaseVersion string
	// ConsolePluginImage, for the operator's Deployment: the console
	// plugin's image; default OpenShiftConsolePluginImage.
	ConsolePluginImage string
}

// profiles are the cluster profiles knmstate's payload manifests are
// included in: not HyperShift (its hosted control plane has no nodes of its own to configure) nor IBM
// Cloud managed.
var profiles = []string{"self-managed-high-availability", "single-node-developer"}

// payloadPrefix is the payload file names' prefix: run level 70, after the
// network (07), service CA (09) and monitoring operators it relies on; no
// payload component depends on it.
const payloadPrefix = "0000_70_knmstate-operator_"

// OpenShiftPayload are the files of deploy/openshift as the Cluster
// Version Operator applies them (in file-name order): the namespace, the
// CRDs, the operator's RBAC and Deployment, the ClusterOperator (after the
// Deployment: the CVO waits on it), and image-references.
func OpenShiftPayload(p Params) (map[string][]client.Object, []byte, error) {
	if p.OpenShift == nil {
		p.OpenShift = &OpenShiftParams{}
	}
	if p.Namespace == "" {
		p.Namespace = OpenShiftNamespace
	}
	if p.Image == "" {
		p.Image = OpenShiftImage
	}
	p = p.withDefaults()
	crds, err := CRDs()
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]client.Object{
		payloadPrefix + "00_namespace.yaml":       {Namespace(p)},
		payloadPrefix + "01_crds.yaml":            crds,
		payloadPrefix + "02_rbac.yaml":            OperatorRBAC(p),
		payloadPrefix + "03_deployment.yaml":      {OperatorDeployment(p)},
		payloadPrefix + "04_clusteroperator.yaml": {ClusterOperator(p)},
	}
	for _, objs := range files {
		OpenShiftify(p, objs)
		for _, o := range objs {
			a := o.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			for _, prof := range profiles {
				a["include.release.openshift.io/"+prof] = "true"
			}
			a["capability.openshift.io/name"] = Capability
			o.SetAnnotations(a)
		}
	}
	pluginImage := p.OpenShift.ConsolePluginImage
	if pluginImage == "" {
		pluginImage = OpenShiftConsolePluginImage
	}
	refs := imageReferences(map[string]string{OpenShiftImageTag: p.Image, OpenShiftConsolePluginImageTag: pluginImage})
	return files, refs, nil
}

// ClusterOperator is the payload's ClusterOperator: the CVO creates it
// before the operator runs (must-gather finds the namespace and the
// nmstate.io resources even then); the operator keeps its status.
func ClusterOperator(p Params) *unstructured.Unstructured {
	p = p.withDefaults()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.openshift.io/v1",
		"kind":       "ClusterOperator",
		"metadata":   map[string]any{"name": ClusterOperatorName},
		"spec":       map[string]any{},
		"status": map[string]any{
			"versions": []any{map[string]any{"name": "operator", "version": ReleaseVersionPlaceholder}},
			"relatedObjects": func() []any {
				var out []any
				for _, r := range RelatedObjects(p.Namespace) {
					m := map[string]any{"group": r.Group, "resource": r.Resource, "name": r.Name}
					if r.Namespace != "" {
						m["namespace"] = r.Namespace
					}
					out = append(out, m)
				}
				return out
			}(),
		},
	}}
	return u
}

// RelatedObject names what must-gather collects.
type RelatedObject struct{ Group, Resource, Namespace, Name string }

// RelatedObjects are the ClusterOperator's: the namespace, every
// nmstate.io resource, the operator's ClusterRole.
func RelatedObjects(namespace string) []RelatedObject {
	return []RelatedObject{
		{Resource: "namespaces", Name: namespace},
		{Group: "nmstate.io", Resource: "nmstates"},
		{Group: "nmstate.io", Resource: "nodenetworkconfigurationpolicies"},
		{Group: "nmstate.io", Resource: "nodenetworkconfigurationenactments"},
		{Group: "nmstate.io", Resource: "nodenetworkstates"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: OperatorName},
	}
}

// imageReferences is the payload's image-references file: an ImageStream
// whose tags (by name) name the pull specs the release tooling
// substitutes.
func imageReferences(tags map[string]string) []byte {
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("kind: ImageStream\napiVersion: image.openshift.io/v1\nspec:\n  tags:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  - name: %s\n    from:\n      kind: DockerImage\n      name: %s\n", n, tags[n])
	}
	return []byte(b.String())
}

// OpenShiftify adapts rendered objects to OpenShift when p.OpenShift is
// set: the namespace opts out of the project node selector (the handler
// runs on every node) and into cluster monitoring; the handler may use the
// privileged SCC; pods say which SCC they need and that they are
// management workloads; the webhook's certificate comes from the service
// CA and its TLS follows the cluster's profile; the operator reads the
// cluster's configuration and keeps its ClusterOperator.
func OpenShiftify(p Params, objs []client.Object) {
	if p.OpenShift == nil {
		return
	}
	for _, o := range objs {
		switch t := o.(type) {
		case *corev1.Namespace:
			setAnnotation(t, "openshift.io/node-selector", "")
			if t.Labels == nil {
				t.Labels = map[string]string{}
			}
			t.Labels["openshift.io/cluster-monitoring"] = "true"
		case *rbacv1.ClusterRole:
			switch t.Name {
			case HandlerName:
				t.Rules = append(t.Rules, rbacv1.PolicyRule{APIGroups: []string{"security.openshift.io"}, Resources: []string{"securitycontextconstraints"}, ResourceNames: []string{"privileged"}, Verbs: []string{"use"}})
			case OperatorName:
				t.Rules = append(t.Rules,
					rbacv1.PolicyRule{APIGroups: []string{"config.openshift.io"}, Resources: []string{"infrastructures", "apiservers", "clusterversions"}, Verbs: []string{"get", "list", "watch"}},
					rbacv1.PolicyRule{APIGroups: []string{"config.openshift.io"}, Resources: []string{"clusteroperators"}, Verbs: []string{"get", "list", "watch", "create"}},
					rbacv1.PolicyRule{APIGroups: []string{"config.openshift.io"}, Resources: []string{"clusteroperators", "clusteroperators/status"}, ResourceNames: []string{ClusterOperatorName}, Verbs: []string{"update", "patch"}},
					// The NMState it creates on the enabled platforms.
					rbacv1.PolicyRule{APIGroups: []string{"nmstate.io"}, Resources: []string{"nmstates"}, Verbs: []string{"create"}},
					// The console plugin: whether the Console capability
					// is enabled (watched: it can be enabled later), the
					// ConsolePlugin, and its name in the console's
					// spec.plugins. A create cannot be limited by name;
					// what follows it can.
					rbacv1.PolicyRule{APIGroups: []string{"console.openshift.io"}, Resources: []string{"consoleplugins"}, Verbs: []string{"create"}},
					rbacv1.PolicyRule{APIGroups: []string{"console.openshift.io"}, Resources: []string{"consoleplugins"}, ResourceNames: []string{ConsolePluginName}, Verbs: []string{"get", "update", "patch", "delete"}},
					rbacv1.PolicyRule{APIGroups: []string{"operator.openshift.io"}, Resources: []string{"consoles"}, ResourceNames: []string{ConsoleName}, Verbs: []string{"get", "update", "patch"}},
					// Its own pod's SCC, and it grants the handler the
					// privileged one.
					rbacv1.PolicyRule{APIGroups: []string{"security.openshift.io"}, Resources: []string{"securitycontextconstraints"}, ResourceNames: []string{"privileged", nonRootSCC}, Verbs: []string{"use"}},
				)
			case ControllerName:
				t.Rules = append(t.Rules, rbacv1.PolicyRule{APIGroups: []string{"security.openshift.io"}, Resources: []string{"securitycontextconstraints"}, ResourceNames: []string{nonRootSCC}, Verbs: []string{"use"}})
			}
		case *rbacv1.Role:
			if t.Name == WebhookName+"-secrets" {
				t.Rules = append(t.Rules, rbacv1.PolicyRule{APIGroups: []string{"security.openshift.io"}, Resources: []string{"securitycontextconstraints"}, ResourceNames: []string{nonRootSCC}, Verbs: []string{"use"}})
			}
			if t.Name == OperatorName {
				// The administrator's settings (OperatorConfigName).
				t.Rules = append(t.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}})
			}
		case *corev1.Service:
			switch t.Name {
			case WebhookName:
				setAnnotation(t, ServingCertAnnotation, WebhookServingSecret)
			case ConsolePluginName:
				setAnnotation(t, ServingCertAnnotation, ConsolePluginServingSecret)
			}
		case *appsv1.DaemonSet:
			openShiftPod(&t.Spec.Template, "privileged")
		case *appsv1.Deployment:
			// nonroot-v2 is restricted-v2 that lets the pod keep the
			// image's non-root UID (65532) instead of one from the
			// namespace's range, so the same pod spec runs everywhere.
			openShiftPod(&t.Spec.Template, nonRootSCC)
			c := &t.Spec.Template.Spec.Containers[0]
			switch t.Name {
			case WebhookName, ConsolePluginName:
				c.Args = append(c.Args, p.OpenShift.TLSArgs...)
			case OperatorName:
				platforms := p.OpenShift.EnabledPlatforms
				if platforms == "" {
					platforms = DefaultEnabledPlatforms
				}
				version := p.OpenShift.ReleaseVersion
				if version == "" {
					version = ReleaseVersionPlaceholder
				}
				pluginImage := p.OpenShift.ConsolePluginImage
				if pluginImage == "" {
					pluginImage = OpenShiftConsolePluginImage
				}
				c.Args = append(c.Args, "--openshift=true", "--enabled-platforms="+platforms, "--console-plugin-image="+pluginImage)
				c.Env = append(c.Env, corev1.EnvVar{Name: "RELEASE_VERSION", Value: version})
			}
		}
	}
}

func openShiftPod(t *corev1.PodTemplateSpec, scc string) {
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations["openshift.io/required-scc"] = scc
	t.Annotations["target.workload.openshift.io/management"] = `{"effect": "PreferredDuringScheduling"}`
}

func setAnnotation(o metav1.Object, k, v string) {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	o.SetAnnotations(a)
}

// ParsePlatforms reads a comma-separated platform list.
func ParsePlatforms(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}
