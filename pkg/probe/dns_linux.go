package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/knmstate/knmstate/pkg/nsrun"
)

// DefaultDNSHost is upstream's default probe name: an NS lookup of the
// root zone servers' domain.
const DefaultDNSHost = "root-servers.net"

// Resolve looks host up through each server (port 53) from inside the
// network namespace netns and succeeds when any server answers: an NS
// lookup for DefaultDNSHost, an address lookup otherwise (upstream's
// rule). The servers are asked at the same time, so a dead first server
// does not delay a working second one. The name is looked up as fully
// qualified, so no search domain of the process's resolv.conf is tried.
func Resolve(ctx context.Context, netns string, servers []netip.Addr, host string) error {
	if len(servers) == 0 {
		return fmt.Errorf("dns: %w: no name servers", errNoTarget)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() {
			if err := lookup(ctx, netns, s, host); err != nil {
				errc <- fmt.Errorf("server %s: %w", s, err)
				return
			}
			errc <- nil
		}()
	}
	var errs []error
	answered := true
	for range servers {
		err := <-errc
		if err == nil {
			return nil // cancel stops the others
		}
		errs = append(errs, err)
		var de *net.DNSError
		answered = answered && errors.As(err, &de) && serverAnswered(de)
	}
	err := fmt.Errorf("dns lookup of %s: %w", host, errors.Join(errs...))
	if answered {
		// Every server answered no (no such name, refused): asking again
		// in a second will not change that.
		err = fmt.Errorf("%w: %w", errAnswered, err)
	}
	return err
}

// serverAnswered tells a DNS server's answer (no such name, refused or
// failed) from no answer: a timeout, or a query that never left (the
// resolver reports "connect: network is unreachable" as a DNSError that
// is neither a timeout nor temporary, as it does right after a policy
// moved the node's address to a link whose DHCP has not finished).
func serverAnswered(de *net.DNSError) bool {
	return de.IsNotFound || de.Err == "server misbehaving"
}

// lookup asks one server.
func lookup(ctx context.Context, netns string, server netip.Addr, host string) error {
	fqdn := strings.TrimSuffix(host, ".") + "."
	r := resolver(netns, server)
	var err error
	if strings.TrimSuffix(host, ".") == DefaultDNSHost {
		var ns []*net.NS
		ns, err = r.LookupNS(ctx, fqdn)
		if err == nil && len(ns) == 0 {
			err = errors.New("empty answer")
		}
	} else {
		var addrs []string
		addrs, err = r.LookupHost(ctx, fqdn)
		if err == nil && len(addrs) == 0 {
			err = errors.New("empty answer")
		}
	}
	// The resolver names the server of the process's resolv.conf it meant
	// to ask; the query went to server.
	var de *net.DNSError
	if errors.As(err, &de) {
		de.Server = net.JoinHostPort(server.String(), "53")
	}
	return err
}

// resolver is a Go resolver whose queries go to server from inside netns.
func resolver(netns string, server netip.Addr) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var c net.Conn
		err := nsrun.DoPath(netns, func() error {
			s := server
			// A link-local server's zone names an interface of the node:
			// use its index, resolved here.
			if z := s.Zone(); z != "" {
				if _, err := strconv.Atoi(z); err != nil {
					ifi, err := net.InterfaceByName(z)
					if err != nil {
						return fmt.Errorf("zone %s: %w", z, err)
					}
					s = s.WithZone(strconv.Itoa(ifi.Index))
				}
			}
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, network, net.JoinHostPort(s.String(), "53"))
			return err
		})
		return c, err
	}}
}
