package lab

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/knmstate/knmstate/deploy"
	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/openshiftcrd"
)

// The lab's Cluster Version Operator: its cluster profile and the
// capabilities enabled (knmstate's own, which OpenShift does not know yet:
// docs/openshift.md).
const labClusterProfile = "self-managed-high-availability"

var labCapabilities = []string{manifest.Capability, "Console"}

// playOpenShift gives the lab what an OpenShift cluster has that knmstate
// reads: config.openshift.io's CRDs, infrastructure/cluster with the
// platform, and a service CA (until the lab stops).
func (k *kubeletLab) playOpenShift(ctx context.Context, kube kubernetes.Interface, teardown *[]func()) error {
	platform := k.s.opts.OpenShiftPlatform
	ext, err := apiextensionsclient.NewForConfig(k.env.Config)
	if err != nil {
		return err
	}
	crds, err := openshiftcrd.CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, ext, crd.Name); err != nil {
			return err
		}
	}
	dyn, err := dynamic.NewForConfig(k.env.Config)
	if err != nil {
		return err
	}
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	infra.APIVersion, infra.Kind = configv1.GroupVersion.String(), "Infrastructure"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(infra)
	if err != nil {
		return err
	}
	gvr := configv1.GroupVersion.WithResource("infrastructures")
	u, err := dyn.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("infrastructure/cluster: %w", err)
	}
	status := map[string]any{
		"platform":               platform,
		"platformStatus":         map[string]any{"type": platform},
		"infrastructureName":     k.s.opts.Name,
		"controlPlaneTopology":   string(configv1.HighlyAvailableTopologyMode),
		"infrastructureTopology": string(configv1.HighlyAvailableTopologyMode),
		"apiServerURL":           k.env.Config.Host,
		"apiServerInternalURI":   k.env.Config.Host,
	}
	if err := unstructured.SetNestedMap(u.Object, status, "status"); err != nil {
		return err
	}
	if _, err := dyn.Resource(gvr).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("infrastructure/cluster status: %w", err)
	}
	if err := clusterVersion(ctx, dyn, k.s.opts.Name); err != nil {
		return err
	}
	if err := consoleConfig(ctx, dyn); err != nil {
		return err
	}
	ca, err := newServiceCA(k.s.log)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); ca.run(cctx, kube) }()
	*teardown = append(*teardown, func() { cancel(); <-done })
	k.s.mu.Lock()
	k.s.state.OpenShiftPlatform = platform
	k.s.mu.Unlock()
	return nil
}

// clusterVersion creates ClusterVersion version as the CVO keeps it: the
// lab's capabilities enabled (Console among them: the operator deploys its
// console plugin only then).
func clusterVersion(ctx context.Context, dyn dynamic.Interface, clusterName string) error {
	gvr := configv1.GroupVersion.WithResource("clusterversions")
	cv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": configv1.GroupVersion.String(),
		"kind":       "ClusterVersion",
		"metadata":   map[string]any{"name": manifest.ClusterVersionName},
		"spec":       map[string]any{"clusterID": uuidOf(clusterName)},
	}}
	u, err := dyn.Resource(gvr).Create(ctx, cv, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("clusterversion/%s: %w", manifest.ClusterVersionName, err)
	}
	// Only the capabilities OpenShift knows: the CRD's enum refuses
	// knmstate's own (manifest.Capability), which the lab's CVO enables
	// all the same.
	var caps []any
	for _, c := range labCapabilities {
		if c != manifest.Capability {
			caps = append(caps, c)
		}
	}
	status := map[string]any{
		"desired":            map[string]any{"version": "4.99.0-lab", "image": "lab.invalid/openshift-release:4.99.0-lab"},
		"observedGeneration": int64(1),
		"versionHash":        "lab",
		"availableUpdates":   nil,
		"capabilities":       map[string]any{"enabledCapabilities": caps, "knownCapabilities": caps},
	}
	if err := unstructured.SetNestedField(u.Object, status, "status"); err != nil {
		return err
	}
	if _, err := dyn.Resource(gvr).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("clusterversion/%s status: %w", manifest.ClusterVersionName, err)
	}
	return nil
}

// consoleConfig creates consoles.operator.openshift.io cluster, the
// console operator's configuration (no plugins yet): what the console
// operator would serve. No console runs in the lab.
func consoleConfig(ctx context.Context, dyn dynamic.Interface) error {
	gvr := schema.GroupVersionResource{Group: "operator.openshift.io", Version: "v1", Resource: "consoles"}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operator.openshift.io/v1",
		"kind":       "Console",
		"metadata":   map[string]any{"name": manifest.ConsoleName},
		"spec":       map[string]any{"managementState": "Managed"},
	}}
	if _, err := dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("consoles.operator.openshift.io/%s: %w", manifest.ConsoleName, err)
	}
	return nil
}

