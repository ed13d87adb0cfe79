package conformance

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/knmstate/knmstate/pkg/apply"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// reaches says whether a TCP connection from the node to the peer's
// listener gets through the guarded port.
func reaches(t *testing.T, n *node, addr string) bool {
	t.Helper()
	ok := false
	err := n.ns.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			ok = true
			c.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// listenInPeer serves TCP on the peer's side of the guarded port.
func listenInPeer(t *testing.T, n *node, addr string) {
	t.Helper()
	var l net.Listener
	err := n.peer.Do(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// applyState applies yaml in n and checks it against a fresh show.
func applyState(ctx context.Context, t *testing.T, n *node, yaml string) {
	t.Helper()
	desired, err := nmstate.Decode([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Apply(ctx, n.backend, desired.Clone(), n.options()); err != nil {
		t.Fatalf("apply: %v", err)
	}
	cur, err := n.backend.Show(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := nmstate.Verify(desired, cur); err != nil {
		t.Errorf("verify against a fresh show: %v", err)
	}
}
