package testenv

import (
	"context"
	"fmt"
	"net"

	"github.com/vishvananda/netns"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// netnsDialer dials TCP connections from inside the network namespace at
// path (nsrun: the socket is created on a locked OS thread switched into
// the namespace, and a socket stays in the namespace it was created in).
// Used for the control plane's own clients when it runs inside a
// namespace (Options.NetNS).
func netnsDialer(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := nsrun.DoPath(path, func() error {
			// FallbackDelay < 0: no racing dials on other goroutines
			// (threads outside the namespace).
			d := net.Dialer{FallbackDelay: -1}
			var err error
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("dial %s from namespace %s: %w", addr, path, err)
		}
		return c, nil
	}
}

// enterNetNS switches the calling (locked) thread into the namespace at
// path and returns a function switching it back; that function reports
// whether the thread is clean again (else it must stay locked).
func enterNetNS(path string) (leave func() bool, err error) {
	orig, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("reading the thread's namespace: %w", err)
	}
	target, err := netns.GetFromPath(path)
	if err != nil {
		orig.Close()
		return nil, fmt.Errorf("opening namespace %s: %w", path, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		ok := netns.Set(orig) == nil
		orig.Close()
		if !ok {
			return nil, fmt.Errorf("entering namespace %s: %w (and could not switch back)", path, err)
		}
		return nil, fmt.Errorf("entering namespace %s: %w", path, err)
	}
	return func() bool {
		defer orig.Close()
		return netns.Set(orig) == nil
	}, nil
}
