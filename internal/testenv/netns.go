package testenv

import (
	"context"
	"fmt"
	"net"
	"runtime"

	"github.com/vishvananda/netns"
)

// netnsDialer dials TCP connections from inside the network namespace at
// path: the socket is created on a locked OS thread switched into the
// namespace (a socket stays in the namespace it was created in), and the
// thread is switched back before it is released. Used for the control
// plane's own clients when it runs inside a namespace (Options.NetNS).
func netnsDialer(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		done := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			c, back, err := dialIn(ctx, path, network, addr)
			if back {
				runtime.UnlockOSThread()
			} // else: the thread dies with the goroutine, still locked
			done <- result{c, err}
		}()
		r := <-done
		return r.c, r.err
	}
}

// dialIn runs on a locked thread; back reports that the thread is in its
// original namespace again.
func dialIn(ctx context.Context, path, network, addr string) (_ net.Conn, back bool, _ error) {
	orig, err := netns.Get()
	if err != nil {
		return nil, false, fmt.Errorf("dial %s: reading the thread's namespace: %w", addr, err)
	}
	defer orig.Close()
	target, err := netns.GetFromPath(path)
	if err != nil {
		return nil, true, fmt.Errorf("dial %s: opening namespace %s: %w", addr, path, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		return nil, netns.Set(orig) == nil, fmt.Errorf("dial %s: entering namespace %s: %w", addr, path, err)
	}
	// FallbackDelay < 0: no racing dials on other goroutines (threads).
	d := net.Dialer{FallbackDelay: -1}
	c, derr := d.DialContext(ctx, network, addr)
	if err := netns.Set(orig); err != nil {
		if c != nil {
			c.Close()
		}
		return nil, false, fmt.Errorf("dial %s: leaving namespace %s: %w", addr, path, err)
	}
	return c, true, derr
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
