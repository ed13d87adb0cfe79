package ovs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/ovsdb"
)

// Kernel is what this backend needs of the kernel backend.
type Kernel interface {
	Show(ctx context.Context) (*nmstate.State, error)
	Execute(ctx context.Context, p *nmstate.Plan) error
}

// Options say how OVS is reached.
type Options struct {
	// Address is the OVSDB socket ("unix:PATH"; "" = ovsdb.DefaultAddress).
	Address string
	// DefaultDatapath is the datapath_type of bridges whose desired state
	// names none ("" = OVS's default, the kernel datapath; "netdev" where
	// the kernel has no openvswitch module).
	DefaultDatapath string
	// ApplyTimeout bounds the wait for ovs-vswitchd to apply a transaction
	// (default 30s).
	ApplyTimeout time.Duration
}

// Backend is a node's kernel plus its OVS database.
type Backend struct {
	kernel Kernel
	opts   Options
	db     *ovsdb.Client
	// dialErr says why there is no database connection: Show then reports
	// the kernel alone, and a plan with OVS operations fails before any
	// change.
	dialErr error
}

// Open connects to the OVS database of the node whose kernel is k. An
// unreachable database is not an error here: the node may have no OVS.
func Open(ctx context.Context, k Kernel, opts Options) *Backend {
	if opts.Address == "" {
		opts.Address = ovsdb.DefaultAddress
	}
	if opts.ApplyTimeout <= 0 {
		opts.ApplyTimeout = 30 * time.Second
	}
	b := &Backend{kernel: k, opts: opts}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b.db, b.dialErr = ovsdb.Dial(dctx, opts.Address)
	return b
}

// Close closes the database connection (not the kernel backend).
func (b *Backend) Close() error {
	if b.db == nil {
		return nil
	}
	return b.db.Close()
}

// Connected reports whether the OVS database is reachable, and if not why.
func (b *Backend) Connected() error { return b.dialErr }

// Show returns the kernel's state with OVS merged in.
func (b *Backend) Show(ctx context.Context) (*nmstate.State, error) {
	s, err := b.kernel.Show(ctx)
	if err != nil || b.db == nil {
		return s, err
	}
	snap, err := read(ctx, b.db)
	if err != nil {
		return nil, err
	}
	overlay(s, snap)
	return s, nil
}

// IsOVSOp reports whether op is one this backend runs in OVSDB.
func IsOVSOp(op nmstate.Op) bool {
	switch op.(type) {
	case nmstate.OVSBridgeSet, nmstate.OVSBridgeDelete, nmstate.OVSGlobalSet:
		return true
	}
	return false
}

// ErrNoOVSDB is the error of a plan with OVS operations on a node whose
// OVS database cannot be reached.
var ErrNoOVSDB = errors.New("the OVS database is not reachable")

// Execute runs p in order: each run of consecutive OVS operations as one
// OVSDB transaction (then waiting until ovs-vswitchd has applied it, so
// the internal interfaces exist for the kernel operations after it), the
// other operations through the kernel backend.
func (b *Backend) Execute(ctx context.Context, p *nmstate.Plan) error {
	if p == nil {
		return nil
	}
	for _, op := range p.Ops {
		if IsOVSOp(op) && b.db == nil {
			// Before the first change: nothing is half done.
			return &nmstate.Error{Kind: nmstate.Dependency,
				Detail: fmt.Sprintf("%s: %v (%v); start Open vSwitch or give its socket with --ovsdb", op, ErrNoOVSDB, b.dialErr)}
		}
	}
	for i := 0; i < len(p.Ops); {
		j := i
		ovsRun := IsOVSOp(p.Ops[i])
		for j < len(p.Ops) && IsOVSOp(p.Ops[j]) == ovsRun {
			j++
		}
		run := &nmstate.Plan{Ops: p.Ops[i:j]}
		var err error
		if ovsRun {
			err = b.transact(ctx, run.Ops)
		} else {
			err = b.kernel.Execute(ctx, run)
		}
		if err != nil {
			return err
		}
		i = j
	}
	return nil
}
