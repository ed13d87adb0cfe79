package noded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/nmstate"
	"github.com/knmstate/knmstate/pkg/noded/dhcp"
	"golang.org/x/sys/unix"
)

// Options configure a Runtime (and AcquireOnce).
type Options struct {
	// Namespace is the node's network namespace, where the DHCP clients
	// open their sockets (required). The caller keeps it open.
	Namespace dhcp.NamespaceHandle
	// Installer installs leases in that same namespace (required).
	Installer Installer
	// StateDir holds the runtime record (required).
	StateDir string
	// Hostname is sent in DHCP requests when an interface has
	// dhcp-send-hostname and no dhcp-custom-hostname ("" = send none).
	Hostname string
	// Logger receives lease changes and failures; nil discards them.
	Logger *slog.Logger
	// DHCPTimeout is the clients' first retransmission timeout (0 = the
	// client default).
	DHCPTimeout time.Duration
	// PollInterval is how often Run looks for specs submitted by another
	// process (Submit) besides watching the record for a new one; 0 = 2s.
	PollInterval time.Duration
	// Now is the clock (nil = time.Now).
	Now func() time.Time
}

func (o Options) validate() error {
	var errs []error
	if !o.Namespace.IsOpen() {
		errs = append(errs, errors.New("noded: no network namespace"))
	}
	if o.Installer == nil {
		errs = append(errs, errors.New("noded: no installer"))
	}
	if o.StateDir == "" {
		errs = append(errs, errors.New("noded: no state directory"))
	}
	return errors.Join(errs...)
}

// client is one running DHCP client. gen tells its events from those of
// an earlier client of the same key still in the queue.
type client struct {
	cfg ClientConfig
	c   *dhcp.Client
	gen uint64
}

type queued struct {
	key Key
	gen uint64
	ev  dhcp.Event
}

// Runtime keeps the dynamic configuration of one node alive: it runs the
// DHCP clients and IPv6 autoconf the applied states ask for and installs
// their leases. Update tells it about an applied state; Run processes
// lease events until its context ends. Both may be called from any
// goroutine.
type Runtime struct {
	opts Options
	log  *slog.Logger

	// clientCtx outlives single calls: clients run until stopped.
	clientCtx    context.Context
	cancelClient context.CancelFunc

	mu      sync.Mutex
	rec     *Record
	clients map[Key]*client
	gen     uint64
	// seen is the record's Submitted counter the runtime has acted on;
	// a higher one on disk is a submission to pick up.
	seen uint64

	// oneShot marks installed leases as not renewed (AcquireOnce).
	oneShot bool

	// links looks links up in the node's namespace.
	links *kernel.LinkReader
	// waiting are interfaces with a spec whose link is missing or down:
	// their clients start when it is up. (A DHCP packet socket opened on
	// a down link fails its first read and its receive loop ends.)
	waiting map[string]bool

	ready     chan struct{}
	readyOnce sync.Once

	qmu   sync.Mutex
	queue []queued
	wake  chan struct{}
}

// New loads the runtime record of opts.StateDir. Nothing runs until Run
// or Update.
func New(opts Options) (*Runtime, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 2 * time.Second
	}
	rec, err := ReadRecord(opts.StateDir)
	if err != nil {
		return nil, err
	}
	links, err := kernel.OpenLinkReader(opts.Namespace)
	if err != nil {
		return nil, fmt.Errorf("noded: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{links: links,
		opts: opts, log: opts.Logger, clientCtx: ctx, cancelClient: cancel,
		rec: rec, clients: map[Key]*client{}, wake: make(chan struct{}, 1), ready: make(chan struct{}), waiting: map[string]bool{},
	}
	r.seen = rec.Submitted
	return r, nil
}

// Ready is closed once Run holds the state directory and has started
// the recorded clients.
func (r *Runtime) Ready() <-chan struct{} { return r.ready }

// Specs returns a copy of the specs the runtime works to.
func (r *Runtime) Specs() map[string]Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.rec.Specs)
}

