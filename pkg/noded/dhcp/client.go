package dhcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vishvananda/netns"
)

// NamespaceHandle is an open network namespace file descriptor.
type NamespaceHandle = netns.NsHandle

// EventKind says what happened to a lease.
type EventKind uint8

const (
	// LeaseBound: a new lease (first one, or a different address):
	// install it.
	LeaseBound EventKind = iota
	// LeaseRenewed: the same address with new lifetimes and options:
	// update it.
	LeaseRenewed
	// LeaseExpired: the lease ended without being renewed (or the server
	// declined it): remove it.
	LeaseExpired
	// LeaseReleased: the client gave the lease back on Stop: remove it.
	LeaseReleased
)

func (k EventKind) String() string {
	return [...]string{"bound", "renewed", "expired", "released"}[k]
}

// Event is one lease change reported to the runtime.
type Event struct {
	Kind  EventKind
	Lease Lease
}

// Config configures one client on one interface.
type Config struct {
	// Namespace is where Interface lives (required). The caller keeps it
	// open for the client's lifetime.
	Namespace NamespaceHandle
	// Interface is the interface name inside Namespace.
	Interface string
	// ClientID is nmstate's dhcp-client-id (DHCPv4): "", "ll",
	// "iaid+duid", hex bytes or a string; see ClientID4.
	ClientID string
	// DUID is nmstate's dhcp-duid (DHCPv6): "", "ll" or hex bytes.
	DUID string
	// Hostname is sent when SendHostname is true: nmstate's
	// dhcp-custom-hostname, or the node's hostname (the caller decides).
	Hostname     string
	SendHostname bool
	// OnEvent receives every lease change, in order, on the client's
	// goroutine. It should return quickly.
	OnEvent func(Event)
	// Logger receives exchange failures; nil discards them.
	Logger *slog.Logger
	// Timeout is the first retransmission timeout of an exchange (doubled
	// on each of 4 tries); default 2s.
	Timeout time.Duration
}

// exchanger does the message exchanges of one family; the driver decides
// when. Errors wrapping errDeclined mean the server said no.
type exchanger interface {
	acquire(ctx context.Context) (Lease, error)
	renew(ctx context.Context, l Lease) (Lease, error)
	rebind(ctx context.Context, l Lease) (Lease, error)
	release(ctx context.Context, l Lease) error
	close() error
}

var errDeclined = errors.New("declined by server")

// Client keeps one lease alive on one interface. Create it with Start4 or
// Start6; end it with Stop.
type Client struct {
	cfg    Config
	family Family
	ex     exchanger
	now    func() time.Time

	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	m  Machine

	stopOnce sync.Once
	stopErr  error
}

func start(ctx context.Context, cfg Config, family Family, ex exchanger) *Client {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Client{cfg: cfg, family: family, ex: ex, now: time.Now, cancel: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c
}

// Lease returns the lease currently held, if any.
func (c *Client) Lease() (Lease, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.Lease()
}

// State returns the lifecycle state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m.State()
}

// Stop ends the client and closes its socket. With release, a held lease
// is given back to the server (dhcp: false, interface removed) and a
// LeaseReleased event is reported; without it the lease is left to run out on
// the server (process restart, where the address stays installed).
func (c *Client) Stop(release bool) error {
	c.stopOnce.Do(func() {
		c.cancel()
		<-c.done
		c.mu.Lock()
		l, held := c.m.Stop()
		c.mu.Unlock()
		var errs []error
		if release && held {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			if err := c.ex.release(ctx, l); err != nil {
				errs = append(errs, fmt.Errorf("releasing %s on %s: %w", l.Address, c.cfg.Interface, err))
			}
			cancel()
			c.emit(Event{Kind: LeaseReleased, Lease: l})
		}
		if err := c.ex.close(); err != nil {
			errs = append(errs, fmt.Errorf("closing dhcpv%d socket on %s: %w", c.family, c.cfg.Interface, err))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

func (c *Client) emit(e Event) {
	if c.cfg.OnEvent != nil {
		c.cfg.OnEvent(e)
	}
}

// run is the I/O driver: it asks the Machine what to do, does it, and
// tells the Machine the outcome.
func (c *Client) run(ctx context.Context) {
	defer close(c.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		c.mu.Lock()
		step := c.m.Next(c.now())
		held, _ := c.m.Lease()
		c.mu.Unlock()
		switch step.Action {
		case Idle:
			return
		case Wait:
			timer.Reset(time.Until(step.At))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			continue
		case Expire:
			c.emit(Event{Kind: LeaseExpired, Lease: step.Lease})
			continue
		}
		sent := c.now()
		xctx, cancel := context.WithDeadline(ctx, step.At)
		var l Lease
		var err error
		switch step.Action {
		case Acquire:
			l, err = c.ex.acquire(xctx)
		case Renew:
			l, err = c.ex.renew(xctx, held)
		case Rebind:
			l, err = c.ex.rebind(xctx, held)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.cfg.Logger.Info("dhcp exchange failed", "interface", c.cfg.Interface, "family", int(c.family), "action", step.Action.String(), "error", err)
			c.mu.Lock()
			c.m.Failed(c.now(), errors.Is(err, errDeclined))
			c.mu.Unlock()
			continue
		}
		l.Family, l.Interface, l.Start = c.family, c.cfg.Interface, sent
		c.mu.Lock()
		old, hadOld := c.m.Lease()
		changed := c.m.Granted(l)
		l, _ = c.m.Lease()
		c.mu.Unlock()
		switch {
		case !changed:
			c.emit(Event{Kind: LeaseRenewed, Lease: l})
		case hadOld:
			c.emit(Event{Kind: LeaseExpired, Lease: old})
			c.emit(Event{Kind: LeaseBound, Lease: l})
		default:
			c.emit(Event{Kind: LeaseBound, Lease: l})
		}
	}
}
