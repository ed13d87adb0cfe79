package probe

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Names of the probes.
const (
	PingName          = "ping"
	DNSName           = "dns"
	APIServerName     = "api-server"
	NodeReadinessName = "node-readiness"
	// TCPName is knmstate's own: a TCP connection to Options.TCPAddress.
	TCPName = "tcp"
)

// Defaults of Options. Upstream waits 120 s for every probe; these are
// shorter but still cover a linux-bridge port's STP listening and learning
// (2 × 15 s forward delay) before the gateway answers, and an API server
// connection through a re-created uplink.
const (
	DefaultPingTimeout   = 40 * time.Second
	DefaultDNSTimeout    = 40 * time.Second
	DefaultAPITimeout    = 60 * time.Second
	DefaultNodeTimeout   = 60 * time.Second
	DefaultSelectTimeout = 5 * time.Second
	DefaultInterval      = time.Second
)

// Options describe one node's probes.
type Options struct {
	// NetNS is the node's network namespace ("" = the process's own).
	NetNS string
	// Show reads the node's live state (targets of ping and DNS).
	Show func(ctx context.Context) (*nmstate.State, error)
	// DNSHost is the name looked up (default DefaultDNSHost).
	DNSHost string
	// PingTarget, when valid, is pinged instead of the default gateway
	// (a policy that moves the gateway, a node whose gateway drops ICMP).
	PingTarget netip.Addr
	// API reaches the API server (with the node's dialer); nil = no API
	// server and node-readiness probes.
	API *rest.Config
	// Node is the Node object's name.
	Node string
	// TCPAddress (host:port), when set, adds the tcp probe: a connection
	// to it from the node (the API server's port where no API client is
	// at hand).
	TCPAddress string
	// Timeouts of each probe after an apply; SelectTimeout bounds each
	// external probe before it (a probe that does not pass then is not
	// run after).
	PingTimeout, DNSTimeout, APITimeout, NodeTimeout, SelectTimeout time.Duration
	// TCPTimeout bounds the tcp probe (default DefaultAPITimeout).
	TCPTimeout time.Duration
	// Interval is the pause between attempts (default 1 s).
	Interval time.Duration
}

// WithDefaults fills zero fields.
func (o Options) WithDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.PingTimeout, DefaultPingTimeout)
	def(&o.DNSTimeout, DefaultDNSTimeout)
	def(&o.APITimeout, DefaultAPITimeout)
	def(&o.NodeTimeout, DefaultNodeTimeout)
	def(&o.SelectTimeout, DefaultSelectTimeout)
	def(&o.TCPTimeout, DefaultAPITimeout)
	def(&o.Interval, DefaultInterval)
	if o.DNSHost == "" {
		o.DNSHost = DefaultDNSHost
	}
	return o
}

// All returns the node's four probes, in upstream's order.
func (o Options) All() []Probe {
	o = o.WithDefaults()
	// An attempt that reads the node's state first (the gateway, the
	// name servers) gets time for that read on top of its network part,
	// which stays bounded as any attempt's: through NetworkManager the
	// read takes seconds on a slow node (a CI run's qemu guest timed out
	// every attempt so).
	withRead := attemptTimeout(o.Interval) + stateReadTimeout
	out := []Probe{
		{Name: PingName, External: true, Timeout: o.PingTimeout, AttemptTimeout: withRead, Attempt: o.ping},
		{Name: DNSName, External: true, Timeout: o.DNSTimeout, AttemptTimeout: withRead, Attempt: o.dns},
	}
	if o.TCPAddress != "" {
		out = append(out, Probe{Name: TCPName, External: true, Timeout: o.TCPTimeout, AttemptTimeout: withRead, Attempt: o.tcp})
	}
	if o.API != nil {
		out = append(out,
			Probe{Name: APIServerName, Timeout: o.APITimeout, Attempt: func(ctx context.Context) error { return APIServer(ctx, o.API) }},
			Probe{Name: NodeReadinessName, Timeout: o.NodeTimeout, Attempt: func(ctx context.Context) error { return NodeReady(ctx, o.API, o.Node) }},
		)
	}
	return out
}

func (o Options) live(ctx context.Context) (*nmstate.State, error) {
	if o.Show == nil {
		return nil, errors.New("no state reader")
	}
	s, err := o.Show(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the current state: %w", err)
	}
	return s, nil
}

// stateReadTimeout bounds the read of the node's state in a probe's
// attempt.
const stateReadTimeout = 10 * time.Second

// network bounds the network part of an attempt, after its state read.
func (o Options) network(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, attemptTimeout(o.Interval))
}

func (o Options) ping(ctx context.Context) error {
	if o.PingTarget.IsValid() {
		ctx, cancel := o.network(ctx)
		defer cancel()
		return Ping(ctx, o.NetNS, o.PingTarget, "")
	}
	s, err := o.live(ctx)
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	gw, ok := DefaultGateway(s)
	if !ok {
		return fmt.Errorf("ping: %w: no default gateway in the main table", errNoTarget)
	}
	ctx, cancel := o.network(ctx)
	defer cancel()
	return Ping(ctx, o.NetNS, gw.Addr, gw.Iface)
}

func (o Options) tcp(ctx context.Context) error {
	s, err := o.live(ctx)
	if err != nil {
		return fmt.Errorf("tcp: %w", err)
	}
	ctx, cancel := o.network(ctx)
	defer cancel()
	return TCP(ctx, o.NetNS, NameServers(s), o.TCPAddress)
}

func (o Options) dns(ctx context.Context) error {
	s, err := o.live(ctx)
	if err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	ctx, cancel := o.network(ctx)
	defer cancel()
	return Resolve(ctx, o.NetNS, NameServers(s), o.DNSHost)
}
