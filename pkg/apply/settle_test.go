package apply

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
	st "github.com/knmstate/knmstate/pkg/nmstate/statetest"
)

// settlingNode is a backend with its own checkpoint whose rollback
// settles asynchronously, as NetworkManager's does: for a few reads after
// CheckpointRollback it shows eth0 being re-activated (addresses flushed,
// IPv4 disabled, no routes), then the settled state.
type settlingNode struct {
	mu        sync.Mutex
	settled   *nmstate.State
	transient *nmstate.State
	// reads is how many reads still show transient.
	reads    int
	unsettle int
	executed []string
}

func (n *settlingNode) Show(ctx context.Context) (*nmstate.State, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.reads > 0 {
		n.reads--
		return n.transient.Clone(), nil
	}
	return n.settled.Clone(), nil
}

func (n *settlingNode) Execute(ctx context.Context, p *nmstate.Plan) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, op := range p.Ops {
		n.executed = append(n.executed, op.String())
	}
	return nil
}

func (n *settlingNode) CheckpointCreate(ctx context.Context, timeout time.Duration) (string, error) {
	return "/cp/1", nil
}

func (n *settlingNode) CheckpointRollback(ctx context.Context, id string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.reads = n.unsettle
	return nil
}

func (n *settlingNode) CheckpointDestroy(ctx context.Context, id string) error { return nil }

// TestRollbackRereadsWhileBackendCheckpointSettles: the first reads after
// the backend's own rollback show eth0 without IPv4 (NetworkManager
// re-activating it), which the revert state's route through eth0 cannot
// be merged into. The rollback reads again until the node settles
// instead of failing on the first read, and then has nothing left to do.
func TestRollbackRereadsWhileBackendCheckpointSettles(t *testing.T) {
	defaultVia := func(gw string) nmstate.Route { return st.Route("0.0.0.0/0", "eth0", gw) }
	before := st.State(
		st.Interfaces(st.Ethernet("eth0", st.IPv4("192.0.2.10/24"))),
		st.Routes(defaultVia("192.0.2.1")),
	)
	before.Routes.Running = before.Routes.Config
	desired := st.State(st.Routes(
		st.AbsentRoute(func(r *nmstate.Route) { r.Destination = defaultVia("192.0.2.1").Destination }),
		defaultVia("192.0.2.77"),
	))
	transient := st.State(st.Interfaces(st.Ethernet("eth0", st.IPv4Disabled())))
	transient.Routes = &nmstate.Routes{}

	o := Options{VerifyRetries: 5, VerifyInterval: time.Millisecond}.withDefaults()
	revert, err := o.engine.revert(before, desired)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.engine.merge(revert, transient); err == nil {
		t.Fatal("the revert state merges into the transient state: the test no longer shows the race")
	}
	node := &settlingNode{settled: before, transient: transient, unsettle: 2}
	rec := &Checkpoint{ID: "x", Before: before, Desired: desired, Revert: revert, BackendCheckpoint: "/cp/1"}
	if err := rollback(context.Background(), node, rec, o); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if len(node.executed) != 0 {
		t.Errorf("rollback executed %q on a node that settled to the state before", node.executed)
	}
}
