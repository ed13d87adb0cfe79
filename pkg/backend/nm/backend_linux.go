package nm

import (
	"context"
	"errors"
	"net/netip"
	"sort"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/knmstate/knmstate/pkg/backend/kernel"
	"github.com/knmstate/knmstate/pkg/backend/ovs"
	"github.com/knmstate/knmstate/pkg/nmstate"
)

// Name is how NNS and nmstatectl name this backend.
const Name = "networkmanager"

// Options selects the node and the bus.
type Options struct {
	// NetNS and UTSNS are the kernel backend's (the namespace
	// NetworkManager manages).
	NetNS string
	UTSNS string
	// HostnameFile is the kernel backend's (kernel.Options.HostnameFile):
	// the static hostname a node runtime reads, where hostname.config is
	// kept and "" (dynamic) means the DHCP hostname; hostname settings are
	// the kernel touch-up's, as on a kernel node. Without it the configured
	// hostname is the running one.
	HostnameFile string
	// ResolvConf, when set, is the resolv.conf the node's resolver reads
	// (NetworkManager's, on a node where it owns it): the running DNS is
	// reported from it; "" = from NetworkManager's DnsManager. The
	// configured DNS always comes from the profiles; the file is never
	// written.
	ResolvConf string
	// Bus is the D-Bus address of the system bus NetworkManager is on; ""
	// = the system bus (DBUS_SYSTEM_BUS_ADDRESS or its default socket).
	Bus string
	// MemoryOnly keeps profiles in memory (nmstate's --memory-only): gone
	// after a reboot, no profile deleted (absent interfaces go down, see
	// Backend.MemoryOnly), no duplicate profile removed. The default, as
	// upstream's, saves them to disk (the keyfile directory) and keeps one
	// profile per interface.
	MemoryOnly bool
	// ActivationTimeout bounds waiting for the activations of one apply
	// (0 = 60 s).
	ActivationTimeout time.Duration
	// OVSDB is the node's Open vSwitch database socket ("unix:PATH"; "" or
	// ovs.NoAddress = no OVS: OVS states are refused), read next to the
	// kernel as the kernel backend reads it; NetworkManager's OVS plugin
	// writes bridges, ports and interfaces, the Open_vSwitch table is
	// written directly. OVSDatapath is the datapath-type of OVS bridges
	// whose state names none ("netdev" where the kernel has no openvswitch
	// module), as ovs.Options.DefaultDatapath.
	OVSDB, OVSDatapath string
	// OnTouchUp, if set, sees each kernel touch-up plan before it runs
	// (what the profiles could not express), for logs and tests.
	OnTouchUp func(*nmstate.Plan)
}

// Backend reads and changes one node through NetworkManager, with the
// kernel backend for reading.
type Backend struct {
	opts   Options
	kernel *kernel.Backend
	ovs    *ovs.Backend // nil: no OVS (ovs_linux.go)
	c      *client
}

// Open connects to NetworkManager and opens the kernel view of the
// namespace. The caller must Close the Backend.
func Open(ctx context.Context, opts Options) (*Backend, error) {
	k, err := kernel.Open(ctx, kernel.Options{NetNS: opts.NetNS, UTSNS: opts.UTSNS, ResolvConf: opts.ResolvConf, HostnameFile: opts.HostnameFile})
	if err != nil {
		return nil, err
	}
	c, err := dial(opts.Bus)
	if err != nil {
		k.Close()
		return nil, err
	}
	if !c.available(ctx) {
		c.close()
		k.Close()
		return nil, &nmstate.Error{Kind: nmstate.Dependency, Detail: "NetworkManager is not running (no org.freedesktop.NetworkManager on the system bus)"}
	}
	if opts.ActivationTimeout <= 0 {
		opts.ActivationTimeout = 60 * time.Second
	}
	return &Backend{opts: opts, kernel: k, ovs: openOVS(ctx, k, opts), c: c}, nil
}

// Available reports whether NetworkManager is on the bus at addr ("" =
// system bus): what --backend auto decides on.
func Available(ctx context.Context, addr string) bool {
	c, err := dial(addr)
	if err != nil {
		return false
	}
	defer c.close()
	return c.available(ctx)
}

// Close releases the bus connection and the kernel view.
func (b *Backend) Close() error {
	return errors.Join(b.c.close(), b.closeOVS(), b.kernel.Close())
}

// MemoryOnly reports whether profiles are kept in memory; pkg/apply then
// turns absent interfaces into down, as nmstate does in that mode.
func (b *Backend) MemoryOnly() bool { return b.opts.MemoryOnly }

// Name returns the backend's name for NNS.
func (b *Backend) Name() string { return Name }

// Address is the bus address the backend was opened on.
func (b *Backend) Address() string { return b.opts.Bus }

// Version returns NetworkManager's version.
func (b *Backend) Version() (string, error) { return b.c.version() }

// Show reads the kernel state with NetworkManager's DNS on top.
func (b *Backend) Show(ctx context.Context) (*nmstate.State, error) {
	s, err := b.read(ctx)
	if err != nil {
		return nil, err
	}
	profiles, err := b.c.profiles(ctx)
	if err != nil {
		return nil, err
	}
	devs, err := b.c.devices(ctx)
	if err != nil {
		return nil, err
	}
	active := b.activeProfiles(devs)
	annotateDynamic(s, profiles, active)
	markPortsWithoutIP(s, activePorts(profiles, active))
	markIgnored(s, devs)
	b.showExtras(ctx, s, profiles, devs)
	dns, err := b.showDNS(ctx, profiles, devs)
	if err != nil {
		return nil, err
	}
	if b.opts.ResolvConf != "" && s.DNSResolver != nil && s.DNSResolver.Running != nil {
		dns.Running = s.DNSResolver.Running
	}
	s.DNSResolver = dns
	return s, nil
}

