package dhcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"

	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nsrun"
)

// requested4 are the options asked for in every DHCPv4 request.
var requested4 = []dhcpv4.OptionCode{
	dhcpv4.OptionSubnetMask,
	dhcpv4.OptionRouter,
	dhcpv4.OptionDomainNameServer,
	dhcpv4.OptionDomainName,
	dhcpv4.OptionHostName,
	dhcpv4.OptionInterfaceMTU,
	dhcpv4.OptionDNSDomainSearchList,
	dhcpv4.OptionClasslessStaticRoute,
	dhcpv4.OptionIPAddressLeaseTime,
	dhcpv4.OptionRenewTimeValue,
	dhcpv4.OptionRebindingTimeValue,
}

// Start4 opens a DHCPv4 socket on cfg.Interface inside cfg.Namespace and
// starts acquiring a lease. Socket errors (no such interface, no
// permission) are returned here; exchange failures are retried.
func Start4(ctx context.Context, cfg Config) (*Client, error) {
	ex, err := newExchanger4(cfg)
	if err != nil {
		return nil, err
	}
	return start(ctx, cfg, IPv4, ex), nil
}

type exchanger4 struct {
	client *nclient4.Client
	conn   *sourceConn
	links  *kernel.LinkReader // in the interface's namespace
	ifname string
	mods   []dhcpv4.Modifier
	// ack is the last DHCPACK: renew and release are built from it.
	ack *dhcpv4.DHCPv4
}

func newExchanger4(cfg Config) (*exchanger4, error) {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	filter, err := bootpcFilter()
	if err != nil {
		return nil, fmt.Errorf("dhcpv4 socket filter: %w", err)
	}
	var (
		client *nclient4.Client
		conn   *sourceConn
		mac    net.HardwareAddr
	)
	// Everything that resolves the interface or creates a socket happens
	// inside the namespace.
	err = nsrun.Do(cfg.Namespace, func() error {
		ifi, err := net.InterfaceByName(cfg.Interface)
		if err != nil {
			return err
		}
		mac = ifi.HardwareAddr
		raw, err := packet.Listen(ifi, packet.Datagram, unix.ETH_P_IP, &packet.Config{Filter: filter})
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		conn = &sourceConn{raw: raw, read: nclient4.NewBroadcastUDPConn(raw, &net.UDPAddr{Port: nclient4.ClientPort})}
		client, err = nclient4.NewWithConn(conn, mac, nclient4.WithTimeout(timeout), nclient4.WithRetry(4))
		if err != nil {
			raw.Close()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dhcpv4 client on %s: %w", cfg.Interface, err)
	}
	cid, err := ClientID4(cfg.ClientID, cfg.Interface, mac)
	if err != nil {
		client.Close()
		return nil, err
	}
	links, err := kernel.OpenLinkReader(cfg.Namespace)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("dhcpv4 client on %s: %w", cfg.Interface, err)
	}
	mods := []dhcpv4.Modifier{
		dhcpv4.WithOption(dhcpv4.OptClientIdentifier(cid)),
		dhcpv4.WithRequestedOptions(requested4...),
	}
	if cfg.SendHostname && cfg.Hostname != "" {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptHostName(cfg.Hostname)))
	}
	return &exchanger4{client: client, conn: conn, links: links, ifname: cfg.Interface, mods: mods}, nil
}

func (e *exchanger4) acquire(ctx context.Context) (Lease, error) {
	// Until the link is operationally up, a DISCOVER is dropped by the
	// device's qdisc and costs a retransmission timeout.
	if err := e.links.WaitOperUp(ctx, e.ifname); err != nil {
		return Lease{}, err
	}
	e.conn.setSource(nil)
	l, err := e.client.Request(ctx, e.mods...)
	if err != nil {
		return Lease{}, wrapNak4("acquiring", err)
	}
	e.ack = l.ACK
	return leaseFromAck(l.ACK)
}

// renew asks the granting server directly (RENEWING, RFC 2131 4.4.5).
func (e *exchanger4) renew(ctx context.Context, l Lease) (Lease, error) {
	return e.request(ctx, "renewing", &net.UDPAddr{IP: l.Server.AsSlice(), Port: nclient4.ServerPort}, true)
}

// rebind asks any server, by broadcast (REBINDING).
func (e *exchanger4) rebind(ctx context.Context, _ Lease) (Lease, error) {
	return e.request(ctx, "rebinding", nclient4.DefaultServers, false)
}

func (e *exchanger4) request(ctx context.Context, what string, dest *net.UDPAddr, sameServer bool) (Lease, error) {
	if e.ack == nil {
		return Lease{}, fmt.Errorf("%s: no lease", what)
	}
	xid, err := dhcpv4.GenerateTransactionID()
	if err != nil {
		return Lease{}, fmt.Errorf("%s: %w", what, err)
	}
	// ciaddr set, no server identifier or requested address: a
	// RENEWING/REBINDING request; the reply comes to the leased address.
	req, err := dhcpv4.NewRenewFromAck(e.ack, append(e.mods, dhcpv4.WithTransactionID(xid))...)
	if err != nil {
		return Lease{}, fmt.Errorf("%s: building request: %w", what, err)
	}
	// Sent from the leased address: a server drops a unicast packet from
	// 0.0.0.0 as a martian.
	e.conn.setSource(e.ack.YourIPAddr)
	match := nclient4.IsMessageType(dhcpv4.MessageTypeAck, dhcpv4.MessageTypeNak)
	if sameServer {
		match = nclient4.IsAll(nclient4.IsCorrectServer(e.ack.ServerIdentifier()), match)
	}
	resp, err := e.client.SendAndRead(ctx, dest, req, match)
	if err != nil {
		return Lease{}, fmt.Errorf("%s: %w", what, err)
	}
	if resp.MessageType() == dhcpv4.MessageTypeNak {
		return Lease{}, fmt.Errorf("%s: %w: %s", what, errDeclined, resp.Message())
	}
	e.ack = resp
	return leaseFromAck(resp)
}

