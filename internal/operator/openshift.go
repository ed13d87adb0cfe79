package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/knmstate/knmstate/api/shared"
	nmstatev1 "github.com/knmstate/knmstate/api/v1"
	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/tlsprofile"
)

// AutoCreatedAnnotation marks the NMState the operator created by itself
// on an enabled platform.
const AutoCreatedAnnotation = "knmstate.io/created-by-operator"

// autoCreateKey is the key of the operator's ConfigMap
// (manifest.OperatorConfigName) that turns off creating the NMState on
// the enabled platforms: "false" opts out.
const autoCreateKey = "autoCreateNMState"

// clusterOperatorRequest is the one request of the ClusterOperator
// controller: everything it watches maps to it.
var clusterOperatorRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: manifest.ClusterOperatorName}}

// clusterOperator keeps ClusterOperator/nmstate true to what runs, and
// creates the NMState on the enabled platforms unless the administrator
// opted out.
type clusterOperator struct {
	client client.Client
	// reader reads past the cache: the opt-out is read live before the
	// NMState is created, so a deletion seen before the opt-out's
	// ConfigMap reached the cache does not bring the NMState back.
	reader client.Reader
	opts   Options
	log    logr.Logger
	now    func() time.Time
}

// platform is the cluster's platform type (the Infrastructure's
// status.platformStatus.type, or the deprecated status.platform).
func (c *clusterOperator) platform(ctx context.Context) (configv1.PlatformType, error) {
	var infra configv1.Infrastructure
	if err := c.client.Get(ctx, client.ObjectKey{Name: "cluster"}, &infra); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading infrastructure/cluster: %w", err)
	}
	if ps := infra.Status.PlatformStatus; ps != nil && ps.Type != "" {
		return ps.Type, nil
	}
	return infra.Status.Platform, nil //nolint:staticcheck // the older clusters' only field
}

// optedOut reports whether the administrator turned off creating the
// NMState by itself.
func (c *clusterOperator) optedOut(ctx context.Context, r client.Reader) (bool, error) {
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: c.opts.Namespace, Name: manifest.OperatorConfigName}, &cm)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading ConfigMap %s/%s: %w", c.opts.Namespace, manifest.OperatorConfigName, err)
	}
	switch v := strings.ToLower(strings.TrimSpace(cm.Data[autoCreateKey])); v {
	case "", "true":
		return false, nil
	case "false":
		return true, nil
	default:
		return false, fmt.Errorf("ConfigMap %s/%s: %s: %q is neither true nor false", c.opts.Namespace, manifest.OperatorConfigName, autoCreateKey, cm.Data[autoCreateKey])
	}
}

func (c *clusterOperator) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	platform, err := c.platform(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	optedOut, configErr := c.optedOut(ctx, c.client)
	var list nmstatev1.NMStateList
	if err := c.client.List(ctx, &list); err != nil {
		return reconcile.Result{}, err
	}
	nm := oldestNMState(list.Items)
	enabled := slices.Contains(c.opts.EnabledPlatforms, string(platform))
	if nm == nil && len(list.Items) == 0 && enabled && !optedOut && configErr == nil {
		optedOut, configErr = c.optedOut(ctx, c.reader)
	}
	if nm == nil && len(list.Items) == 0 && enabled && !optedOut && configErr == nil {
		created := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{
			Name:        "nmstate",
			Annotations: map[string]string{AutoCreatedAnnotation: "true"},
		}}
		if err := c.client.Create(ctx, created); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating the NMState on platform %s: %w", platform, err)
		}
		c.log.Info("created the NMState: the platform is one where knmstate runs by default", "platform", platform)
	}
	st := c.observe(ctx, nm)
	st.platform, st.enabled, st.optedOut, st.configErr = platform, enabled, optedOut, configErr
	return reconcile.Result{}, c.write(ctx, st)
}

// observed is what the ClusterOperator's status is computed from.
type observed struct {
	platform          configv1.PlatformType
	enabled, optedOut bool
	configErr         error
	nmstate           *nmstatev1.NMState
	missing, rolling  []string
	unavailable       []string
}

