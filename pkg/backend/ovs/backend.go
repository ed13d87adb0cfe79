package ovs

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	// Address is the OVSDB socket ("unix:PATH"; "" = ovsdb.DefaultAddress;
	// NoAddress = the node has no OVS: nothing is dialled, OVS states are
	// refused).
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

	mu sync.Mutex
	db *ovsdb.Client // nil when there is no live connection
	// dialErr says why there is no database connection: Show then reports
	// the kernel alone, and a plan with OVS operations fails before any
	// change.
	dialErr error
}

// NoAddress as Options.Address says the node has no Open vSwitch.
const NoAddress = "none"

// errNotConfigured is the dial error of NoAddress.
var errNotConfigured = errors.New("no Open vSwitch database is configured for this node")

// dialTimeout bounds one connection attempt to the database.
const dialTimeout = 5 * time.Second

// Open connects to the OVS database of the node whose kernel is k. An
// unreachable database is not an error here: the node may have no OVS, or
// get one later (each Show and Execute tries again while there is none, so
// a long-running handler picks up an OVS that starts or restarts after it).
func Open(ctx context.Context, k Kernel, opts Options) *Backend {
	if opts.Address == "" {
		opts.Address = ovsdb.DefaultAddress
	}
	if opts.ApplyTimeout <= 0 {
		opts.ApplyTimeout = 30 * time.Second
	}
	b := &Backend{kernel: k, opts: opts}
	_, _ = b.client(ctx)
	return b
}

// client returns the live database connection, dialling again when there
// is none or the last one broke.
func (b *Backend) client(ctx context.Context) (*ovsdb.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.db != nil {
		select {
		case <-b.db.Done():
			_ = b.db.Close()
			b.db = nil
		default:
			return b.db, nil
		}
	}
	if b.opts.Address == NoAddress {
		b.dialErr = errNotConfigured
		return nil, errNotConfigured
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	db, err := ovsdb.Dial(dctx, b.opts.Address)
	if err != nil {
		b.dialErr = err
		return nil, err
	}
	b.db, b.dialErr = db, nil
	return db, nil
}

// Address is the OVS database socket this backend uses.
func (b *Backend) Address() string { return b.opts.Address }

// Close closes the database connection (not the kernel backend).
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.db == nil {
		return nil
	}
	err := b.db.Close()
	b.db = nil
	return err
}

// Connected reports whether the OVS database is reachable (connecting if
// it was not), and if not why.
func (b *Backend) Connected() error {
	_, err := b.client(context.Background())
	return err
}

// Show returns the kernel's state with OVS merged in; without a reachable
// OVS database, the kernel's alone.
func (b *Backend) Show(ctx context.Context) (*nmstate.State, error) {
	s, err := b.kernel.Show(ctx)
	if err != nil {
		return s, err
	}
	db, dialErr := b.client(ctx)
	if dialErr != nil {
		return s, nil
	}
	snap, err := read(ctx, db)
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
	var db *ovsdb.Client
	for _, op := range p.Ops {
		if !IsOVSOp(op) {
			continue
		}
		c, err := b.client(ctx)
		if err != nil {
			// Before the first change: nothing is half done.
			return &nmstate.Error{Kind: nmstate.Dependency,
				Detail: fmt.Sprintf("%s: %v at %s (%v); start Open vSwitch or give its socket with --ovsdb", op, ErrNoOVSDB, b.opts.Address, err)}
		}
		db = c
		break
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
			err = b.transact(ctx, db, run.Ops)
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
