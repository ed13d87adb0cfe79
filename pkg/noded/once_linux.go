package noded

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/noded/dhcp"
)

// AcquireOnce is the path for `nmstatectl apply` when no runtime runs: for
// every DHCP client the applied state asks for, acquire one lease, install
// it with its lifetime (address, routes, DNS as the auto-* flags say), and
// stop without releasing. IPv6 autoconf is switched on through sysctls
// and keeps working by itself. The specs and leases are recorded, so a
// runtime started later renews the leases; until then each runs out at
// the end of its lifetime, which the caller should warn about.
//
// It returns the leases it installed, and an error naming the interfaces
// that got none before ctx ended (give ctx a deadline).
func AcquireOnce(ctx context.Context, opts Options, applied *nmstate.State) ([]dhcp.Lease, error) {
	// Holding the runtime lock keeps a runtime from starting meanwhile.
	unlock, err := lockRuntime(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("%w: submit the state to it instead", err)
	}
	defer unlock()
	r, err := New(opts)
	if err != nil {
		return nil, err
	}
	r.oneShot = true
	defer r.shutdown()

	r.mu.Lock()
	err = r.reconcileLocked(ctx, UpdateSpecs(r.rec.Specs, applied), false)
	pending := map[Key]bool{}
	for k := range r.clients {
		pending[k] = true
	}
	r.mu.Unlock()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}

	var leases []dhcp.Lease
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			var missing []string
			for _, k := range sortedKeys(pending) {
				missing = append(missing, fmt.Sprintf("%s (dhcpv%d)", k.Interface, k.Family))
			}
			errs = append(errs, fmt.Errorf("no lease for %v: %w", missing, ctx.Err()))
			return leases, errors.Join(errs...)
		case <-r.wake:
		}
		for _, q := range r.dequeue() {
			r.handle(ctx, q)
			if q.ev.Kind == dhcp.LeaseBound && pending[q.key] {
				delete(pending, q.key)
				leases = append(leases, q.ev.Lease)
			}
		}
	}
	slices.SortFunc(leases, func(a, b dhcp.Lease) int { return a.Address.Addr().Compare(b.Address.Addr()) })
	return leases, errors.Join(errs...)
}

// DetachedFollow is the FollowFunc for a process that does not run the
// runtime itself (`nmstatectl apply`): when a runtime runs for
// opts.StateDir the applied state is submitted to it, and the runtime's
// acting on it awaited (up to timeout; a warning after); otherwise the
// leases are acquired once (each exchange bounded by timeout) and warn
// receives a message saying that renewal needs the runtime.
func DetachedFollow(opts Options, timeout time.Duration, warn func(string)) FollowFunc {
	return func(ctx context.Context, applied *nmstate.State) error {
		running, err := Running(opts.StateDir)
		if err != nil {
			return err
		}
		if running {
			n, err := Submit(opts.StateDir, applied)
			if err != nil {
				return err
			}
			wctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if err := WaitActed(wctx, opts.StateDir, n); err != nil && warn != nil {
				// The kernel side is applied; the runtime catches up when
				// it can.
				warn(err.Error())
			}
			return nil
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		leases, err := AcquireOnce(actx, opts, applied)
		for _, l := range leases {
			if warn != nil {
				warn(fmt.Sprintf("%s: dhcpv%d lease %s installed for %s; no node runtime runs to renew it "+
					"(start `nmstatectl service`), so it ends at %s",
					l.Interface, l.Family, l.Address, l.Lifetime, l.ExpiresAt().UTC().Format(time.RFC3339)))
			}
		}
		return err
	}
}
