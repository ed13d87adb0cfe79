package dhcp

import (
	"context"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
)

// waitOperUp polls until ifname is operationally up. Until the kernel's
// link watcher has processed carrier-on (it batches events, up to a
// second), the device transmits through a qdisc that drops everything: a
// DISCOVER sent earlier is lost and costs a retransmission timeout.
// Devices without operational state report "unknown", which counts as up.
func waitOperUp(ctx context.Context, h *netlink.Handle, ifname string) error {
	for {
		l, err := h.LinkByName(ifname)
		if err != nil {
			return fmt.Errorf("finding %s: %w", ifname, err)
		}
		switch l.Attrs().OperState {
		case netlink.OperUp, netlink.OperUnknown:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be up (state %s): %w", ifname, l.Attrs().OperState, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
