package nmstatectl

import (
	"context"
	"fmt"
	"github.com/knmstate/knmstate/pkg/backend/ovs"
	"github.com/knmstate/knmstate/pkg/ovsdb"
	"io"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
)

// nodeAddr says which node a verb acts on: the global flags, or the
// values recorded in a checkpoint.
type nodeAddr struct {
	netns, resolvConf, utsNS string
	// ovsdb is the Open vSwitch database socket, ovsDatapath the datapath
	// of new bridges.
	ovsdb, ovsDatapath string
}

func (g *globalOptions) node() nodeAddr {
	return nodeAddr{netns: g.netns, resolvConf: g.resolvConf, utsNS: g.utsNS, ovsdb: g.ovsdb, ovsDatapath: g.ovsDatapath}
}

func checkpointNode(rec *apply.Checkpoint) nodeAddr {
	return nodeAddr{netns: rec.NetNS, resolvConf: rec.ResolvConf, utsNS: rec.UTSNS, ovsdb: rec.OVSDB}
}

// openKernel opens the kernel backend for a node.
func openKernel(ctx context.Context, n nodeAddr) (*kernel.Backend, error) {
	b, err := kernel.Open(ctx, kernel.Options{NetNS: n.netns, ResolvConf: n.resolvConf, UTSNS: n.utsNS})
	if err != nil {
		return nil, fmt.Errorf("opening the node: %w", err)
	}
	return b, nil
}

// runtimeNode is a node backend with the node runtime following every plan
// it executes (leases for dhcp/autoconf, see runtimeFollower).
type runtimeNode interface {
	apply.Backend
	OnCheckpoint(context.Context, *apply.Checkpoint) error
}

// openNode opens a backend the apply orchestrator can drive, with the node
// runtime of stateDir following it, so one-off applies and rollbacks start
// or stop DHCP/autoconf like the service does. warn receives the runtime's
// warnings (e.g. that nothing renews a one-off lease).
func openNode(ctx context.Context, n nodeAddr, stateDir string, warn io.Writer) (runtimeNode, func(), error) {
	kb, err := openKernel(ctx, n)
	if err != nil {
		return nil, nil, err
	}
	ob := openOVS(ctx, kb, n)
	ab, closeRT, err := runtimeFollower(kb, ob, n, stateDir, warn)
	if err != nil {
		ob.Close()
		kb.Close()
		return nil, nil, err
	}
	return ab, func() { closeRT(); ob.Close(); kb.Close() }, nil
}

// openOVS puts the node's Open vSwitch database next to its kernel; a node
// without a reachable OVSDB shows no OVS, and refuses OVS states before
// changing anything.
func openOVS(ctx context.Context, kb *kernel.Backend, n nodeAddr) *ovs.Backend {
	addr := n.ovsdb
	if addr == "" {
		addr = ovsdb.DefaultAddress
	}
	return ovs.Open(ctx, kb, ovs.Options{Address: addr, DefaultDatapath: n.ovsDatapath})
}
