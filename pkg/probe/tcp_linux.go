package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// TCP opens (and closes) a TCP connection to address, host:port, from
// inside the network namespace netns: where no API client is at hand (a
// node's first boot, before kubelet has credentials), reaching the API
// server's port is the check. A host name is looked up through servers
// from inside the namespace (the process's own resolv.conf is not the
// node's).
func TCP(ctx context.Context, netns string, servers []netip.Addr, address string) error {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("tcp %s: %w", address, err)
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		if len(servers) == 0 {
			return fmt.Errorf("tcp %s: %w: no name servers to look %s up", address, errNoTarget, host)
		}
		var errs []error
		for _, s := range servers {
			a, err := resolver(netns, s).LookupNetIP(ctx, "ip", strings.TrimSuffix(host, ".")+".")
			if err == nil && len(a) > 0 {
				addrs = a
				break
			}
			errs = append(errs, fmt.Errorf("server %s: %w", s, err))
		}
		if len(addrs) == 0 {
			return fmt.Errorf("tcp %s: looking up %s: %w", address, host, errors.Join(errs...))
		}
	}
	var errs []error
	for _, a := range addrs {
		err := nsrun.DoPath(netns, func() error {
			// FallbackDelay < 0: no racing dial on another thread, which
			// would be outside the namespace.
			d := net.Dialer{FallbackDelay: -1}
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a.Unmap().String(), port))
			if err != nil {
				return err
			}
			return c.Close()
		})
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("tcp %s: %w", address, errors.Join(errs...))
}
