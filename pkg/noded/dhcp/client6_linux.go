package dhcp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/dhcpv6/nclient6"
	"github.com/insomniacslk/dhcp/iana"
	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nsrun"
)

// Start6 starts acquiring an IA_NA address on cfg.Interface inside
// cfg.Namespace. The DHCPv6 socket binds to the interface's link-local
// address, which only exists once duplicate address detection finished:
// the client opens the socket on its own goroutine before its first
// exchange (a wait that fails, on a loaded machine or a link without
// carrier yet, is a failed acquisition, retried with backoff). Start6
// itself does not wait, so a caller (the node runtime, inside an apply)
// is never held up, nor failed, by a slow DAD.
func Start6(ctx context.Context, cfg Config) (*Client, error) {
	ex, err := newExchanger6(cfg)
	if err != nil {
		return nil, err
	}
	return start(ctx, cfg, IPv6, ex), nil
}

type exchanger6 struct {
	cfg     Config
	timeout time.Duration
	// client is nil until the first acquisition opened the socket; only
	// the client's goroutine sets it, and Stop reads it after that
	// goroutine ended.
	client *nclient6.Client
	duid   dhcpv6.DUID
	iaid   [4]byte
	mods   []dhcpv6.Modifier
	// server is the DUID of the server holding our binding.
	server dhcpv6.DUID
}

func newExchanger6(cfg Config) (*exchanger6, error) {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	var mac net.HardwareAddr
	err := nsrun.Do(cfg.Namespace, func() error {
		ifi, err := net.InterfaceByName(cfg.Interface)
		if err != nil {
			return err
		}
		mac = ifi.HardwareAddr
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("dhcpv6 client on %s: %w", cfg.Interface, err)
	}
	raw, err := DUID(cfg.DUID, cfg.Interface, mac)
	if err != nil {
		return nil, fmt.Errorf("dhcpv6 client on %s: %w", cfg.Interface, err)
	}
	duid, err := dhcpv6.DUIDFromBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("dhcpv6 client on %s: %w", cfg.Interface, err)
	}
	e := &exchanger6{cfg: cfg, timeout: timeout, duid: duid, iaid: IAID(cfg.Interface)}
	e.mods = []dhcpv6.Modifier{
		dhcpv6.WithClientID(duid),
		dhcpv6.WithIAID(e.iaid),
		dhcpv6.WithRequestedOptions(dhcpv6.OptionDNSRecursiveNameServer, dhcpv6.OptionDomainSearchList),
	}
	if cfg.SendHostname && cfg.Hostname != "" {
		e.mods = append(e.mods, dhcpv6.WithFQDN(0, cfg.Hostname))
	}
	return e, nil
}

// open creates the socket once the interface has a usable link-local
// address (bounded by ctx and waitLinkLocal's own limit).
func (e *exchanger6) open(ctx context.Context) error {
	if e.client != nil {
		return nil
	}
	if err := waitLinkLocal(ctx, e.cfg.Namespace, e.cfg.Interface); err != nil {
		return err
	}
	return nsrun.Do(e.cfg.Namespace, func() error {
		c, err := nclient6.New(e.cfg.Interface, nclient6.WithTimeout(e.timeout), nclient6.WithRetry(4))
		if err != nil {
			return fmt.Errorf("dhcpv6 socket on %s: %w", e.cfg.Interface, err)
		}
		e.client = c
		return nil
	})
}