// activeProfiles maps the object paths of active profiles to their
// device's name.
func (b *Backend) activeProfiles(devs map[string]*device) map[dbus.ObjectPath]string {
	active := map[dbus.ObjectPath]string{}
	for name, d := range devs {
		if d.profile != "" && d.profile != "/" {
			active[d.profile] = name
		}
	}
	return active
}

// annotateDynamic reports the dynamic IP settings of interfaces whose
// active profile runs DHCP or autoconf, as nmstate reads them from the
// applied profile (the kernel shows only the leased addresses): dhcp,
// autoconf and the auto-* flags.
func annotateDynamic(s *nmstate.State, profiles []*profile, active map[dbus.ObjectPath]string) {
	for _, p := range profiles {
		name, ok := active[p.path]
		if !ok {
			continue
		}
		for _, ifc := range s.Find(name) {
			if ifc.Type.IsUserSpace() {
				continue
			}
			for _, v6 := range []bool{false, true} {
				sec, c := p.settings["ipv4"], &ifc.IPv4
				if v6 {
					sec, c = p.settings["ipv6"], &ifc.IPv6
				}
				method, _ := sec["method"].Value().(string)
				if method != "auto" && method != "dhcp" {
					continue
				}
				if *c == nil {
					*c = &nmstate.IPConfig{}
				}
				cfg := *c
				t, f := true, false
				cfg.Enabled, cfg.DHCP = &t, &t
				if v6 {
					cfg.Autoconf = &f
					if method == "auto" {
						cfg.Autoconf = &t
					}
				}
				not := func(key string) *bool {
					v, _ := sec[key].Value().(bool)
					r := !v
					return &r
				}
				cfg.AutoDNS, cfg.AutoGateway, cfg.AutoRoutes = not("ignore-auto-dns"), not("never-default"), not("ignore-auto-routes")
				table, _ := sec["route-table"].Value().(uint32)
				cfg.AutoRouteTableID = &table
			}
		}
	}
}

// showDNS reports config from the DNS of active profiles, ordered by
// dns-priority (the preferred family first, as placed by Execute), and
// running from DnsManager.
func (b *Backend) showDNS(ctx context.Context, profiles []*profile, devs map[string]*device) (*nmstate.DNSResolver, error) {
	active := map[string]bool{}
	for conn := range b.activeProfiles(devs) {
		active[string(conn)] = true
	}
	type held struct {
		prio    int32
		servers []netip.Addr
		search  []string
		options []string
	}
	var hs []held
	for _, p := range profiles {
		if !active[string(p.path)] {
			continue
		}
		for _, fam := range []string{"ipv4", "ipv6"} {
			sec := p.settings[fam]
			h := held{servers: dnsServers(sec)}
			if v, ok := sec["dns-search"]; ok {
				h.search, _ = v.Value().([]string)
			}
			if v, ok := sec["dns-options"]; ok {
				h.options, _ = v.Value().([]string)
			}
			if v, ok := sec["dns-priority"]; ok {
				h.prio, _ = v.Value().(int32)
			}
			if len(h.servers) > 0 || len(h.search) > 0 || len(h.options) > 0 {
				hs = append(hs, h)
			}
		}
	}
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].prio < hs[j].prio })
	cfg := &nmstate.DNSConfig{Server: []netip.Addr{}, Search: []string{}, Options: []string{}}
	for _, h := range hs {
		cfg.Server = append(cfg.Server, h.servers...)
		cfg.Search = append(cfg.Search, h.search...)
		cfg.Options = append(cfg.Options, h.options...)
	}
	if g, err := b.c.globalDNS(); err == nil && !g.Empty() {
		// Global DNS overrides every profile's: nmstate reports it as
		// both config and running.
		return &nmstate.DNSResolver{Config: g.dnsConfig(), Running: g.dnsConfig()}, nil
	}
	running := &nmstate.DNSConfig{Server: []netip.Addr{}, Search: []string{}, Options: []string{}}
	if conf, err := b.c.dnsConfiguration(); err == nil {
		for _, e := range conf {
			if v, ok := e["nameservers"]; ok {
				ss, _ := v.Value().([]string)
				for _, s := range ss {
					if a, err := netip.ParseAddr(s); err == nil {
						running.Server = append(running.Server, a)
					}
				}
			}
			if v, ok := e["domains"]; ok {
				ds, _ := v.Value().([]string)
				running.Search = append(running.Search, ds...)
			}
		}
	}
	running.Options = append(running.Options, cfg.Options...)
	return &nmstate.DNSResolver{Config: cfg, Running: running}, nil
}

func dnsServers(sec map[string]dbus.Variant) []netip.Addr {
	v, ok := sec["dns"]
	if !ok {
		return nil
	}
	var out []netip.Addr
	switch vv := v.Value().(type) {
	case []uint32:
		for _, u := range vv {
			var b [4]byte
			b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
			out = append(out, netip.AddrFrom4(b))
		}
	case [][]byte:
		for _, raw := range vv {
			if a, ok := netip.AddrFromSlice(raw); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

// Execute is not how this backend applies: it needs the merged state
// (ExecuteMerged), which pkg/apply passes.
func (b *Backend) Execute(ctx context.Context, p *nmstate.Plan) error {
	return &nmstate.Error{Kind: nmstate.Bug, Detail: "the NetworkManager backend applies merged states (ExecuteMerged), not plans"}
}