func (e *exchanger4) release(_ context.Context, l Lease) error {
	if e.ack == nil {
		return nil
	}
	req, err := dhcpv4.NewReleaseFromACK(e.ack, e.mods[0])
	if err != nil {
		return fmt.Errorf("building release: %w", err)
	}
	// Unicast to the server from the leased address (RFC 2131 4.4.4); no
	// reply comes.
	e.conn.setSource(e.ack.YourIPAddr)
	_, err = e.conn.WriteTo(req.ToBytes(), &net.UDPAddr{IP: e.ack.ServerIdentifier(), Port: nclient4.ServerPort})
	return err
}

// sourceConn is nclient4's raw broadcast connection with a settable IPv4
// source address: 0.0.0.0 while acquiring, the leased address when
// renewing, rebinding and releasing. Exchanges run one at a time, so the
// source is never changed under a pending send.
type sourceConn struct {
	raw  net.PacketConn
	read net.PacketConn // bound to port 68, any destination address

	mu  sync.Mutex
	src net.IP
}

func (c *sourceConn) setSource(ip net.IP) {
	c.mu.Lock()
	c.src = ip
	c.mu.Unlock()
}

func (c *sourceConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.mu.Lock()
	src := c.src
	c.mu.Unlock()
	return nclient4.NewBroadcastUDPConn(c.raw, &net.UDPAddr{IP: src, Port: nclient4.ClientPort}).WriteTo(b, addr)
}

func (c *sourceConn) ReadFrom(b []byte) (int, net.Addr, error) { return c.read.ReadFrom(b) }
func (c *sourceConn) Close() error                             { return c.raw.Close() }
func (c *sourceConn) LocalAddr() net.Addr                      { return c.raw.LocalAddr() }
func (c *sourceConn) SetDeadline(t time.Time) error            { return c.raw.SetDeadline(t) }
func (c *sourceConn) SetReadDeadline(t time.Time) error        { return c.raw.SetReadDeadline(t) }
func (c *sourceConn) SetWriteDeadline(t time.Time) error       { return c.raw.SetWriteDeadline(t) }

func (e *exchanger4) close() error {
	e.links.Close()
	return e.client.Close()
}

func wrapNak4(what string, err error) error {
	var nak *nclient4.ErrNak
	if errors.As(err, &nak) {
		return fmt.Errorf("%s: %w: %s", what, errDeclined, nak.Nak.Message())
	}
	return fmt.Errorf("%s: %w", what, err)
}

// leaseFromAck converts a DHCPACK into a Lease (without Start, Family and
// Interface, which the driver fills in).
func leaseFromAck(ack *dhcpv4.DHCPv4) (Lease, error) {
	addr, ok := netip.AddrFromSlice(ack.YourIPAddr.To4())
	if !ok || addr.IsUnspecified() {
		return Lease{}, fmt.Errorf("dhcpack without an address (yiaddr %s)", ack.YourIPAddr)
	}
	bits := 32
	if m := ack.SubnetMask(); m != nil {
		if ones, size := m.Size(); size == 32 {
			bits = ones
		}
	}
	life := ack.IPAddressLeaseTime(0)
	if life == 0 {
		return Lease{}, fmt.Errorf("dhcpack for %s without a lease time", addr)
	}
	l := Lease{
		Address:   netip.PrefixFrom(addr, bits),
		Server:    ipAddr(ack.ServerIdentifier()),
		Lifetime:  life,
		Preferred: life,
		T1:        ack.IPAddressRenewalTime(0),
		T2:        ack.IPAddressRebindingTime(0),
		Routers:   ipAddrs(ack.Router()),
		DNS:       ipAddrs(ack.DNS()),
	}
	if !l.Server.IsValid() {
		return Lease{}, fmt.Errorf("dhcpack for %s without a server identifier", addr)
	}
	for _, r := range ack.ClasslessStaticRoute() {
		dst, ok := netip.AddrFromSlice(r.Dest.IP.To4())
		if !ok {
			continue
		}
		ones, _ := r.Dest.Mask.Size()
		l.Routes = append(l.Routes, Route{Destination: netip.PrefixFrom(dst, ones), Gateway: ipAddr(r.Router)})
	}
	if ds := ack.DomainSearch(); ds != nil {
		for _, d := range ds.Labels {
			l.SearchDomains = append(l.SearchDomains, strings.TrimSuffix(d, "."))
		}
	}
	l.DomainName = ack.DomainName()
	l.Hostname = ack.HostName()
	if v := ack.GetOneOption(dhcpv4.OptionInterfaceMTU); len(v) == 2 {
		l.MTU = int(v[0])<<8 | int(v[1])
	}
	return l, nil
}

func ipAddr(ip net.IP) netip.Addr {
	if ip4 := ip.To4(); ip4 != nil {
		ip = ip4
	}
	a, _ := netip.AddrFromSlice(ip)
	return a
}

func ipAddrs(ips []net.IP) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		if a := ipAddr(ip); a.IsValid() {
			out = append(out, a)
		}
	}
	return out
}
