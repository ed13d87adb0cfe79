package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// freshClient builds a client with its own transport, so the attempt opens
// a new connection instead of reusing one that outlived the change.
func freshClient(cfg *rest.Config, timeout time.Duration) (*kubernetes.Clientset, func(), error) {
	c := rest.CopyConfig(cfg)
	c.Timeout = timeout
	// client-go shares transports (and their idle connections) between
	// configs, except for configs with their own dialer.
	if c.Dial == nil {
		c.Dial = (&net.Dialer{}).DialContext
	}
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, nil, err
	}
	return cs, hc.CloseIdleConnections, nil
}

// APIServer reads the Namespace "default" through a new connection. What
// it checks is reachability: a client error answered by the server (a
// handler's ServiceAccount may not read namespaces: 403) passes too; no
// answer, or a server error (5xx), fails.
func APIServer(ctx context.Context, cfg *rest.Config) error {
	cs, done, err := freshClient(cfg, attemptDeadline(ctx))
	if err != nil {
		return fmt.Errorf("api server: %w", err)
	}
	defer done()
	_, err = cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	if err == nil || answered(err) {
		return nil
	}
	return fmt.Errorf("api server: %w", err)
}

// answered reports whether err is the API server's own 4xx answer.
func answered(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

// NodeReady reads the Node through a new connection and requires its
// Ready condition to be True.
func NodeReady(ctx context.Context, cfg *rest.Config, node string) error {
	cs, done, err := freshClient(cfg, attemptDeadline(ctx))
	if err != nil {
		return fmt.Errorf("node readiness: %w", err)
	}
	defer done()
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node readiness: %w", err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node readiness: node %s is Ready=%s: %s", node, c.Status, c.Message)
		}
	}
	return errors.New("node readiness: node " + node + " has no Ready condition")
}

func attemptDeadline(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 0
}
