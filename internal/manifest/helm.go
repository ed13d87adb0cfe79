package manifest

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/deploy"
)

// ChartDir is where the Helm chart lives.
const ChartDir = "deploy/helm/knmstate"

// helmSentinel marks, in objects built for the chart, a field whose value
// the chart's values give; the YAML block holding it becomes a template.
const helmSentinel = "__HELM__"

// helmValues are the chart's default values: those that make `helm
// template` render exactly the plain bundle (deploy/operator).
type helmValues struct {
	Namespace       string                      `json:"namespace"`
	CreateNamespace bool                        `json:"createNamespace"`
	Image           string                      `json:"image"`
	ImagePullPolicy corev1.PullPolicy           `json:"imagePullPolicy"`
	NodeSelector    map[string]string           `json:"nodeSelector"`
	Tolerations     []corev1.Toleration         `json:"tolerations"`
	Affinity        *corev1.Affinity            `json:"affinity"`
	Resources       corev1.ResourceRequirements `json:"resources"`
	CreateNMState   bool                        `json:"createNMState"`
	NMState         map[string]any              `json:"nmstate"`
}

// HelmChart is the chart deploy/helm/knmstate, by path: the operator
// bundle's objects as templates (namespace, image, pull policy, node
// placement and resources from the values), the CRDs in crds/, an optional
// NMState (createNMState). Built from the same objects as the plain
// bundle, with sentinels where values go.
func HelmChart() (map[string][]byte, error) {
	def := Params{}.withDefaults()
	sel, tol, aff := def.infraPlacement()
	values := helmValues{
		Namespace: DefaultNamespace, CreateNamespace: true,
		Image: ImagePlaceholder, ImagePullPolicy: corev1.PullIfNotPresent,
		NodeSelector: sel, Tolerations: tol, Affinity: aff,
		Resources: def.operatorResources(),
		NMState:   map[string]any{},
	}
	p := Params{
		Namespace:       "{{ .Values.namespace }}",
		Image:           "{{ .Values.image }}",
		ImagePullPolicy: "{{ .Values.imagePullPolicy }}",
		OperatorResources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{
			helmSentinel + "resources": resource.MustParse("1"),
		}},
	}
	p.Spec.InfraNodeSelector = map[string]string{helmSentinel + "nodeSelector": ""}
	p.Spec.InfraTolerations = []corev1.Toleration{{Key: helmSentinel + "tolerations"}}
	p.Spec.InfraAffinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: helmSentinel + "affinity", Operator: corev1.NodeSelectorOpExists}},
		}}},
	}}
	operator, err := EncodeYAML(append(OperatorRBAC(p), OperatorDeployment(p)))
	if err != nil {
		return nil, err
	}
	operatorTmpl, err := templatize(string(operator))
	if err != nil {
		return nil, err
	}
	ns, err := EncodeYAML([]client.Object{Namespace(Params{Namespace: "{{ .Values.namespace }}"})})
	if err != nil {
		return nil, err
	}
	vals, err := yaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"Chart.yaml": []byte(`apiVersion: v2
name: knmstate
description: Declarative node networking for Kubernetes (nmstate.io API), the knmstate operator
type: application
version: 0.1.0
appVersion: "0.1.0"
`),
		"values.yaml":              append([]byte("# Defaults render exactly deploy/operator (the plain bundle).\n"), vals...),
		"templates/namespace.yaml": []byte("{{- if .Values.createNamespace }}\n" + string(ns) + "{{- end }}\n"),
		"templates/operator.yaml":  []byte(operatorTmpl),
		"templates/nmstate.yaml": []byte(`{{- if .Values.createNMState }}
apiVersion: nmstate.io/v1
kind: NMState
metadata:
  name: nmstate
spec: {{- toYaml .Values.nmstate | nindent 2 }}
{{- end }}
`),
	}
	crds, err := deploy.CRDFiles()
	if err != nil {
		return nil, err
	}
	for name, data := range crds {
		files["crds/"+name] = data
	}
	out := map[string][]byte{}
	for name, data := range files {
		if strings.HasSuffix(name, ".yaml") && !strings.HasPrefix(name, "crds/") {
			data = append([]byte(header), data...)
		}
		out[path.Join(ChartDir, name)] = data
	}
	return out, nil
}

var sentinelLine = regexp.MustCompile(`^(\s*)(?:- )?(?:key: )?` + helmSentinel + `(\w+)`)

// templatize replaces every YAML block holding a sentinel by the template
// of the value it stands for: the block's key at the same indentation with
// `{{- toYaml .Values.NAME | nindent N }}`.
func templatize(y string) (string, error) {
	lines := strings.Split(y, "\n")
	for {
		at, name := -1, ""
		for i, l := range lines {
			if m := sentinelLine.FindStringSubmatch(l); m != nil {
				at, name = i, m[2]
				break
			}
		}
		if at < 0 {
			return strings.Join(lines, "\n"), nil
		}
		// The block is the nearest line above with key "name:".
		start := -1
		for i := at - 1; i >= 0; i-- {
			if strings.TrimSpace(lines[i]) == name+":" {
				start = i
				break
			}
		}
		if start < 0 {
			return "", fmt.Errorf("sentinel of %s outside a %s: block", name, name)
		}
		indent := len(lines[start]) - len(strings.TrimLeft(lines[start], " "))
		end := start + 1
		for end < len(lines) {
			l := lines[end]
			ind := len(l) - len(strings.TrimLeft(l, " "))
			// Deeper lines belong to the block, and so do list items at
			// the key's own indentation.
			if strings.TrimSpace(l) == "" || ind < indent || (ind == indent && !strings.HasPrefix(strings.TrimLeft(l, " "), "- ")) {
				break
			}
			end++
		}
		repl := fmt.Sprintf("%s%s: {{- toYaml .Values.%s | nindent %d }}", strings.Repeat(" ", indent), name, name, indent+2)
		lines = append(lines[:start], append([]string{repl}, lines[end:]...)...)
	}
}
