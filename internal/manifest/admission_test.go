package manifest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/knmstate/knmstate/api/v1beta1"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	os.Exit(testenv.RunMain(m, &env))
}

// handlerAs is a client acting as the handler's ServiceAccount with a
// token bound to a pod on node (impersonated: the API server fills the
// user's extra information as a pod-bound token's would); node "" is a
// token without a node.
func handlerAs(t *testing.T, scheme *runtime.Scheme, node string) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: Params{}.ServiceAccountUser(HandlerName),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + DefaultNamespace, "system:authenticated"},
	}
	if node != "" {
		cfg.Impersonate.Extra = map[string][]string{"authentication.kubernetes.io/node-name": {node}}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNodeScope: a handler identity writes its own node's NodeNetworkState
// and enactments and nothing of another node (the admission policy as
// deploy/admission/node-scope.yaml installs it).
func TestNodeScope(t *testing.T) {
	ctx := context.Background()
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	objs := append([]client.Object{Namespace(Params{})}, HandlerRBAC(Params{})...)
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"node01", "node02"} {
		if err := admin.Create(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	own, other, unbound := handlerAs(t, scheme, "node01"), handlerAs(t, scheme, "node02"), handlerAs(t, scheme, "")
	patch := func(c client.Client, nns string) error {
		return c.Patch(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: nns}}, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"nmstate.io/force-nns-refresh":"`+time.Now().Format("150405.000000000")+`"}}}`)))
	}
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: HandlerLockNamespace}}
	}
	enactment := func(name, node string) *v1beta1.NodeNetworkConfigurationEnactment {
		return &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"nmstate.io/node": node, "nmstate.io/policy": "p"}}}
	}
	// The policy starts acting within seconds of its creation.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := patch(own, "node02")
		if err != nil && strings.Contains(err.Error(), "may not write") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node scope policy never denied node01's handler writing node02's state (last: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, tc := range []struct {
		name    string
		do      func() error
		allowed bool
		want    string
	}{
		{"own state", func() error { return patch(own, "node01") }, true, ""},
		{"other node's state", func() error { return patch(own, "node02") }, false, "the knmstate handler of node node01 may not write nodenetworkstates node02 of node node02"},
		{"the other node itself", func() error { return patch(other, "node02") }, true, ""},
		{"token without a node", func() error { return patch(unbound, "node01") }, false, "must use a token bound to its pod"},
		{"own enactment", func() error { return own.Create(ctx, enactment("node01.p", "node01")) }, true, ""},
		{"other node's enactment", func() error { return own.Create(ctx, enactment("node02.p", "node02")) }, false, "may not write nodenetworkconfigurationenactments node02.p of node node02"},
		{"relabel own enactment to another node", func() error {
			return own.Patch(ctx, enactment("node01.p", ""), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"nmstate.io/node":"node02"}}}`)))
		}, false, "may not write"},
		// RBAC already denies deleting a state.
		{"delete other node's state", func() error {
			return own.Delete(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: "node02"}})
		}, false, "forbidden"},
		{"delete own enactment", func() error { return own.Delete(ctx, enactment("node01.p", "node01")) }, true, ""},
		// The node locks live beside the kubelets' heartbeats.
		{"own node lock", func() error { return own.Create(ctx, lease(HandlerLockPrefix+"node01")) }, true, ""},
		{"other node's lock", func() error { return own.Create(ctx, lease(HandlerLockPrefix+"node02")) }, false, "may not write leases knmstate-node02 of node node02"},
		{"a kubelet's heartbeat", func() error { return own.Create(ctx, lease("node01")) }, false, "may not write leases node01"},
		{"lock from a token without a node", func() error { return unbound.Create(ctx, lease(HandlerLockPrefix+"node03")) }, false, "must use a token bound to its pod"},
		{"lock in another namespace", func() error {
			l := lease(HandlerLockPrefix + "node01")
			l.Namespace = "default"
			return own.Create(ctx, l)
		}, false, "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			switch {
			case tc.allowed && err != nil:
				t.Errorf("denied: %v", err)
			case !tc.allowed && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a denial containing %q", err, tc.want)
			}
		})
	}
}
