package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// fieldManager is the lab's name in server-side apply.
const fieldManager = "knmstate-lab"

// decodeDocs splits multi-document YAML into objects (empty documents
// skipped).
func decodeDocs(docs ...[]byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range docs {
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
		for {
			var m map[string]any
			err := d.Decode(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("decoding manifest: %w", err)
			}
			if len(m) == 0 {
				continue
			}
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out, nil
}

// applyObjects server-side applies objects in order, as `kubectl apply
// --server-side` would.
func applyObjects(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, objs []*unstructured.Unstructured) error {
	force := true
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		body, err := o.MarshalJSON()
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}

// setImages replaces the placeholder image of every container of a
// workload (what kustomize's images: does).
func setImages(o *unstructured.Unstructured, placeholder, image string) error {
	for _, field := range []string{"containers", "initContainers"} {
		path := []string{"spec", "template", "spec", field}
		cs, found, err := unstructured.NestedSlice(o.Object, path...)
		if err != nil || !found {
			continue
		}
		for i, c := range cs {
			cm, ok := c.(map[string]any)
			if ok && cm["image"] == placeholder {
				cm["image"] = image
				cs[i] = cm
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, cs, path...); err != nil {
			return err
		}
	}
	return nil
}

// replaceArg replaces the argument old of the named container's args with
// new, as the release tooling substitutes a pull spec wherever it is.
func replaceArg(o *unstructured.Unstructured, container, old, new string) error {
	path := []string{"spec", "template", "spec", "containers"}
	cs, found, err := unstructured.NestedSlice(o.Object, path...)
	if err != nil || !found {
		return fmt.Errorf("%s %s has no containers", o.GetKind(), o.GetName())
	}
	for i, c := range cs {
		cm, ok := c.(map[string]any)
		if !ok || cm["name"] != container {
			continue
		}
		args, _ := cm["args"].([]any)
		for j, a := range args {
			if a == old {
				args[j] = new
			}
		}
		cm["args"] = args
		cs[i] = cm
		return unstructured.SetNestedSlice(o.Object, cs, path...)
	}
	return fmt.Errorf("%s %s has no container %s", o.GetKind(), o.GetName(), container)
}

// appendArgs appends args to the named container's args.
func appendArgs(o *unstructured.Unstructured, container string, args []string) error {
	path := []string{"spec", "template", "spec", "containers"}
	cs, found, err := unstructured.NestedSlice(o.Object, path...)
	if err != nil || !found {
		return fmt.Errorf("%s %s has no containers", o.GetKind(), o.GetName())
	}
	for i, c := range cs {
		cm, ok := c.(map[string]any)
		if !ok || cm["name"] != container {
			continue
		}
		existing, _ := cm["args"].([]any)
		for _, a := range args {
			existing = append(existing, a)
		}
		cm["args"] = existing
		cs[i] = cm
		return unstructured.SetNestedSlice(o.Object, cs, path...)
	}
	return fmt.Errorf("%s %s has no container %s", o.GetKind(), o.GetName(), container)
}
