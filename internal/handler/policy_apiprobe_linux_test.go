package handler

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/pkg/probe"
)

// The API probes against the real API server (pkg/probe has no control
// plane of its own).
func TestAPIProbes(t *testing.T) {
	c := polClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	mk := func(name string, ready corev1.ConditionStatus) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		if ready != "" {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
			if err := c.Status().Update(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("probe-ready", corev1.ConditionTrue)
	mk("probe-notready", corev1.ConditionFalse)
	mk("probe-nostatus", "")

	if err := probe.APIServer(ctx, env.Config); err != nil {
		t.Errorf("APIServer as admin: %v", err)
	}
	nobody, err := env.UserConfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.APIServer(ctx, nobody); err != nil {
		t.Errorf("APIServer answered 403, want reachable: %v", err)
	}
	dead := rest.CopyConfig(env.Config)
	dead.Host = "https://127.0.0.1:1"
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	if err := probe.APIServer(actx, dead); err == nil {
		t.Error("APIServer passed with nothing listening")
	}
	for _, tt := range []struct {
		node string
		ok   bool
	}{{"probe-ready", true}, {"probe-notready", false}, {"probe-nostatus", false}, {"probe-missing", false}} {
		err := probe.NodeReady(ctx, env.Config, tt.node)
		if (err == nil) != tt.ok {
			t.Errorf("NodeReady(%s) = %v, want ok=%v", tt.node, err, tt.ok)
		}
	}
	if err := probe.NodeReady(ctx, nobody, "probe-ready"); err == nil {
		t.Error("NodeReady passed without permission to read the node")
	}
}
