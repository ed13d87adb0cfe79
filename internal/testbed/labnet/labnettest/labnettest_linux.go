// Package labnettest gives tests a lab switch (dnsmasq: DHCPv4, DHCPv6,
// router advertisements, DNS) with one node on it, removed at cleanup.
package labnettest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
)

// New starts a switch with opts and one node "node1" with the NICs nics
// (default eth0). Removal is registered before anything exists, and
// dnsmasq's log is printed when the test failed.
func New(tb testing.TB, opts labnet.Options, nics ...string) (*labnet.Switch, *labnet.Node) {
	tb.Helper()
	var sw *labnet.Switch
	tb.Cleanup(func() {
		if sw == nil {
			return
		}
		if tb.Failed() {
			if b, err := os.ReadFile(sw.LogPath()); err == nil {
				tb.Logf("dnsmasq log:\n%s", b)
			}
		}
		if err := sw.Close(); err != nil {
			tb.Errorf("closing lab switch: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if sw, err = labnet.NewSwitch(ctx, opts); err != nil {
		tb.Fatalf("lab switch: %v", err)
	}
	if len(nics) == 0 {
		nics = []string{"eth0"}
	}
	node, err := sw.AddNode("node1", nics...)
	if err != nil {
		tb.Fatalf("lab node: %v", err)
	}
	return sw, node
}
