package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/deploy"
)

// install creates the project's admission policy and CRDs and waits until
// every CRD version is served and the policy rejects what it should. The
// policy goes first: the API server takes about a second to load it, which
// then overlaps with the CRDs being established.
func install(ctx context.Context, cfg *rest.Config) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The probes below read deprecated versions on purpose.
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{}
	docs, err := deploy.Admission()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, file := range docs {
		if err := createAdmission(ctx, kube, file); err != nil {
			return err
		}
	}

	crds, err := deploy.CRDs()
	if err != nil {
		return err
	}
	ext, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var created []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return fmt.Errorf("decode CRD: %w", err)
		}
		err := retry(ctx, func() error {
			_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
		created = append(created, crd)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range created {
		if err := waitServed(ctx, dyn, crd); err != nil {
			return err
		}
	}
	return waitPolicyActive(ctx, dyn)
}

func createAdmission(ctx context.Context, kube kubernetes.Interface, file []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(file)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read admission manifest: %w", err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("decode admission manifest: %w", err)
		}
		switch meta.Kind {
		case "":
			continue // an empty document
		case "ValidatingAdmissionPolicy":
			p := &admissionv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict(doc, p); err != nil {
				return fmt.Errorf("decode %s: %w", meta.Kind, err)
			}
			err := retry(ctx, func() error {
				_, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{})
				return err
			})
			if err != nil {
				return fmt.Errorf("create %s %s: %w", meta.Kind, p.Name, err)
			}
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict(doc, b); err != nil {
				return fmt.Errorf("decode %s: %w", meta.Kind, err)
			}
			err := retry(ctx, func() error {
				_, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{})
				return err
			})
			if err != nil {
				return fmt.Errorf("create %s %s: %w", meta.Kind, b.Name, err)
			}
		default:
			return fmt.Errorf("admission manifest: unexpected kind %q", meta.Kind)
		}
	}
}

// waitServed waits until every served version of a CRD answers a list.
// Established alone is not enough: the handler for a new version can lag.
func waitServed(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		err := poll(ctx, func() error {
			_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		})
		if err != nil {
			return fmt.Errorf("%s not served: %w", gvr, err)
		}
	}
	return nil
}

// waitPolicyActive waits until the admission policy is in force, by
// dry-running the creation of a policy it must reject. The API server
// loads policies and bindings asynchronously, so "created" is not "active".
func waitPolicyActive(ctx context.Context, dyn dynamic.Interface) error {
	gvr := schema.GroupVersionResource{Group: "nmstate.io", Version: "v1", Resource: "nodenetworkconfigurationpolicies"}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nmstate.io/v1",
		"kind":       "NodeNetworkConfigurationPolicy",
		"metadata":   map[string]any{"name": strings.Repeat("x", 64)},
	}}
	const want = "must be no more than 63 characters"
	err := poll(ctx, func() error {
		_, err := dyn.Resource(gvr).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), want) {
			return nil
		}
		return fmt.Errorf("probe policy not rejected (err: %v)", err)
	})
	if err != nil {
		return fmt.Errorf("admission policy not active: %w", err)
	}
	return nil
}

// retry calls create until it succeeds, the object already exists (an
// earlier attempt got through), the server rejects the object itself, or
// ctx ends: the API server may still be starting.
func retry(ctx context.Context, create func() error) error {
	for {
		err := create()
		switch {
		case err == nil || apierrors.IsAlreadyExists(err):
			return nil
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			return err // retrying cannot fix the manifest
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// poll calls f every 20 ms until it succeeds or ctx ends.
func poll(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Install creates the project's admission policy and CRDs in a control
// plane started with Options.SkipInstall, and waits until they are served
// and active, as Start does without it: tests of what runs before they
// are.
func (e *Env) Install(ctx context.Context) error {
	if err := install(ctx, e.Config); err != nil {
		return fmt.Errorf("install API: %w", err)
	}
	return nil
}