// observe reads the operands' workloads for the NMState that counts.
func (c *clusterOperator) observe(ctx context.Context, nm *nmstatev1.NMState) observed {
	st := observed{nmstate: nm}
	if nm == nil {
		return st
	}
	for _, name := range []string{manifest.ControllerName, manifest.WebhookName} {
		d := &appsv1.Deployment{}
		if err := c.client.Get(ctx, types.NamespacedName{Namespace: c.opts.Namespace, Name: name}, d); err != nil {
			st.missing = append(st.missing, "Deployment "+name)
			continue
		}
		if msg := deploymentProgressing(d); msg != "" {
			st.rolling = append(st.rolling, msg)
		}
		if d.Status.AvailableReplicas == 0 {
			st.unavailable = append(st.unavailable, fmt.Sprintf("Deployment %s has no available replica", name))
		}
	}
	ds := &appsv1.DaemonSet{}
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: c.opts.Namespace, Name: manifest.HandlerName}, ds); err != nil {
		st.missing = append(st.missing, "DaemonSet "+manifest.HandlerName)
	} else {
		if msg := daemonSetProgressing(ds); msg != "" {
			st.rolling = append(st.rolling, msg)
		}
		if ds.Status.DesiredNumberScheduled > 0 && ds.Status.NumberAvailable == 0 {
			st.unavailable = append(st.unavailable, fmt.Sprintf("DaemonSet %s has no available pod", manifest.HandlerName))
		}
	}
	return st
}

// Reasons of the ClusterOperator's conditions beyond AsExpected.
const (
	reasonAsExpected        = "AsExpected"
	reasonNotEnabled        = "NotEnabledOnPlatform"
	reasonOptedOut          = "DisabledByAdministrator"
	reasonWaitingForNMState = "WaitingForNMState"
	reasonDeploying         = "Deploying"
	reasonNotAvailable      = "OperandsNotAvailable"
	reasonConfigError       = "InvalidOperatorConfig"
)

// coStatus computes the ClusterOperator's conditions and versions (pure).
func coStatus(st observed, enabledPlatforms []string, version string, old configv1.ClusterOperatorStatus) ([]configv1.ClusterOperatorStatusCondition, []configv1.OperandVersion) {
	type cond struct {
		status      configv1.ConditionStatus
		reason, msg string
	}
	conds := map[configv1.ClusterStatusConditionType]cond{}
	set := func(t configv1.ClusterStatusConditionType, s configv1.ConditionStatus, reason, msg string) {
		conds[t] = cond{s, reason, msg}
	}
	upgradeable := cond{configv1.ConditionTrue, reasonAsExpected, "Upgrades are not blocked by knmstate"}
	versions := []configv1.OperandVersion{{Name: "operator", Version: version}}
	degraded := cond{configv1.ConditionFalse, reasonAsExpected, "Nothing is degraded"}
	if st.configErr != nil {
		degraded = cond{configv1.ConditionTrue, reasonConfigError, fmt.Sprintf("%v: fix or delete the ConfigMap", st.configErr)}
	}
	disabled := "Disabled"
	switch {
	case st.nmstate == nil:
		var reason, msg string
		switch {
		case !st.enabled:
			platform := string(st.platform)
			if platform == "" {
				platform = "unknown"
			}
			reason = reasonNotEnabled
			msg = fmt.Sprintf("knmstate is not enabled by default on platform %s (it is on %s): create an NMState to enable it", platform, strings.Join(enabledPlatforms, ", "))
		case st.optedOut:
			reason = reasonOptedOut
			msg = fmt.Sprintf("The administrator turned off creating the NMState (ConfigMap %s %s=false): create an NMState to enable knmstate", manifest.OperatorConfigName, autoCreateKey)
		default:
			reason = reasonWaitingForNMState
			msg = "Waiting for the NMState"
		}
		set(configv1.OperatorAvailable, configv1.ConditionTrue, reason, msg)
		set(configv1.OperatorProgressing, configv1.ConditionFalse, reason, msg)
		set(configv1.ClusterStatusConditionType(disabled), configv1.ConditionTrue, reason, msg)
	default:
		set(configv1.ClusterStatusConditionType(disabled), configv1.ConditionFalse, reasonAsExpected, "Enabled by NMState "+st.nmstate.Name)
		var applyErr string
		if c := st.nmstate.Status.Conditions.Find(shared.NMStateConditionDegraded); c != nil && c.Status == corev1.ConditionTrue {
			applyErr = c.Message
		}
		notYet := append(append([]string(nil), st.missing...), st.unavailable...)
		switch {
		case len(notYet) > 0:
			msg := strings.Join(notYet, "; ")
			set(configv1.OperatorAvailable, configv1.ConditionFalse, reasonNotAvailable, msg)
		default:
			set(configv1.OperatorAvailable, configv1.ConditionTrue, reasonAsExpected, "Every component runs")
		}
		rolling := append(append([]string(nil), st.missing...), st.rolling...)
		if len(rolling) > 0 {
			set(configv1.OperatorProgressing, configv1.ConditionTrue, reasonDeploying, "Deploying: "+strings.Join(rolling, "; "))
			// Keep reporting the versions that run until the rollout is
			// done (what the CVO waits for).
			versions = old.Versions
		} else {
			set(configv1.OperatorProgressing, configv1.ConditionFalse, reasonAsExpected, "Every component is at version "+version)
			versions = append(versions, configv1.OperandVersion{Name: "handler", Version: version})
		}
		if applyErr != "" && degraded.status == configv1.ConditionFalse {
			degraded = cond{configv1.ConditionTrue, string(shared.NMStateConditionInternalError), "Deploying the components failed: " + applyErr}
		}
	}
	conds[configv1.OperatorDegraded] = degraded
	conds[configv1.OperatorUpgradeable] = upgradeable
	order := []configv1.ClusterStatusConditionType{configv1.OperatorAvailable, configv1.OperatorProgressing, configv1.OperatorDegraded, configv1.OperatorUpgradeable, configv1.ClusterStatusConditionType(disabled)}
	var out []configv1.ClusterOperatorStatusCondition
	for _, t := range order {
		c := conds[t]
		oc := configv1.ClusterOperatorStatusCondition{Type: t, Status: c.status, Reason: c.reason, Message: c.msg}
		for _, o := range old.Conditions {
			if o.Type == t && o.Status == c.status {
				oc.LastTransitionTime = o.LastTransitionTime // no transition
			}
		}
		out = append(out, oc)
	}
	return out, versions
}

