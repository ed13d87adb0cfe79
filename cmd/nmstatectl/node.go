package main

import (
	"context"
	"fmt"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
)

// nodeAddr says which node a verb acts on: the global flags, or the
// values recorded in a checkpoint.
type nodeAddr struct {
	netns, resolvConf, utsNS string
}

func (g *globalOptions) node() nodeAddr {
	return nodeAddr{netns: g.netns, resolvConf: g.resolvConf, utsNS: g.utsNS}
}

func checkpointNode(rec *apply.Checkpoint) nodeAddr {
	return nodeAddr{netns: rec.NetNS, resolvConf: rec.ResolvConf, utsNS: rec.UTSNS}
}

// openKernel opens the kernel backend for a node.
func openKernel(ctx context.Context, n nodeAddr) (*kernel.Backend, error) {
	b, err := kernel.Open(ctx, kernel.Options{NetNS: n.netns, ResolvConf: n.resolvConf, UTSNS: n.utsNS})
	if err != nil {
		return nil, fmt.Errorf("opening the node: %w", err)
	}
	return b, nil
}

// openNode opens a backend the apply orchestrator can drive.
func openNode(ctx context.Context, n nodeAddr) (apply.Backend, func(), error) {
	kb, err := openKernel(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	return kb, func() { kb.Close() }, nil
}