// Record returns a copy of the runtime record.
func (r *Runtime) Record() Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := *r.rec
	out.Specs = maps.Clone(r.rec.Specs)
	out.Leases = slices.Clone(r.rec.Leases)
	return out
}

// Update folds an applied state into the runtime's specs and starts,
// stops or refreshes clients accordingly. Interfaces and families the
// state does not mention keep their clients untouched.
func (r *Runtime) Update(ctx context.Context, applied *nmstate.State) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reconcileLocked(ctx, UpdateSpecs(r.rec.Specs, applied), false)
}

// reconcileLocked moves from the current specs to next. With all, every
// sysctl is written again (start-up: the kernel may have been reset).
func (r *Runtime) reconcileLocked(ctx context.Context, next map[string]Spec, all bool) error {
	prev := r.rec.Specs
	if all {
		prev = nil
	}
	running := map[Key]ClientConfig{}
	for k, c := range r.clients {
		running[k] = c.cfg
	}
	acts := Decide(prev, next, running)
	r.rec.Specs = next
	// An interface that does not exist (yet: a bridge the boot-time files
	// create, a NIC not plugged) or is down is set up when its link is up.
	for name := range next {
		l, err := r.links.Link(name)
		switch {
		case errors.Is(err, kernel.ErrLinkNotFound):
			r.waiting[name] = true
		case err == nil && !l.Up:
			r.waiting[name] = true
		}
	}
	var errs []error
	for _, s := range acts.Stop {
		errs = append(errs, r.stopLocked(ctx, s.Key, s.Release))
	}
	for _, s := range acts.Sysctls {
		if r.waiting[s.Interface] {
			continue // written when the link comes back
		}
		if err := r.opts.Installer.SetSysctl(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range acts.FlushAutoconf {
		if !r.waiting[name] {
			errs = append(errs, r.opts.Installer.FlushAutoconf(ctx, name))
		}
	}
	for _, name := range acts.Solicit {
		if r.waiting[name] {
			continue
		}
		// Best effort: without it the next periodic advertisement does.
		if err := dhcp.SolicitRouters(r.opts.Namespace, name); err != nil {
			r.log.Info("router solicitation", "interface", name, "error", err)
		}
	}
	// Leases left from a previous run (or a one-shot apply) whose client
	// is no longer wanted are removed.
	want := Clients(next)
	for _, l := range slices.Clone(r.rec.Leases) {
		k := Key{l.Interface, l.Family}
		if _, ok := want[k]; !ok {
			errs = append(errs, r.uninstallLocked(ctx, k))
		}
	}
	for _, k := range acts.Refresh {
		errs = append(errs, r.refreshLocked(ctx, k))
	}
	for name := range r.waiting {
		if _, ok := next[name]; !ok {
			delete(r.waiting, name)
		}
	}
	for _, k := range acts.Start {
		if r.waiting[k.Interface] {
			continue // started when the link comes back
		}
		errs = append(errs, r.startLocked(k, want[k]))
	}
	// Always: an apply may have rewritten resolv.conf with its static
	// configuration, dropping the dynamic entries.
	errs = append(errs, r.syncDNSLocked(ctx), r.syncHostnameLocked(ctx), r.saveLocked())
	return errors.Join(errs...)
}

func (r *Runtime) startLocked(k Key, cfg ClientConfig) error {
	r.gen++
	gen := r.gen
	hostname := cfg.Hostname
	if hostname == "" {
		hostname = r.opts.Hostname
	}
	dc := dhcp.Config{
		Namespace: r.opts.Namespace, Interface: k.Interface,
		Hostname: hostname, SendHostname: cfg.SendHostname && hostname != "",
		Logger: r.log, Timeout: r.opts.DHCPTimeout,
		OnEvent: func(ev dhcp.Event) { r.enqueue(queued{key: k, gen: gen, ev: ev}) },
	}
	var (
		c   *dhcp.Client
		err error
	)
	if k.Family == 4 {
		dc.ClientID = cfg.ClientID
		c, err = dhcp.Start4(r.clientCtx, dc)
	} else {
		dc.DUID = cfg.ClientID
		c, err = dhcp.Start6(r.clientCtx, dc)
	}
	if err != nil {
		return fmt.Errorf("starting dhcpv%d on %s: %w", k.Family, k.Interface, err)
	}
	r.clients[k] = &client{cfg: cfg, c: c, gen: gen}
	r.log.Info("dhcp client started", "interface", k.Interface, "family", k.Family)
	return nil
}

// stopLocked ends a client. With release the lease is given back and
// everything installed for it removed; without, the address stays until
// its lifetime ends (a restarted runtime takes it over).
func (r *Runtime) stopLocked(ctx context.Context, k Key, release bool) error {
	c, ok := r.clients[k]
	if !ok {
		return nil
	}
	delete(r.clients, k)
	err := c.c.Stop(release)
	if err != nil {
		// A release that cannot be sent (interface down or gone) is not a
		// failure of the apply: the lease runs out on the server.
		r.log.Info("dhcp client stop", "interface", k.Interface, "family", k.Family, "error", err)
	}
	r.log.Info("dhcp client stopped", "interface", k.Interface, "family", k.Family, "release", release)
	if !release {
		return nil
	}
	return r.uninstallLocked(ctx, k)
}

// uninstallLocked removes the installed lease of k (address and routes).
func (r *Runtime) uninstallLocked(ctx context.Context, k Key) error {
	i := r.rec.leaseIndex(k)
	if i < 0 {
		return nil
	}
	l := r.rec.Leases[i]
	r.rec.Leases = slices.Delete(r.rec.Leases, i, i+1)
	var errs []error
	for _, rt := range l.Routes {
		errs = append(errs, r.opts.Installer.DeleteRoute(ctx, rt))
	}
	errs = append(errs, r.opts.Installer.DeleteAddress(ctx, l.Interface, l.Address))
	return errors.Join(errs...)
}

// refreshLocked reinstalls the routes of a running client's lease after
// its auto-* settings changed.
func (r *Runtime) refreshLocked(ctx context.Context, k Key) error {
	c, ok := r.clients[k]
	if !ok {
		return nil
	}
	l, held := c.c.Lease()
	if !held {
		return nil
	}
	return r.installLocked(ctx, l, false)
}

// installLocked installs (or refreshes) a lease: the address with its
// remaining lifetimes, then the routes its auto settings allow; routes no
// longer wanted are removed.
func (r *Runtime) installLocked(ctx context.Context, l dhcp.Lease, oneShot bool) error {
	k := Key{l.Interface, int(l.Family)}
	a, _ := autoFor(r.rec.Specs, k)
	now := r.opts.Now()
	valid, preferred := l.Lifetime, l.Preferred
	if l.Lifetime < dhcp.Infinite {
		valid = l.ExpiresAt().Sub(now)
		preferred = l.Start.Add(l.Preferred).Sub(now)
	}
	if valid <= 0 {
		return nil
	}
	var old InstalledLease
	i := r.rec.leaseIndex(k)
	if i >= 0 {
		old = r.rec.Leases[i]
	}
	var errs []error
	if i >= 0 && old.Address != l.Address {
		errs = append(errs, r.opts.Installer.DeleteAddress(ctx, old.Interface, old.Address))
	}
	if err := r.opts.Installer.ReplaceAddress(ctx, l.Interface, l.Address, valid, max(preferred, 0)); err != nil {
		return errors.Join(append(errs, err)...)
	}
	routes := LeaseRoutes(l, a)
	for _, rt := range old.Routes {
		if !slices.Contains(routes, rt) {
			errs = append(errs, r.opts.Installer.DeleteRoute(ctx, rt))
		}
	}
	var installed []Route
	for _, rt := range routes {
		if err := r.opts.Installer.AddRoute(ctx, rt); err != nil {
			errs = append(errs, err)
			continue
		}
		installed = append(installed, rt)
	}
	search := l.SearchDomains
	if len(search) == 0 && l.DomainName != "" {
		search = []string{l.DomainName}
	}
	il := InstalledLease{
		Interface: l.Interface, Family: int(l.Family), Address: l.Address,
		Expires: l.ExpiresAt(), Routes: installed, DNS: l.DNS, Search: search, Hostname: l.Hostname, OneShot: oneShot,
	}
	if i >= 0 {
		r.rec.Leases[i] = il
	} else {
		r.rec.Leases = append(r.rec.Leases, il)
	}
	return errors.Join(errs...)
}

// syncHostnameLocked gives the node the host name of its first lease
// that names one, when its static hostname is empty; the installer
// decides, so an apply of hostname.config "" takes effect on the next
// sync without a new lease.
func (r *Runtime) syncHostnameLocked(ctx context.Context) error {
	for _, l := range r.rec.Leases {
		if l.Hostname == "" {
			continue
		}
		set, err := r.opts.Installer.SetDHCPHostname(ctx, l.Hostname)
		if set {
			r.log.Info("hostname from DHCP", "hostname", l.Hostname, "interface", l.Interface)
		}
		return err
	}
	return nil
}

// syncDNSLocked rewrites the resolv.conf when the dynamic servers or
// search domains changed.
func (r *Runtime) syncDNSLocked(ctx context.Context) error {
	if !r.opts.Installer.ManagesDNS() {
		return nil
	}
	cur, err := r.opts.Installer.ReadDNS(ctx)
	if err != nil {
		return err
	}
	out, appended := MergeDNS(cur, r.rec.DNS, LeaseDNS(r.rec.Leases, r.rec.Specs))
	r.rec.DNS = appended
	if slices.Equal(out.Server, cur.Server) && slices.Equal(out.Search, cur.Search) {
		return nil
	}
	return r.opts.Installer.WriteDNS(ctx, out)
}

// saveLocked writes the record. A submission not picked up yet keeps its
// specs on disk, so the next poll still sees it.
func (r *Runtime) saveLocked() error {
	unlock, err := lockRecord(r.opts.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	disk, err := ReadRecord(r.opts.StateDir)
	if err != nil {
		return err
	}
	out := *r.rec
	out.Submitted, out.Acted = r.seen, r.seen
	if disk.Submitted != r.seen {
		out.Specs, out.Submitted = disk.Specs, disk.Submitted
	}
	return WriteRecord(r.opts.StateDir, &out)
}

func (r *Runtime) enqueue(q queued) {
	r.qmu.Lock()
	r.queue = append(r.queue, q)
	r.qmu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Runtime) dequeue() []queued {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	q := r.queue
	r.queue = nil
	return q
}

// handle installs or removes what one lease event changes.
func (r *Runtime) handle(ctx context.Context, q queued) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.clients[q.key]
	if !ok || c.gen != q.gen {
		return // a stopped client's late event: stopLocked cleaned up
	}
	l := q.ev.Lease
	r.log.Info("lease event", "interface", l.Interface, "family", int(l.Family), "event", q.ev.Kind.String(),
		"address", l.Address.String(), "lifetime", l.Lifetime)
	var err error
	switch q.ev.Kind {
	case dhcp.LeaseBound, dhcp.LeaseRenewed:
		err = r.installLocked(ctx, l, r.oneShot)
	case dhcp.LeaseExpired, dhcp.LeaseReleased:
		if i := r.rec.leaseIndex(q.key); i >= 0 && r.rec.Leases[i].Address == l.Address {
			err = r.uninstallLocked(ctx, q.key)
		}
	}
	err = errors.Join(err, r.syncDNSLocked(ctx), r.syncHostnameLocked(ctx), r.saveLocked())
	if err != nil {
		r.log.Error("installing lease", "interface", l.Interface, "family", int(l.Family), "error", err)
	}
}

// Run starts the clients the recorded specs ask for (taking over leases
// of a previous run or of a one-shot apply), then installs lease changes
// as they come, until ctx ends. It also picks up specs that another
// process submitted to the state directory (Submit). On return the
// clients are stopped without releasing: the addresses stay until their
// lifetimes end, and the next Run renews them. Only one Run per state
// directory may be active (an exclusive lock in the state directory).
func (r *Runtime) Run(ctx context.Context) error {
	unlock, err := lockRuntime(r.opts.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	defer r.shutdown()
	// Subscribed before the first reconcile, so no link that appears
	// after it is missed.
	links := r.watchLinks(ctx)
	r.mu.Lock()
	err = r.reconcileLocked(ctx, r.rec.Specs, true)
	r.mu.Unlock()
	if err != nil {
		r.log.Error("starting dynamic configuration", "error", err)
	}
	r.readyOnce.Do(func() { close(r.ready) })
	poll := time.NewTicker(r.opts.PollInterval)
	defer poll.Stop()
	lldpCtx, stopLLDP := context.WithCancel(ctx)
	lldpDone := make(chan struct{})
	go func() {
		defer close(lldpDone)
		if lock := r.opts.Installer.LLDPLock(); lock != "" {
			RunLLDP(lldpCtx, r.opts.Namespace, r.opts.Installer, lock, r.opts.PollInterval, r.log)
		}
	}()
	defer func() { stopLLDP(); <-lldpDone }()
	submitted, err := watchRecord(ctx, r.opts.StateDir)
	if err != nil {
		r.log.Error("watching for submitted specs; polling only", "error", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-submitted:
			if !ok {
				submitted = nil
				continue
			}
			if err := r.pickUpSubmitted(ctx); err != nil {
				r.log.Error("reading submitted specs", "error", err)
			}
		case u, ok := <-links:
			if !ok {
				links = nil // subscription ended (logged); polling goes on
				continue
			}
			r.linkChanged(ctx, u)
		case <-r.wake:
			for _, q := range r.dequeue() {
				r.handle(ctx, q)
			}
		case <-poll.C:
			if err := r.pickUpSubmitted(ctx); err != nil {
				r.log.Error("reading submitted specs", "error", err)
			}
		}
	}
}

// watchLinks subscribes to link changes of the node's namespace, so that
// an interface removed behind the runtime's back stops its clients and one
// that comes back gets them again.
func (r *Runtime) watchLinks(ctx context.Context) <-chan kernel.LinkEvent {
	ch, err := kernel.WatchLinks(ctx, r.opts.Namespace, func(err error) {
		r.log.Error("link subscription", "error", err)
	})
	if err != nil {
		r.log.Error("subscribing to link changes", "error", err)
		return nil
	}
	return ch
}

// linkChanged reacts to one link message about an interface with a spec.
// Removal stops its clients (nothing can be sent, the addresses went with
// the link) and forgets their leases; going down stops them too (their
// sockets stop working) but keeps the leases, which stay installed. When
// the link is up again the clients start and its sysctls are rewritten
// (a new link has the defaults).
func (r *Runtime) linkChanged(ctx context.Context, u kernel.LinkEvent) {
	name := u.Link.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.rec.Specs[name]; !ok {
		return
	}
	up := !u.Deleted && u.Link.Up
	var errs []error
	switch {
	case u.Deleted || (!up && !r.waiting[name]):
		for _, f := range []int{4, 6} {
			k := Key{name, f}
			errs = append(errs, r.stopLocked(ctx, k, false))
			if u.Deleted {
				errs = append(errs, r.uninstallLocked(ctx, k))
			}
		}
		r.waiting[name] = true
		r.log.Info("interface down or removed: dhcp stopped", "interface", name)
		errs = append(errs, r.syncDNSLocked(ctx), r.syncHostnameLocked(ctx), r.saveLocked())
	case up && r.waiting[name]:
		delete(r.waiting, name)
		r.log.Info("interface up: dhcp started", "interface", name)
		spec := r.rec.Specs[name]
		prev := maps.Clone(r.rec.Specs)
		delete(prev, name) // so its sysctls are written again
		r.rec.Specs = prev
		next := maps.Clone(prev)
		next[name] = spec
		errs = append(errs, r.reconcileLocked(ctx, next, false))
	}
	if err := errors.Join(errs...); err != nil {
		r.log.Error("following interface change", "interface", name, "error", err)
	}
}

// pickUpSubmitted reconciles to the record's specs when another process
// submitted an applied state.
func (r *Runtime) pickUpSubmitted(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	unlock, err := lockRecord(r.opts.StateDir)
	if err != nil {
		return err
	}
	disk, err := ReadRecord(r.opts.StateDir)
	unlock()
	if err != nil {
		return err
	}
	if disk.Submitted == r.seen {
		return nil
	}
	r.seen = disk.Submitted
	// Leases installed once by another process become ours to renew or
	// remove.
	for _, l := range disk.Leases {
		if r.rec.leaseIndex(Key{l.Interface, l.Family}) < 0 {
			r.rec.Leases = append(r.rec.Leases, l)
		}
	}
	return r.reconcileLocked(ctx, disk.Specs, false)
}

func (r *Runtime) shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range sortedKeys(r.clients) {
		_ = r.stopLocked(context.Background(), k, false)
	}
	r.cancelClient()
	if err := r.saveLocked(); err != nil {
		r.log.Error("saving runtime record", "error", err)
	}
	r.links.Close()
}

// lockRuntime takes the exclusive runtime lock of stateDir, held while a
// Run is active; Running checks it.
func lockRuntime(stateDir string) (func(), error) {
	f, err := openLock(stateDir, "noded.lock")
	if err != nil {
		return nil, err
	}
	// Running probes hold the lock for a moment: retry briefly before
	// concluding that another runtime holds it.
	for try := 0; ; try++ {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EWOULDBLOCK) || try == 20 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("a node runtime already runs for %s", stateDir)
		}
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// Running reports whether a runtime is active for stateDir.
func Running(stateDir string) (bool, error) {
	f, err := openLock(stateDir, "noded.lock")
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking %s: %w", f.Name(), err)
	}
	return false, nil
}

// lockRecord serialises read-modify-write of the record between
// processes (Submit, AcquireOnce, a runtime picking the record up).
func lockRecord(stateDir string) (func(), error) {
	f, err := openLock(stateDir, "noded.record.lock")
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

func openLock(stateDir, name string) (*os.File, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(stateDir, name), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory lock: %w", err)
	}
	return f, nil
}

// Submit records an applied state for the runtime of stateDir, which
// picks it up as soon as it sees the record change: the path for
// `nmstatectl apply` and the handler while `nmstatectl service` runs in
// another process. It returns the submission's number for WaitActed.
func Submit(stateDir string, applied *nmstate.State) (uint64, error) {
	unlock, err := lockRecord(stateDir)
	if err != nil {
		return 0, err
	}
	defer unlock()
	rec, err := ReadRecord(stateDir)
	if err != nil {
		return 0, err
	}
	rec.Specs = UpdateSpecs(rec.Specs, applied)
	rec.Submitted++
	return rec.Submitted, WriteRecord(stateDir, rec)
}

// WaitActed waits until the runtime of stateDir has acted on submission
// n (or a later one), so that what follows an apply (verification,
// probes, a rollback's comparison) sees the dynamic configuration the
// runtime derives from it: DNS from leases, clients started or stopped.
func WaitActed(ctx context.Context, stateDir string, n uint64) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		rec, err := ReadRecord(stateDir)
		if err != nil {
			return err
		}
		if rec.Acted >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node runtime has not acted on submission %d (it is at %d): %w", n, rec.Acted, context.Cause(ctx))
		case <-tick.C:
		}
	}
}