// write creates the ClusterOperator when missing (the CVO creates it from
// the payload, but an operator must recreate it) and writes its status
// when it changed.
func (c *clusterOperator) write(ctx context.Context, st observed) error {
	var co configv1.ClusterOperator
	err := c.client.Get(ctx, client.ObjectKey{Name: manifest.ClusterOperatorName}, &co)
	if apierrors.IsNotFound(err) {
		co = configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: manifest.ClusterOperatorName}}
		if err := c.client.Create(ctx, &co); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterOperator %s: %w", manifest.ClusterOperatorName, err)
		}
		if err := c.client.Get(ctx, client.ObjectKey{Name: manifest.ClusterOperatorName}, &co); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	conds, versions := coStatus(st, c.opts.EnabledPlatforms, c.opts.ReleaseVersion, co.Status)
	now := metav1.NewTime(c.now())
	for i := range conds {
		if conds[i].LastTransitionTime.IsZero() {
			conds[i].LastTransitionTime = now
		}
	}
	var related []configv1.ObjectReference
	for _, r := range manifest.RelatedObjects(c.opts.Namespace) {
		related = append(related, configv1.ObjectReference{Group: r.Group, Resource: r.Resource, Namespace: r.Namespace, Name: r.Name})
	}
	if sameCOStatus(co.Status, conds, versions, related) {
		return nil
	}
	co.Status.Conditions, co.Status.Versions, co.Status.RelatedObjects = conds, versions, related
	if err := c.client.Status().Update(ctx, &co); err != nil {
		return fmt.Errorf("ClusterOperator %s status: %w", manifest.ClusterOperatorName, err)
	}
	return nil
}

func sameCOStatus(old configv1.ClusterOperatorStatus, conds []configv1.ClusterOperatorStatusCondition, versions []configv1.OperandVersion, related []configv1.ObjectReference) bool {
	if len(old.Conditions) != len(conds) || !slices.Equal(old.Versions, versions) || !slices.Equal(old.RelatedObjects, related) {
		return false
	}
	for i, c := range conds {
		o := old.Conditions[i]
		if o.Type != c.Type || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message {
			return false
		}
	}
	return true
}

// openShiftParams are the OpenShift parts of the operands' manifests: the
// cluster's TLS security profile for the webhook, the service CA's CA
// bundle in the webhook configurations.
func openShiftParams(ctx context.Context, c client.Client) (*manifest.OpenShiftParams, map[string]string, error) {
	var api configv1.APIServer
	var spec *configv1.TLSSecurityProfile
	err := c.Get(ctx, client.ObjectKey{Name: "cluster"}, &api)
	switch {
	case err == nil:
		spec = api.Spec.TLSSecurityProfile
	case apierrors.IsNotFound(err):
	default:
		return nil, nil, fmt.Errorf("reading apiserver/cluster: %w", err)
	}
	prof, err := tlsprofile.FromSpec(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("apiserver/cluster: %w", err)
	}
	return &manifest.OpenShiftParams{TLSArgs: prof.Args()}, map[string]string{manifest.InjectCABundleAnnotation: "true"}, nil
}

// OpenShiftMode resolves the --openshift flag: "auto" asks the API server
// whether it serves config.openshift.io's Infrastructure.
func OpenShiftMode(cfg *rest.Config, flag string) (bool, error) {
	switch flag {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "auto", "":
	default:
		return false, fmt.Errorf("--openshift: %q is not true, false or auto", flag)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	res, err := dc.ServerResourcesForGroupVersion(configv1.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("detecting OpenShift: %w", err)
	}
	for _, r := range res.APIResources {
		if r.Name == "infrastructures" {
			return true, nil
		}
	}
	return false, nil
}
