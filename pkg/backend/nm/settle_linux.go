package nm

import (
	"context"
	"time"
)

// settleTimeout bounds settle: past it the touch-up runs on what there
// is (it plans against a fresh read and repairs what is still missing).
const settleTimeout = 10 * time.Second

// settle waits, bounded, until NetworkManager has finished what it was
// asked beyond what judgeActivation waits for: ports activated (attached
// to their controller, which only then takes the port's queue-id or a
// primary naming it) and controllers' static addresses committed (a
// controller counts as done while it still waits for ports). The kernel
// touch-up that follows would otherwise race NetworkManager and do part
// of its work, notably on slow machines.
func (b *Backend) settle(ctx context.Context, pp *ProfilePlan) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		devs, err := b.c.devices(ctx)
		if err != nil {
			return
		}
		done := true
		for _, p := range pp.Profiles {
			d := devs[p.Name]
			if !p.Up || d == nil {
				continue
			}
			if d.active == "" || d.active == "/" {
				// Between two activations (a port re-activated with
				// its controller): not there yet.
				done = false
				continue
			}
			a, err := b.c.activation(d.active)
			if err != nil || a.conn == acActivated {
				continue
			}
			if isPortProfile(p.Settings) {
				done = false
				continue
			}
			a.flags &^= flagIsController
			if judgeActivation(a, profileMayPend(p.Settings, "ipv4"), profileMayPend(p.Settings, "ipv6")) == activationPending {
				done = false
			}
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
