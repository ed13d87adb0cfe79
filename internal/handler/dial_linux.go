package handler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// NetNSDialer opens TCP connections from inside a network namespace, as a
// hostNetwork pod on that node would: the socket is created on an OS
// thread switched into the namespace (a socket belongs to the namespace
// it was created in, whatever thread uses it later) and the thread is
// switched back before it is released. Host names are resolved with the
// Go resolver reading the process's resolv.conf, its DNS queries also
// sent from inside the namespace.
type NetNSDialer struct {
	// Path is the namespace (a name under /run/netns or a path).
	Path string
	// Timeout bounds one connection attempt (default 30s).
	Timeout time.Duration
	// KeepAlive is the TCP keep-alive period (default 30s).
	KeepAlive time.Duration
}

// DialContext has net.Dialer's signature, for rest.Config.Dial.
func (d *NetNSDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dialing %s from network namespace %s: %w", address, d.Path, err)
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		// The lookup goroutines of the resolver run on arbitrary threads,
		// so its connections go through dialOne as well.
		res := &net.Resolver{PreferGo: true, Dial: d.dialOne}
		if addrs, err = res.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, fmt.Errorf("dialing %s from network namespace %s: %w", address, d.Path, err)
		}
	}
	var errs []error
	for _, a := range addrs {
		c, err := d.dialOne(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("dialing %s from network namespace %s: %w", address, d.Path, errors.Join(errs...))
}

// dialOne dials one literal address from inside the namespace.
// FallbackDelay < 0 keeps the standard dialer from racing address
// families on other goroutines (other threads, outside the namespace).
func (d *NetNSDialer) dialOne(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	err := nsrun.DoPath(d.Path, func() error {
		dl := net.Dialer{Timeout: or(d.Timeout, 30*time.Second), KeepAlive: or(d.KeepAlive, 30*time.Second), FallbackDelay: -1}
		var err error
		c, err = dl.DialContext(ctx, network, address)
		return err
	})
	return c, err
}

func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