// uuidOf is a UUID-shaped cluster ID derived from the lab's name (the CRD
// wants one; the CVO makes a random one).
func uuidOf(name string) string {
	h := sha256.Sum256([]byte(name))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func waitEstablished(ctx context.Context, ext apiextensionsclient.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not established: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// PayloadObjects are the objects of deploy/openshift the lab's Cluster
// Version Operator applies, in its order (file name, then document), with
// the payload's images replaced by image and pluginImage (the console
// plugin's; "" when the lab has none: the operator then deploys no plugin)
// and the operator's handler arguments extended by handlerArgs (the lab's
// DNS probe name): what the release tooling's substitution and a test
// cluster's tuning do.
func PayloadObjects(image, pluginImage string, handlerArgs []string) ([]*unstructured.Unstructured, []string, error) {
	files, err := deploy.OpenShift()
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		switch path.Ext(n) {
		case ".yaml", ".yml", ".json":
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	var skipped []string
	for _, n := range names {
		objs, err := decodeDocs(files[n])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", n, err)
		}
		for _, o := range objs {
			if why := cvoExcludes(o.GetAnnotations()); why != "" {
				skipped = append(skipped, fmt.Sprintf("%s %s (%s)", o.GetKind(), o.GetName(), why))
				continue
			}
			if err := setImages(o, manifest.OpenShiftImage, image); err != nil {
				return nil, nil, err
			}
			if o.GetKind() == "Deployment" && o.GetName() == manifest.OperatorName {
				if err := appendArgs(o, "operator", handlerArgFlags(handlerArgs)); err != nil {
					return nil, nil, err
				}
				flag := "--console-plugin-image="
				if err := replaceArg(o, "operator", flag+manifest.OpenShiftConsolePluginImage, flag+pluginImage); err != nil {
					return nil, nil, err
				}
			}
			out = append(out, o)
		}
	}
	return out, skipped, nil
}

// cvoExcludes says why the CVO would leave a manifest out ("" if not):
// no annotations, not in the cluster profile, a capability not enabled.
func cvoExcludes(a map[string]string) string {
	if len(a) == 0 {
		return "no annotations"
	}
	if a["include.release.openshift.io/"+labClusterProfile] != "true" {
		return "not in profile " + labClusterProfile
	}
	if caps, ok := a["capability.openshift.io/name"]; ok {
		for _, c := range strings.Split(caps, "+") {
			if !slices.Contains(labCapabilities, c) {
				return "capability " + c + " not enabled"
			}
		}
	}
	return ""
}

func handlerArgFlags(args []string) []string {
	var out []string
	for _, a := range args {
		out = append(out, "--handler-arg="+a)
	}
	return out
}

// installPayload applies deploy/openshift as the Cluster Version Operator
// would and waits for ClusterOperator/nmstate to be Available; on a
// platform where knmstate is enabled by default, also for the handler on
// every node and their NodeNetworkStates.
func (k *kubeletLab) installPayload(ctx context.Context, kube kubernetes.Interface) error {
	objs, skipped, err := PayloadObjects(k.images["knmstate"], k.images[consolePluginImage], append([]string{"--probe-dns-host=" + apiHost}, k.s.opts.HandlerArgs...))
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		return fmt.Errorf("the lab's CVO would leave out: %s", strings.Join(skipped, "; "))
	}
	dc, err := discovery.NewDiscoveryClientForConfig(k.env.Config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(k.env.Config)
	if err != nil {
		return err
	}
	start := time.Now()
	for _, o := range objs {
		if err := applyObjects(ctx, dyn, mapper, []*unstructured.Unstructured{o}); err != nil {
			if !strings.Contains(err.Error(), "no matches for kind") {
				return err
			}
			// A CRD of the payload just created: discovery again.
			mapper.Reset()
			if err := applyObjects(ctx, dyn, mapper, []*unstructured.Unstructured{o}); err != nil {
				return err
			}
		}
	}
	if err := WaitClusterOperatorAvailable(ctx, dyn, 4*time.Minute); err != nil {
		return err
	}
	k.s.note("OpenShift payload applied; ClusterOperator %s Available %.1f s later", manifest.ClusterOperatorName, time.Since(start).Seconds())
	if !slices.Contains(manifest.ParsePlatforms(manifest.DefaultEnabledPlatforms), k.s.opts.OpenShiftPlatform) {
		return nil
	}
	if err := k.waitWorkloads(ctx, kube); err != nil {
		return err
	}
	return waitNNS(ctx, dyn, k.nodes, 2*time.Minute)
}

// WaitClusterOperatorAvailable waits for ClusterOperator/nmstate's
// Available=True (with the operator's version reported, as the CVO
// requires).
func WaitClusterOperatorAvailable(ctx context.Context, dyn dynamic.Interface, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	gvr := configv1.GroupVersion.WithResource("clusteroperators")
	last := "not found"
	for {
		o, err := dyn.Resource(gvr).Get(ctx, manifest.ClusterOperatorName, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			versions, _, _ := unstructured.NestedSlice(o.Object, "status", "versions")
			last = fmt.Sprint(conds)
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Available" && m["status"] == "True" && len(versions) > 0 {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ClusterOperator %s not Available (kubectl -n %s logs deploy/%s): %s: %w", manifest.ClusterOperatorName, manifest.OpenShiftNamespace, manifest.OperatorName, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// PayloadForLab is PayloadObjects for a running lab: its registry's image
// and its DNS probe name, plus handlerArgs.
func PayloadForLab(st *State, handlerArgs []string) ([]*unstructured.Unstructured, error) {
	img, ok := st.Images["knmstate"]
	if !ok {
		return nil, fmt.Errorf("lab %s serves no knmstate image (kubelet mode)", st.Name)
	}
	objs, skipped, err := PayloadObjects(img, st.Images[consolePluginImage], append([]string{"--probe-dns-host=" + apiHost}, handlerArgs...))
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		return nil, fmt.Errorf("the lab's CVO would leave out: %s", strings.Join(skipped, "; "))
	}
	return objs, nil
}
