package operator

import (
	"context"
	"fmt"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/knmstate/knmstate/internal/manifest"
)

// consoleGVK is the console operator's configuration, whose spec.plugins
// lists the plugins the console loads. Read as unstructured: the operator
// needs one field of it, not openshift/api's operator types.
var consoleGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "Console"}

// consoleEnabled reports whether the cluster runs a console: the Console
// capability is among ClusterVersion version's enabled capabilities. It
// is read live; a ClusterVersion change triggers a reconcile (a
// capability can be enabled after installation, never disabled).
func consoleEnabled(ctx context.Context, r client.Reader) (bool, error) {
	var cv configv1.ClusterVersion
	err := r.Get(ctx, client.ObjectKey{Name: manifest.ClusterVersionName}, &cv)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading clusterversion/%s: %w", manifest.ClusterVersionName, err)
	}
	return slices.Contains(cv.Status.Capabilities.EnabledCapabilities, configv1.ClusterVersionCapability(manifest.ConsoleCapability)), nil
}

// withPlugin returns the console's spec.plugins with name added, and
// whether it was missing (pure).
func withPlugin(plugins []string, name string) ([]string, bool) {
	if slices.Contains(plugins, name) {
		return plugins, false
	}
	return append(slices.Clone(plugins), name), true
}

// enableConsolePlugin adds the plugin to consoles.operator.openshift.io
// cluster's spec.plugins when it is missing, as upstream's operator does:
// a ConsolePlugin alone is not loaded by the console. It never removes
// it: an administrator's list is theirs. No console configuration: nothing
// to enable.
func enableConsolePlugin(ctx context.Context, c client.Client, r client.Reader) (bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(consoleGVK)
	err := r.Get(ctx, client.ObjectKey{Name: manifest.ConsoleName}, u)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading consoles.operator.openshift.io/%s: %w", manifest.ConsoleName, err)
	}
	plugins, _, err := unstructured.NestedStringSlice(u.Object, "spec", "plugins")
	if err != nil {
		return false, fmt.Errorf("consoles.operator.openshift.io/%s spec.plugins: %w", manifest.ConsoleName, err)
	}
	plugins, missing := withPlugin(plugins, manifest.ConsolePluginName)
	if !missing {
		return false, nil
	}
	if err := unstructured.SetNestedStringSlice(u.Object, plugins, "spec", "plugins"); err != nil {
		return false, err
	}
	// An update carries the resourceVersion read: a concurrent change of
	// the list is not overwritten, the reconcile is retried.
	if err := c.Update(ctx, u); err != nil {
		return false, fmt.Errorf("adding %s to consoles.operator.openshift.io/%s spec.plugins: %w", manifest.ConsolePluginName, manifest.ConsoleName, err)
	}
	return true, nil
}
