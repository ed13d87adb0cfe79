package dhcp

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"

	"github.com/knmstate/knmstate/internal/testbed/labnet/labnettest"
)

func TestSolicitRoutersReachesTheRouter(t *testing.T) {
	// eth0 is born with router solicitations off, so the kernel sends
	// none and every one the router logs is ours.
	sw, node := labnettest.New(t, labnet.Options{
		NodeSysctls: map[string]string{"net/ipv6/conf/default/router_solicitations": "0"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitLinkLocal(ctx, node.NS.Handle, "eth0"); err != nil {
		t.Fatal(err)
	}
	link, err := node.NS.Netlink.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	want := "RTR-SOLICIT(br0) " + link.Attrs().HardwareAddr.String()
	count := func() int {
		b, err := os.ReadFile(sw.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), want)
	}
	if n := count(); n != 0 {
		t.Fatalf("the router logged %d %q before any was sent", n, want)
	}
	if err := SolicitRouters(node.NS.Handle, "eth0"); err != nil {
		t.Fatalf("SolicitRouters: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for count() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("dnsmasq logged no new %q", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSolicitRoutersUnknownInterface(t *testing.T) {
	_, node := labnettest.New(t, labnet.Options{})
	err := SolicitRouters(node.NS.Handle, "eth9")
	if err == nil || !strings.HasPrefix(err.Error(), "router solicitation on eth9: ") {
		t.Errorf("error %v, want one naming eth9", err)
	}
}
