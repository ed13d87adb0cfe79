package lab

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// The default (process) mode: Node objects the lab keeps Ready, and the
// wait for every node's NodeNetworkState.

// createNodes creates the nodes' Node objects and keeps them Ready (the
// teardown stops the heartbeat).
func (s *supervisor) createNodes(ctx context.Context, kube kubernetes.Interface, nodes []NodeState, teardown *[]func()) error {
	t := time.Now()
	for _, n := range nodes {
		if err := createNode(ctx, kube, n); err != nil {
			return err
		}
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		keepReady(ctx, kube, nodes, s.opts.Heartbeat, func(msg string, args ...any) { s.log.Error(msg, args...) })
		close(done)
	}()
	*teardown = append(*teardown, func() { stop(); <-done })
	s.step("node objects", t)
	return nil
}

// buildProcesses is the default mode: Node objects kept Ready by the
// lab, a handler process per node on this machine's side, the controller
// in the switch namespace.
func (s *supervisor) buildProcesses(ctx context.Context, env *testenv.Env, sw *labnet.Switch, kube kubernetes.Interface, nodes []NodeState, teardown *[]func()) error {
	if err := s.createNodes(ctx, kube, nodes, teardown); err != nil {
		return err
	}
	if s.opts.Backend == BackendNetworkManager {
		t := time.Now()
		if err := s.startNetworkManagers(ctx, sw, nodes, teardown); err != nil {
			return err
		}
		s.step("NetworkManager per node", t)
	}

	// Handlers (one per node) and the controller.
	t := time.Now()
	if err := s.startComponents(env, sw, nodes); err != nil {
		return err
	}
	s.publish()
	handlers := s.available("handler")
	if handlers {
		dyn, err := dynamic.NewForConfig(env.Config)
		if err != nil {
			return err
		}
		if err := waitNNS(ctx, dyn, nodes, s.scale(2*time.Minute)); err != nil {
			return err
		}
		s.step("handlers: every node has a NodeNetworkState", t)
	}
	return nil
}

// waitNNS waits until every node has a NodeNetworkState with a state.
func waitNNS(ctx context.Context, dyn dynamic.Interface, nodes []NodeState, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		missing, err := missingNNS(ctx, dyn, nodes)
		if err == nil && len(missing) == 0 {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("no NodeNetworkState yet for %s", strings.Join(missing, ", "))
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the handlers: %w", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
