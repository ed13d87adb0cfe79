package nm

import (
	"context"
	"fmt"
	"time"
)

// deactivateFirst takes down the active connections of pp.DeactivateFirst
// and waits until NetworkManager has finished with each device (a virtual
// device it created is removed then), so that the activation after the
// save creates the link with its new settings.
func (b *Backend) deactivateFirst(ctx context.Context, pp *ProfilePlan, devs map[string]*device) error {
	var waiting []string
	for _, name := range pp.DeactivateFirst {
		d := devs[name]
		if d == nil || d.active == "" || d.active == "/" {
			continue
		}
		if err := b.c.deactivate(ctx, d.active); err != nil {
			return fmt.Errorf("deactivating %s before changing what NetworkManager cannot change live: %w", name, err)
		}
		waiting = append(waiting, name)
	}
	if len(waiting) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.ActivationTimeout)
	defer cancel()
	for {
		now, err := b.c.devices(ctx)
		if err != nil {
			return err
		}
		busy := ""
		for _, name := range waiting {
			if d := now[name]; d != nil && (d.active != "" && d.active != "/" || d.state == devDeactivating) {
				busy = name
			}
		}
		if busy == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deactivating %s: %w", busy, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