// waitLinkLocal polls until ifname has a link-local IPv6 address that is
// no longer tentative.
func waitLinkLocal(ctx context.Context, ns NamespaceHandle, ifname string) error {
	links, err := kernel.OpenLinkReader(ns)
	if err != nil {
		return err
	}
	defer links.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		addrs, err := links.Addresses(ifname, 6)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if a.Prefix.Addr().IsLinkLocalUnicast() && !a.Tentative && !a.DADFailed {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for a usable link-local address on %s: %w", ifname, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (e *exchanger6) acquire(ctx context.Context) (Lease, error) {
	if err := e.open(ctx); err != nil {
		return Lease{}, err
	}
	adv, err := e.client.Solicit(ctx, e.mods...)
	if err != nil {
		return Lease{}, fmt.Errorf("soliciting: %w", err)
	}
	reply, err := e.client.Request(ctx, adv, e.mods...)
	if err != nil {
		return Lease{}, fmt.Errorf("requesting: %w", err)
	}
	return e.accept("requesting", reply)
}

// renew asks the server holding the binding (RENEW, RFC 8415 18.2.4).
func (e *exchanger6) renew(ctx context.Context, l Lease) (Lease, error) {
	return e.extend(ctx, "renewing", dhcpv6.MessageTypeRenew, l)
}

// rebind asks any server (REBIND, RFC 8415 18.2.5).
func (e *exchanger6) rebind(ctx context.Context, l Lease) (Lease, error) {
	return e.extend(ctx, "rebinding", dhcpv6.MessageTypeRebind, l)
}

func (e *exchanger6) extend(ctx context.Context, what string, t dhcpv6.MessageType, l Lease) (Lease, error) {
	msg, err := e.message(t, l, t == dhcpv6.MessageTypeRenew)
	if err != nil {
		return Lease{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := e.open(ctx); err != nil {
		return Lease{}, fmt.Errorf("%s: %w", what, err)
	}
	reply, err := e.client.SendAndRead(ctx, nclient6.AllDHCPRelayAgentsAndServers, msg, nclient6.IsMessageType(dhcpv6.MessageTypeReply))
	if err != nil {
		return Lease{}, fmt.Errorf("%s: %w", what, err)
	}
	return e.accept(what, reply)
}

func (e *exchanger6) release(ctx context.Context, l Lease) error {
	if e.client == nil {
		return nil // never opened: nothing was leased
	}
	msg, err := e.message(dhcpv6.MessageTypeRelease, l, true)
	if err != nil {
		return err
	}
	// One try: the server's Reply only confirms; losing it is harmless.
	_, err = e.client.SendAndRead(ctx, nclient6.AllDHCPRelayAgentsAndServers, msg, nclient6.IsMessageType(dhcpv6.MessageTypeReply))
	return err
}

// message builds a Renew, Rebind or Release for the lease's address.
func (e *exchanger6) message(t dhcpv6.MessageType, l Lease, withServer bool) (*dhcpv6.Message, error) {
	msg, err := dhcpv6.NewMessage()
	if err != nil {
		return nil, err
	}
	msg.MessageType = t
	msg.AddOption(dhcpv6.OptClientID(e.duid))
	if withServer {
		if e.server == nil {
			return nil, fmt.Errorf("no server identifier")
		}
		msg.AddOption(dhcpv6.OptServerID(e.server))
	}
	msg.AddOption(dhcpv6.OptElapsedTime(0))
	msg.AddOption(dhcpv6.OptRequestedOption(dhcpv6.OptionDNSRecursiveNameServer, dhcpv6.OptionDomainSearchList))
	msg.AddOption(&dhcpv6.OptIANA{
		IaId:    e.iaid,
		Options: dhcpv6.IdentityOptions{Options: []dhcpv6.Option{&dhcpv6.OptIAAddress{IPv6Addr: l.Address.Addr().AsSlice()}}},
	})
	return msg, nil
}

// accept turns a Reply into a Lease and remembers the server.
func (e *exchanger6) accept(what string, reply *dhcpv6.Message) (Lease, error) {
	l, err := leaseFromReply(reply, e.iaid)
	if err != nil {
		return Lease{}, fmt.Errorf("%s: %w", what, err)
	}
	e.server = reply.Options.ServerID()
	return l, nil
}

func (e *exchanger6) close() error {
	if e.client == nil {
		return nil
	}
	return e.client.Close()
}

// leaseFromReply converts a DHCPv6 Reply into a Lease (without Start,
// Family and Interface). A status NoBinding, NotOnLink or NoAddrsAvail, or
// a zero valid lifetime, means the server declined.
func leaseFromReply(reply *dhcpv6.Message, iaid [4]byte) (Lease, error) {
	if err := statusErr(reply.Options.Status()); err != nil {
		return Lease{}, err
	}
	var ia *dhcpv6.OptIANA
	for _, o := range reply.Options.IANA() {
		if o.IaId == iaid {
			ia = o
		}
	}
	if ia == nil {
		return Lease{}, fmt.Errorf("reply without our IA_NA")
	}
	if err := statusErr(ia.Options.Status()); err != nil {
		return Lease{}, err
	}
	a := ia.Options.OneAddress()
	if a == nil {
		return Lease{}, fmt.Errorf("%w: IA_NA without an address", errDeclined)
	}
	addr, ok := netip.AddrFromSlice(a.IPv6Addr)
	if !ok || a.ValidLifetime == 0 {
		return Lease{}, fmt.Errorf("%w: address %s with valid lifetime %s", errDeclined, a.IPv6Addr, a.ValidLifetime)
	}
	l := Lease{
		Address:   netip.PrefixFrom(addr, 128),
		Lifetime:  a.ValidLifetime,
		Preferred: a.PreferredLifetime,
		T1:        ia.T1,
		T2:        ia.T2,
		DNS:       ipAddrs(reply.Options.DNS()),
	}
	if sid := reply.Options.ServerID(); sid != nil {
		l.ServerID = sid.ToBytes()
	}
	if ds := reply.Options.DomainSearchList(); ds != nil {
		for _, d := range ds.Labels {
			l.SearchDomains = append(l.SearchDomains, strings.TrimSuffix(d, "."))
		}
	}
	return l, nil
}

func statusErr(s *dhcpv6.OptStatusCode) error {
	if s == nil || s.StatusCode == iana.StatusSuccess {
		return nil
	}
	switch s.StatusCode {
	case iana.StatusNoBinding, iana.StatusNotOnLink, iana.StatusNoAddrsAvail:
		return fmt.Errorf("%w: %s %s", errDeclined, s.StatusCode, s.StatusMessage)
	}
	return fmt.Errorf("server status %s %s", s.StatusCode, s.StatusMessage)
}
