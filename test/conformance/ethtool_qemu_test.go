//go:build qemu

package conformance

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/knmstate/knmstate/pkg/apply"
)

// TestEthtoolRingCoalescePauseOnNetdevsim: netdevsim implements ring
// sizes, interrupt coalescing and pause frames (veths have none of them);
// the three sections apply, verify, reach the fixed point, show as set in
// Debian's ethtool, and roll back to the values before.
func TestEthtoolRingCoalescePauseOnNetdevsim(t *testing.T) {
	ctx := context.Background()
	n := newNodeWith(t, NICNetdevsim)
	before := ethtoolOf(ctx, t, n, "eth1")
	if before.Ring == nil || before.Coalesce == nil || before.Pause == nil {
		t.Fatalf("netdevsim's eth1 lacks a ring, coalesce or pause section: %+v", before)
	}
	if before.Ring.RXMax == nil || *before.Ring.RXMax < 512 {
		t.Fatalf("netdevsim's rx-max is %v, want at least 512", before.Ring.RXMax)
	}
	applyEthtool(ctx, t, n, `interfaces:
- name: eth1
  type: ethernet
  state: up
  ethtool:
    ring: {rx: 512, tx: 256}
    coalesce: {rx-usecs: 30, tx-frames: 7, adaptive-rx: true}
    pause: {rx: true, tx: false, autoneg: false}
`)
	// The ioctl interface (the guest has no ethtool program) as the
	// independent reader.
	for _, c := range []struct {
		what string
		cmd  uint32
		// words of the ioctl's struct after cmd: index → value
		want map[int]uint32
	}{
		// ethtool_ringparam: rx_pending is word 5, tx_pending word 8.
		{"ring", 0x10, map[int]uint32{5: 512, 8: 256}},
		// ethtool_coalesce: rx_coalesce_usecs 1, tx_max_coalesced_frames 6,
		// use_adaptive_rx_coalesce 10.
		{"coalesce", 0x0e, map[int]uint32{1: 30, 6: 7, 10: 1}},
		// ethtool_pauseparam: autoneg 1, rx_pause 2, tx_pause 3.
		{"pause", 0x12, map[int]uint32{1: 0, 2: 1, 3: 0}},
	} {
		words := ethtoolIoctl(t, n, "eth1", c.cmd, 24)
		for i, w := range c.want {
			if words[i] != w {
				t.Errorf("SIOCETHTOOL %s: word %d is %d, want %d", c.what, i, words[i], w)
			}
		}
	}
	if _, err := apply.Rollback(ctx, n.backend, n.stateDir); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	after := ethtoolOf(ctx, t, n, "eth1")
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("after the rollback eth1's ethtool section differs (-before +after):\n%s", diff)
	}
}
