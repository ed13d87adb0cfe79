package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/deploy"
)

// Operands are what the operator creates for an NMState, in apply order:
// identities, admission policies, network policies, Services, the webhook
// configurations (their CA bundle is the certificate manager's), then the
// workloads.
func Operands(p Params) []client.Object {
	var objs []client.Object
	objs = append(objs, HandlerRBAC(p)...)
	objs = append(objs, ControllerRBAC(p)...)
	objs = append(objs, WebhookRBAC(p)...)
	objs = append(objs, Reader(p)...)
	objs = append(objs, MetricsRBAC(p)...)
	objs = append(objs, PolicyValidation(p)...)
	objs = append(objs, PermitGuard(p)...)
	objs = append(objs, NodeScope(p)...)
	objs = append(objs, NetworkPolicies(p)...)
	objs = append(objs, WebhookService(p), MetricsService(p), ServiceMonitor(p), WebhookPDB(p))
	objs = append(objs, WebhookConfigurations(p)...)
	objs = append(objs, WebhookDeployment(p), ControllerDeployment(p), HandlerDaemonSet(p))
	OpenShiftify(p, objs)
	return objs
}

// Standalone is knmstate without an operator (deploy/knmstate): the
// namespace, the handler's and controller's RBAC, the admission policies,
// the handler DaemonSet and the controller Deployment. No admission webhook:
// its certificates need the operator.
func Standalone(p Params) []client.Object {
	objs := []client.Object{Namespace(p)}
	objs = append(objs, HandlerRBAC(p)...)
	objs = append(objs, ControllerRBAC(p)...)
	objs = append(objs, Reader(p)...)
	objs = append(objs, MetricsRBAC(p)...)
	objs = append(objs, PermitGuard(p)...)
	objs = append(objs, NodeScope(p)...)
	objs = append(objs, ControllerDeployment(p), HandlerDaemonSet(p))
	return objs
}

// OperatorBundle is what a user applies to install the operator
// (deploy/operator): the namespace, every CRD, the operator's RBAC and
// Deployment. Nothing else runs until an NMState exists.
func OperatorBundle(p Params) ([]client.Object, error) {
	objs := []client.Object{Namespace(p)}
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	objs = append(objs, crds...)
	objs = append(objs, OperatorRBAC(p)...)
	objs = append(objs, OperatorDeployment(p))
	return objs, nil
}

// CRDs are the CustomResourceDefinitions controller-gen generates into
// deploy/crds, as typed objects.
func CRDs() ([]client.Object, error) {
	docs, err := deploy.CRDs()
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, d := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(d, crd); err != nil {
			return nil, fmt.Errorf("decoding a CRD: %w", err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// Scheme knows every kind this package builds.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// WithKinds sets every object's apiVersion and kind from the scheme (typed
// objects built in Go leave them empty).
func WithKinds(s *runtime.Scheme, objs []client.Object) error {
	for _, o := range objs {
		if _, ok := o.(*unstructured.Unstructured); ok {
			continue // carries its own
		}
		gvks, _, err := s.ObjectKinds(o)
		if err != nil {
			return fmt.Errorf("kind of %T: %w", o, err)
		}
		o.GetObjectKind().SetGroupVersionKind(gvks[0])
	}
	return nil
}

// EncodeYAML writes objects as multi-document YAML, each with apiVersion
// and kind, without the empty status and creationTimestamp a typed
// object's encoding carries.
func EncodeYAML(objs []client.Object) ([]byte, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	if err := WithKinds(s, objs); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for i, o := range objs {
		var m map[string]any
		if u, ok := o.(*unstructured.Unstructured); ok {
			// Written as built, status included (a ClusterOperator's
			// manifest carries its versions and related objects there).
			m = u.DeepCopy().Object
		} else {
			var err error
			if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o); err != nil {
				return nil, fmt.Errorf("encoding %s: %w", o.GetName(), err)
			}
			if _, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
				// A schema's empty values mean something (default: {},
				// subresources.status: {}): only the status goes.
				delete(m, "status")
				if md, ok := m["metadata"].(map[string]any); ok {
					delete(md, "creationTimestamp")
				}
			} else {
				prune(m)
			}
		}
		y, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// prune removes null values, empty maps and the status of typed objects
// (what no one wrote).
func prune(m map[string]any) {
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	pruneValue(m)
}

// keepEmpty are keys whose empty value means something ("all pods", "a
// fresh directory").
var keepEmpty = map[string]bool{"podSelector": true, "emptyDir": true}

func pruneValue(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		for k, x := range t {
			if pruneValue(x) && !keepEmpty[k] {
				delete(t, k)
			}
		}
		return len(t) == 0
	case []any:
		for _, x := range t {
			pruneValue(x)
		}
		return false
	}
	return false
}

// onlyComments reports whether a YAML document holds nothing but
// comments and blank lines.
func onlyComments(doc []byte) bool {
	for _, l := range bytes.Split(doc, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 0 && l[0] != '#' && !bytes.Equal(l, []byte("---")) {
			return false
		}
	}
	return true
}

// DecodeYAML reads what EncodeYAML wrote (and any multi-document YAML of
// known kinds) into typed objects.
func DecodeYAML(data []byte) ([]client.Object, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	dec := serializer.NewCodecFactory(s).UniversalDeserializer()
	var out []client.Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading a manifest: %w", err)
		}
		if onlyComments(doc) {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding a manifest: %w", err)
		}
		co, ok := obj.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%T is not an object", obj)
		}
		out = append(out, co)
	}
	return out, nil
}
