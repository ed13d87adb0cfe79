package operator

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/go-logr/logr/testr"
	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/manifest"
)

func TestWithPlugin(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []string
		want    []string
		missing bool
	}{
		{name: "none yet", in: nil, want: []string{"p"}, missing: true},
		{name: "others kept, in their order", in: []string{"b", "a"}, want: []string{"b", "a", "p"}, missing: true},
		{name: "already there", in: []string{"a", "p"}, want: []string{"a", "p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got, missing := withPlugin(in, "p")
			if !slices.Equal(got, tc.want) || missing != tc.missing {
				t.Errorf("withPlugin(%v) = %v, %v; want %v, %v", tc.in, got, missing, tc.want, tc.missing)
			}
			if !slices.Equal(in, tc.in) {
				t.Errorf("the input changed: %v", in)
			}
		})
	}
}

var consolePluginGVK = schema.GroupVersionKind{Group: "console.openshift.io", Version: "v1", Kind: "ConsolePlugin"}

// The console plugin against a real API server: nothing while the Console
// capability is off; once ClusterVersion enables it, the ConsolePlugin,
// its Deployment and Service (with the service CA's annotation) and the
// plugin in the console's spec.plugins, next to the administrator's.
func TestConsolePlugin(t *testing.T) {
	ctx := context.Background()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	installOpenShiftCRDs(t, c)
	ns := "openshift-nmstate-console-test"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: manifest.ClusterVersionName}, Spec: configv1.ClusterVersionSpec{ClusterID: "5e4a2c4e-1f5b-4a8e-9d6f-0c1a2b3c4d5e"}}
	if err := c.Create(ctx, cv); err != nil {
		t.Fatal(err)
	}
	cv.Status.Capabilities.EnabledCapabilities = []configv1.ClusterVersionCapability{"Insights"}
	cv.Status.Desired.Version = "4.99.0"
	if err := c.Status().Update(ctx, cv); err != nil {
		t.Fatalf("clusterversion status: %v", err)
	}
	console := &unstructured.Unstructured{}
	console.SetGroupVersionKind(consoleGVK)
	console.SetName(manifest.ConsoleName)
	if err := unstructured.SetNestedStringSlice(console.Object, []string{"admins-own-plugin"}, "spec", "plugins"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(console.Object, "Managed", "spec", "managementState"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, console); err != nil {
		t.Fatalf("consoles.operator.openshift.io/cluster: %v", err)
	}
	nm := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate"}}
	t.Cleanup(func() {
		plugin := &unstructured.Unstructured{}
		plugin.SetGroupVersionKind(consolePluginGVK)
		plugin.SetName(manifest.ConsolePluginName)
		for _, o := range []client.Object{nm, cv, console, plugin} {
			if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: %v", err)
			}
		}
		waitFor(t, "no NMState left", func() (bool, string) {
			var l nmstatev1.NMStateList
			err := c.List(ctx, &l)
			return err == nil && len(l.Items) == 0, fmt.Sprint(len(l.Items), err)
		})
	})
	image := "registry.example/knmstate-console-plugin:v2"
	startOperator(t, Options{Namespace: ns, Image: "registry.example/knmstate:v2", Version: "v2", OpenShift: true,
		ConsolePluginImage: image, NoCertificates: true, Logger: testr.New(t)})
	if err := c.Create(ctx, nm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the operands", func() (bool, string) {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.HandlerName}, &appsv1.DaemonSet{})
		return err == nil, errString(err)
	})
	plugin := func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(consolePluginGVK)
		return c.Get(ctx, client.ObjectKey{Name: manifest.ConsolePluginName}, u)
	}
	// The operands are applied in one pass: the plugin would be among them.
	if err := plugin(); !apierrors.IsNotFound(err) {
		t.Fatalf("ConsolePlugin without the Console capability: %v", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.ConsolePluginName}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("plugin Deployment without the Console capability: %v", err)
	}

	// The capability enabled: the ClusterVersion's change is watched.
	if err := c.Get(ctx, client.ObjectKeyFromObject(cv), cv); err != nil {
		t.Fatal(err)
	}
	cv.Status.Capabilities.EnabledCapabilities = append(cv.Status.Capabilities.EnabledCapabilities, configv1.ClusterVersionCapability(manifest.ConsoleCapability))
	if err := c.Status().Update(ctx, cv); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ConsolePlugin", func() (bool, string) {
		err := plugin()
		return err == nil, errString(err)
	})
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(consolePluginGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: manifest.ConsolePluginName}, u); err != nil {
		t.Fatal(err)
	}
	backend, _, _ := unstructured.NestedMap(u.Object, "spec", "backend", "service")
	if backend["name"] != manifest.ConsolePluginName || backend["namespace"] != ns || backend["port"] != int64(9443) {
		t.Errorf("ConsolePlugin backend %v, want Service %s/%s port 9443", backend, ns, manifest.ConsolePluginName)
	}
	waitFor(t, "the plugin's Deployment with its image", func() (bool, string) {
		var d appsv1.Deployment
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.ConsolePluginName}, &d)
		if err != nil {
			return false, err.Error()
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		return ctr.Image == image && slices.Contains(ctr.Args, "--tls-min-version=VersionTLS12"), fmt.Sprint(ctr.Image, ctr.Args)
	})
	var svc corev1.Service
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifest.ConsolePluginName}, &svc); err != nil {
		t.Fatal(err)
	}
	if got := svc.Annotations[manifest.ServingCertAnnotation]; got != manifest.ConsolePluginServingSecret {
		t.Errorf("plugin Service asks the service CA for %q, want %q", got, manifest.ConsolePluginServingSecret)
	}
	waitFor(t, "the plugin in the console's spec.plugins", func() (bool, string) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(consoleGVK)
		if err := c.Get(ctx, client.ObjectKey{Name: manifest.ConsoleName}, got); err != nil {
			return false, err.Error()
		}
		plugins, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "plugins")
		return slices.Equal(plugins, []string{"admins-own-plugin", manifest.ConsolePluginName}), fmt.Sprint(plugins)
	})
}
