package apply

import (
	"context"
	"fmt"
	"sync"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// fakeNode is a Backend for the orchestrator's unit tests: a state value
// that Execute edits with LinkCreate (add or replace an interface) and
// LinkDelete, failing on purpose at a chosen operation. The kernel tests
// in this package use the real backend.
type fakeNode struct {
	mu    sync.Mutex
	state *nmstate.State
	// failAt makes the failAt-th operation executed (1-based, counted
	// over all Execute calls) fail; 0 = never.
	failAt int
	ops    int
	// mangle edits each interface as it is created (a kernel that does
	// not do what it was asked, for verification failures).
	mangle func(*nmstate.Interface)
	// beforeExecute runs at the start of every Execute.
	beforeExecute func()
	executed      []string
}

func (n *fakeNode) Show(ctx context.Context) (*nmstate.State, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.Clone(), nil
}

func (n *fakeNode) Execute(ctx context.Context, p *nmstate.Plan) error {
	if n.beforeExecute != nil {
		n.beforeExecute()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, op := range p.Ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		n.ops++
		if n.ops == n.failAt {
			return fmt.Errorf("%s: injected failure", op)
		}
		n.executed = append(n.executed, op.String())
		switch o := op.(type) {
		case nmstate.LinkCreate:
			ifc := *o.Iface.Clone()
			if n.mangle != nil {
				n.mangle(&ifc)
			}
			n.remove(ifc.Name)
			n.state.Interfaces = append(n.state.Interfaces, ifc)
		case nmstate.LinkDelete:
			n.remove(o.Name)
		default:
			return fmt.Errorf("fake node: unexpected op %T", op)
		}
	}
	return nil
}

func (n *fakeNode) remove(name string) {
	out := n.state.Interfaces[:0]
	for _, i := range n.state.Interfaces {
		if i.Name != name {
			out = append(out, i)
		}
	}
	n.state.Interfaces = out
}

// fakeEngine is a tiny state model matching fakeNode: desired interfaces
// replace current ones whole, absent ones are deleted, and the revert of a
// desired interface is its pre-apply value (or absent if it was new).
// Validation and verification are pkg/nmstate's.
func fakeEngine() *engine {
	e := nmstateEngine()
	e.merge = func(desired, current *nmstate.State) (*nmstate.Merged, error) {
		return &nmstate.Merged{Desired: desired.Clone(), Current: current, Interfaces: desired.Clone().Interfaces}, nil
	}
	e.plan = func(m *nmstate.Merged) (*nmstate.Plan, error) {
		p := &nmstate.Plan{}
		for _, i := range m.Interfaces {
			if i.State == nmstate.StateAbsent || i.State == nmstate.StateDown {
				p.Ops = append(p.Ops, nmstate.LinkDelete{Name: i.Name, Type: i.Type})
				continue
			}
			p.Ops = append(p.Ops, nmstate.LinkCreate{Iface: i})
		}
		return p, nil
	}
	e.revert = func(before, desired *nmstate.State) (*nmstate.State, error) {
		r := &nmstate.State{}
		for _, d := range desired.Interfaces {
			if b := before.FindTyped(d.Name, ""); b != nil {
				r.Interfaces = append(r.Interfaces, *b.Clone())
				continue
			}
			r.Interfaces = append(r.Interfaces, nmstate.Interface{Name: d.Name, Type: d.Type, State: nmstate.StateAbsent})
		}
		return r, nil
	}
	return e
}
