package labnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// BridgeName is the switch's bridge inside the switch namespace.
const BridgeName = "br0"

// Options configures a switch. Zero fields take the documented defaults,
// all inside documentation address ranges.
type Options struct {
	// Gateway4 is the bridge's IPv4 address and prefix; default 192.0.2.1/24.
	Gateway4 netip.Prefix
	// Gateway6 is the bridge's IPv6 address and prefix; default 2001:db8::1/64.
	Gateway6 netip.Prefix
	// Range4 is the DHCPv4 pool; default .100 to .199 of Gateway4's prefix.
	Range4 [2]netip.Addr
	// Range6 is the DHCPv6 pool; default ::100 to ::1ff of Gateway6's prefix.
	Range6 [2]netip.Addr
	// LeaseTime applies to DHCPv4 and DHCPv6; default and minimum 2m
	// (dnsmasq's own lower bound).
	LeaseTime time.Duration
	// Domain is the local DNS zone and search domain; default lab.example.
	Domain string
	// Records are extra A/AAAA names served by the switch (fully
	// qualified, e.g. "api.lab.example").
	Records map[string]netip.Addr
	// DnsmasqExtra are extra dnsmasq.conf lines, e.g. a classless static
	// route option.
	DnsmasqExtra []string
	// Dnsmasq is the binary; default /usr/sbin/dnsmasq.
	Dnsmasq string
	// StartTimeout bounds waiting for dnsmasq to be serving; default 10s.
	StartTimeout time.Duration
	// Name, when set, names the namespaces after it (NamespaceName) instead
	// of random hex, so a lab's namespaces are recognisable and Sweep can
	// find them; it must be a valid lab name (ValidateName).
	Name string
	// Dir is where the switch's temporary directory is created; default
	// os.TempDir().
	Dir string
	// LLDP runs Debian's lldpd in the switch namespace, announcing the
	// switch as LLDPSystemName on every node port (tx interval 5s), its
	// control socket in the switch's directory.
	LLDP bool
	// NodeNamespaces gives every node a mount namespace in which
	// /etc/resolv.conf is the node's own resolv.conf, and a UTS namespace
	// whose hostname is the node's name (Node.MountNS, Node.UTSNS).
	NodeNamespaces bool
	// NodeSysctls are written in every node's network namespace before its
	// NICs are made (keys in slash form, "net/ipv6/conf/default/accept_ra"),
	// so the NICs are born with them.
	NodeSysctls map[string]string
	// VLANs are tagged networks on the switch: a VLAN interface of the
	// bridge (br0.ID) with the gateway address and a DHCPv4 pool of its
	// own that hands out no router and no DNS server, so a node's VLAN
	// interface on DHCP gets an address of its VLAN and nothing that
	// would change the node's default route. Needs the kernel's 8021q.
	VLANs []VLAN
	// Cables are existing links to use as the nodes' NICs instead of veth
	// pairs, taken in order by AddNode, one per NIC: ethernet devices of
	// a virtual machine joined two by two outside it (labvm.Machine's
	// Cables), so the nodes' NICs are reported as ethernet, not veth.
	// When they run out, AddNode makes veth pairs again.
	Cables []Cable
}

// Cable is a pair of links that carry each other's frames, named in the
// namespace NewSwitch is called from: Node becomes a node's NIC, Switch
// the bridge port facing it. Both must be down and their names must not
// be a node NIC's name (eth0, ...): they are moved before being renamed.
type Cable struct {
	Node, Switch string
}

// VLAN is a tagged network of the switch.
type VLAN struct {
	// ID is the 802.1Q VLAN ID (1..4094).
	ID int
	// Gateway4 is the switch's address on it; the DHCPv4 pool is .100 to
	// .199 of its prefix.
	Gateway4 netip.Prefix
}

// vlanName is the switch's interface of a VLAN.
func vlanName(id int) string { return fmt.Sprintf("%s.%d", BridgeName, id) }

func (o Options) withDefaults() (Options, error) {
	if !o.Gateway4.IsValid() {
		o.Gateway4 = netip.MustParsePrefix("192.0.2.1/24")
	}
	if !o.Gateway6.IsValid() {
		o.Gateway6 = netip.MustParsePrefix("2001:db8::1/64")
	}
	if !o.Gateway4.Addr().Is4() {
		return o, fmt.Errorf("gateway4: %s is not an IPv4 prefix", o.Gateway4)
	}
	if !o.Gateway6.Addr().Is6() || o.Gateway6.Addr().Is4In6() {
		return o, fmt.Errorf("gateway6: %s is not an IPv6 prefix", o.Gateway6)
	}
	if !o.Range4[0].IsValid() {
		b := o.Gateway4.Masked().Addr().As4()
		b[3] = 100
		o.Range4[0] = netip.AddrFrom4(b)
		b[3] = 199
		o.Range4[1] = netip.AddrFrom4(b)
	}
	if !o.Range6[0].IsValid() {
		b := o.Gateway6.Masked().Addr().As16()
		b[14], b[15] = 0x01, 0x00
		o.Range6[0] = netip.AddrFrom16(b)
		b[14], b[15] = 0x01, 0xff
		o.Range6[1] = netip.AddrFrom16(b)
	}
	for i, a := range o.Range4 {
		if !o.Gateway4.Contains(a) {
			return o, fmt.Errorf("range4[%d]: %s is outside %s", i, a, o.Gateway4.Masked())
		}
	}
	for i, a := range o.Range6 {
		if !o.Gateway6.Contains(a) {
			return o, fmt.Errorf("range6[%d]: %s is outside %s", i, a, o.Gateway6.Masked())
		}
	}
	if o.LeaseTime == 0 {
		o.LeaseTime = 2 * time.Minute
	}
	if o.LeaseTime < 2*time.Minute {
		return o, fmt.Errorf("leaseTime: %s is below dnsmasq's minimum of 2m", o.LeaseTime)
	}
	if o.Domain == "" {
		o.Domain = "lab.example"
	}
	if o.Dnsmasq == "" {
		o.Dnsmasq = "/usr/sbin/dnsmasq"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 10 * time.Second
	}
	if o.Name != "" {
		if err := ValidateName(o.Name); err != nil {
			return o, fmt.Errorf("name: %w", err)
		}
	}
	seen := map[int]bool{}
	for i, v := range o.VLANs {
		if v.ID < 1 || v.ID > 4094 || seen[v.ID] {
			return o, fmt.Errorf("vlans[%d]: id %d is out of 1..4094 or repeated", i, v.ID)
		}
		seen[v.ID] = true
		if !v.Gateway4.Addr().Is4() || v.Gateway4.Bits() > 24 || v.Gateway4.Overlaps(o.Gateway4) {
			return o, fmt.Errorf("vlans[%d]: gateway4 %s is not an IPv4 prefix of /24 or shorter apart from %s", i, v.Gateway4, o.Gateway4.Masked())
		}
	}
	return o, nil
}

// Switch is a switch namespace with a bridge and a running dnsmasq, plus
// the node namespaces attached to it.
type Switch struct {
	// NS is the switch namespace.
	NS *NS
	// Options are the options in effect (defaults filled in).
	Options Options
	// Dir is the temporary directory holding dnsmasq's and the nodes' files.
	Dir string

	cfg     dnsmasqConfig
	dnsmasq *exec.Cmd
	exited  chan struct{} // closed when dnsmasq has been reaped
	lldpd   *exec.Cmd
	lldpEnd chan struct{} // closed when lldpd has been reaped
	lldpDir string        // lldpd's socket and log
	// releaseThreads end the OS threads that started dnsmasq and lldpd
	// (closed by Close once those are gone; see NS.startKeptThread).
	releaseThreads []chan struct{}

	mu     sync.Mutex
	nodes  []*Node
	seq    int
	cables []Cable // not yet taken
	// origin is the namespace NewSwitch was called from, where the
	// cables are.
	origin *netlink.Handle
	// originNS is that namespace, where RemoveNode returns cables.
	originNS netns.NsHandle
}

// Node is a node namespace whose NICs are veth pairs to the switch bridge.
type Node struct {
	// Name is the caller's name for the node (not the namespace name).
	Name string
	// NS is the node's network namespace.
	NS *NS
	// NICs are the node-side interface names, in order (eth0, eth1, ...).
	NICs []string
	// Peers are the switch-side veth names, parallel to NICs.
	Peers []string
	// ResolvConf is the path of the node's own resolv.conf, pointing at the
	// switch's DNS. Nodes never use /etc/resolv.conf.
	ResolvConf string
	// MountNS and UTSNS are paths of the node's mount and UTS namespaces
	// (Options.NodeNamespaces), for nsenter --mount/--uts or setns; ""
	// otherwise. MountNS is a /proc/PID/fd path of this process: it is
	// valid while the Switch is open.
	MountNS, UTSNS string

	mounts []string // host-side mount points to remove with the node
	mntNS  *os.File // holds the node's mount namespace
	cables []Cable  // the cable of each NIC (Cable{} for a veth pair)
}

// NewSwitch creates the switch namespace, its bridge with the gateway
// addresses, and starts dnsmasq in it. The caller must Close the switch,
// also when NewSwitch fails after returning a partial switch — it returns
// nil in that case after cleaning up itself.
func NewSwitch(ctx context.Context, opts Options) (_ *Switch, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("labnet options: %w", err)
	}
	s := &Switch{Options: opts, cables: slices.Clone(opts.Cables)}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	if len(s.cables) > 0 {
		if s.origin, s.originNS, err = originHandle(); err != nil {
			return nil, fmt.Errorf("cables: %w", err)
		}
	}
	if s.Dir, err = os.MkdirTemp(opts.Dir, Prefix+"switch-"); err != nil {
		return nil, fmt.Errorf("switch temp dir: %w", err)
	}
	if opts.NodeNamespaces {
		if err := s.privateNSDir(); err != nil {
			return nil, err
		}
	}
	if s.NS, err = newNS(nsSuffix(opts.Name, "switch")); err != nil {
		return nil, err
	}
	if err := s.addBridge(); err != nil {
		return nil, err
	}
	s.cfg = dnsmasqConfig{
		Bridge:   BridgeName,
		Dir:      s.Dir,
		Gateway4: opts.Gateway4,
		Gateway6: opts.Gateway6,
		Range4:   opts.Range4,
		Range6:   opts.Range6,
		Lease:    opts.LeaseTime,
		Domain:   opts.Domain,
		Records:  opts.Records,
		Extra:    opts.DnsmasqExtra,
		VLANs:    opts.VLANs,
	}
	if err := s.startDnsmasq(ctx); err != nil {
		return nil, err
	}
	if opts.LLDP {
		if err := s.startLLDP(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Switch) addBridge() error {
	off := false
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: BridgeName}, MulticastSnooping: &off}
	if err := s.NS.Netlink.LinkAdd(br); err != nil {
		return fmt.Errorf("%s: creating bridge %s: %w", s.NS.Name, BridgeName, err)
	}
	// The switch advertises itself as the IPv6 default router, so it must
	// also answer neighbour solicitations as one: the kernel sets the
	// Router flag of its neighbour advertisements only on an interface
	// that forwards. Without it every NUD probe of the gateway (about
	// every 30 s) tells the nodes' kernels that the router became a host,
	// they delete the RA default route, and the next advertisement adds
	// it back: a route flapping on every node of an idle lab, which no
	// real router causes. Only this namespace's br0 forwards; it has no
	// other interface to route to.
	if err := s.NS.Sysctl("net/ipv6/conf/"+BridgeName+"/forwarding", "1"); err != nil {
		return err
	}
	// Gateway addresses before dnsmasq starts: it binds to them.
	for _, p := range []netip.Prefix{s.Options.Gateway4, s.Options.Gateway6} {
		a := &netlink.Addr{IPNet: prefixIPNet(p)}
		if p.Addr().Is6() {
			// No DAD: dnsmasq must be able to bind at once.
			a.Flags = unix.IFA_F_NODAD
		}
		if err := s.NS.Netlink.AddrAdd(br, a); err != nil {
			return fmt.Errorf("%s: adding %s to %s: %w", s.NS.Name, p, BridgeName, err)
		}
	}
	if err := s.NS.linkUp(BridgeName); err != nil {
		return err
	}
	for _, v := range s.Options.VLANs {
		vl := &netlink.Vlan{LinkAttrs: netlink.LinkAttrs{Name: vlanName(v.ID), ParentIndex: br.Attrs().Index}, VlanId: v.ID}
		if err := s.NS.Netlink.LinkAdd(vl); err != nil {
			return fmt.Errorf("%s: creating %s: %w", s.NS.Name, vl.Name, err)
		}
		if err := s.NS.Netlink.AddrAdd(vl, &netlink.Addr{IPNet: prefixIPNet(v.Gateway4)}); err != nil {
			return fmt.Errorf("%s: adding %s to %s: %w", s.NS.Name, v.Gateway4, vl.Name, err)
		}
		if err := s.NS.linkUp(vl.Name); err != nil {
			return err
		}
	}
	return nil
}

func (s *Switch) startDnsmasq(ctx context.Context) error {
	if err := os.WriteFile(s.cfg.confPath(), []byte(s.cfg.render()), 0o600); err != nil {
		return fmt.Errorf("writing dnsmasq config: %w", err)
	}
	cmd := exec.Command(s.Options.Dnsmasq, "--conf-file="+s.cfg.confPath())
	cmd.Dir = s.Dir
	cmd.Stdout = nil
	stderr, err := os.Create(filepath.Join(s.Dir, "dnsmasq.stderr"))
	if err != nil {
		return fmt.Errorf("dnsmasq stderr file: %w", err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	release, err := s.NS.startKeptThread(cmd)
	if err != nil {
		return fmt.Errorf("starting dnsmasq: %w", err)
	}
	s.releaseThreads = append(s.releaseThreads, release)
	s.dnsmasq = cmd
	s.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	return s.waitServing(ctx)
}

// waitServing waits until dnsmasq has logged that it started, which it
// does after binding its sockets.
func (s *Switch) waitServing(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.Options.StartTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		b, _ := os.ReadFile(s.cfg.logPath())
		if strings.Contains(string(b), "started, version") && strings.Contains(string(b), "router advertisement on") {
			return nil
		}
		select {
		case <-s.exited:
			e, _ := os.ReadFile(filepath.Join(s.Dir, "dnsmasq.stderr"))
			return fmt.Errorf("dnsmasq exited at start (%s): %s%s", s.dnsmasq.ProcessState, e, b)
		case <-ctx.Done():
			return fmt.Errorf("waiting for dnsmasq to serve: %w; log: %s", ctx.Err(), b)
		case <-tick.C:
		}
	}
}

// LogPath is dnsmasq's log file, worth printing when a test fails.
func (s *Switch) LogPath() string { return s.cfg.logPath() }

// LeasePath is dnsmasq's lease database.
func (s *Switch) LeasePath() string { return s.cfg.leasePath() }

// Gateways returns the switch's gateway addresses.
func (s *Switch) Gateways() (v4, v6 netip.Addr) {
	return s.Options.Gateway4.Addr(), s.Options.Gateway6.Addr()
}

// AddNode creates a node namespace with one veth NIC per name in nics
// (e.g. "eth0", "eth1"), both ends up, the switch end a port of the bridge.
// The NICs are left unconfigured.
func (s *Switch) AddNode(name string, nics ...string) (_ *Node, err error) {
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	n := &Node{Name: name}
	defer func() {
		if err != nil && n.NS != nil {
			_ = n.NS.close()
		}
	}()
	defer func() {
		if err != nil {
			_ = n.unmount()
		}
	}()
	if s.Options.Name != "" {
		if err := ValidateName(name); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	if n.NS, err = newNS(nsSuffix(s.Options.Name, name)); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	keys := make([]string, 0, len(s.Options.NodeSysctls))
	for k := range s.Options.NodeSysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := n.NS.Sysctl(k, s.Options.NodeSysctls[k]); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	br, err := s.NS.Netlink.LinkByName(BridgeName)
	if err != nil {
		return nil, fmt.Errorf("%s: finding %s: %w", s.NS.Name, BridgeName, err)
	}
	for i, nic := range nics {
		// Unique in the switch namespace and within IFNAMSIZ.
		peer := fmt.Sprintf("n%d-%d", seq, i)
		if err := s.cable(n, nic, peer); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		pl, err := s.NS.Netlink.LinkByName(peer)
		if err != nil {
			return nil, fmt.Errorf("%s: finding %s: %w", s.NS.Name, peer, err)
		}
		if err := s.NS.Netlink.LinkSetMaster(pl, br); err != nil {
			return nil, fmt.Errorf("%s: enslaving %s to %s: %w", s.NS.Name, peer, BridgeName, err)
		}
		if err := s.NS.linkUp(peer); err != nil {
			return nil, err
		}
		if err := n.NS.linkUp(nic); err != nil {
			return nil, err
		}
		n.NICs = append(n.NICs, nic)
		n.Peers = append(n.Peers, peer)
	}
	// Return only once both ends pass traffic: until the kernel's link
	// watcher has seen carrier (batched, up to a second), a veth sends
	// through a qdisc that drops everything.
	for i := range n.NICs {
		if err := waitOperUp(n.NS, n.NICs[i]); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		if err := waitOperUp(s.NS, n.Peers[i]); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	dir := filepath.Join(s.Dir, "node-"+n.NS.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("node %s dir: %w", name, err)
	}
	n.ResolvConf = filepath.Join(dir, "resolv.conf")
	resolv := fmt.Sprintf("# generated by internal/testbed/labnet for node %s\nnameserver %s\nnameserver %s\nsearch %s\n",
		name, s.Options.Gateway4.Addr(), s.Options.Gateway6.Addr(), s.Options.Domain)
	if err := os.WriteFile(n.ResolvConf, []byte(resolv), 0o644); err != nil {
		return nil, fmt.Errorf("node %s resolv.conf: %w", name, err)
	}
	if s.Options.NodeNamespaces {
		if err := s.nodeNamespaces(n); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	s.mu.Lock()
	s.nodes = append(s.nodes, n)
	s.mu.Unlock()
	return n, nil
}

// RemoveNode takes a node off the switch: both ends of its NICs, its
// namespaces, mounts and files, as if it were switched off; AddNode with
// the same name gives it fresh ones. Processes still inside the node's
// namespaces keep them alive (without NICs): stop them first.
func (s *Switch) RemoveNode(name string) error {
	s.mu.Lock()
	i := slices.IndexFunc(s.nodes, func(n *Node) bool { return n.Name == name })
	if i < 0 {
		s.mu.Unlock()
		return fmt.Errorf("node %s: not on the switch", name)
	}
	n := s.nodes[i]
	s.nodes = slices.Delete(s.nodes, i, i+1)
	s.mu.Unlock()
	var errs []error
	// A cable goes back to where it came from, for the next AddNode (the
	// node made again after a reboot): its ends are a machine's NICs,
	// which outlive the namespaces.
	var back []Cable
	for i, peer := range n.Peers {
		c := n.cables[i]
		if c.Node == "" {
			continue
		}
		if err := s.unplug(n.NS, n.NICs[i], c.Node); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", name, err))
			continue
		}
		if err := s.unplug(s.NS, peer, c.Switch); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", name, err))
			continue
		}
		back = append(back, c)
	}
	s.mu.Lock()
	s.cables = append(back, s.cables...)
	s.mu.Unlock()
	// Deleting the switch end of a veth pair removes the node end at
	// once, whatever still holds the node's namespace.
	for i, peer := range n.Peers {
		if n.cables[i].Node != "" {
			continue
		}
		l, err := s.NS.Netlink.LinkByName(peer)
		if err != nil {
			continue // gone already
		}
		if err := s.NS.Netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("node %s: deleting %s: %w", name, peer, err))
		}
	}
	if err := n.unmount(); err != nil {
		errs = append(errs, fmt.Errorf("node %s: %w", name, err))
	}
	nsName := n.NS.Name
	if err := n.NS.close(); err != nil {
		errs = append(errs, fmt.Errorf("node %s: %w", name, err))
	}
	if err := os.RemoveAll(filepath.Join(s.Dir, "node-"+nsName)); err != nil {
		errs = append(errs, fmt.Errorf("node %s: %w", name, err))
	}
	return errors.Join(errs...)
}

// cable gives node n its NIC nic, with peer as the bridge's port facing
// it: the next of Options.Cables, or a new veth pair.
func (s *Switch) cable(n *Node, nic, peer string) error {
	s.mu.Lock()
	var c Cable
	taken := len(s.cables) > 0
	if taken {
		c, s.cables = s.cables[0], s.cables[1:]
	}
	s.mu.Unlock()
	n.cables = append(n.cables, c)
	if !taken {
		v := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: nic},
			PeerName:      peer,
			PeerNamespace: netlink.NsFd(int(s.NS.Handle)),
		}
		// Born inside the node namespace, peer moved straight into the
		// switch namespace: the caller's namespace never sees either end.
		if err := n.NS.Netlink.LinkAdd(v); err != nil {
			return fmt.Errorf("creating veth %s <-> %s: %w", nic, peer, err)
		}
		return nil
	}
	if err := s.plug(c.Node, n.NS, nic); err != nil {
		return fmt.Errorf("cable %s-%s: %w", c.Node, c.Switch, err)
	}
	if err := s.plug(c.Switch, s.NS, peer); err != nil {
		return fmt.Errorf("cable %s-%s: %w", c.Node, c.Switch, err)
	}
	return nil
}

// unplug moves link name of ns back into the origin namespace as as,
// reset as a reboot resets a NIC: no controller, down, its permanent MAC
// and the default MTU (moving it drops its addresses and routes).
func (s *Switch) unplug(ns *NS, name, as string) error {
	l, err := ns.Netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("%s: finding %s: %w", ns.Name, name, err)
	}
	if l.Attrs().MasterIndex != 0 {
		if err := ns.Netlink.LinkSetNoMaster(l); err != nil {
			return fmt.Errorf("%s: releasing %s: %w", ns.Name, name, err)
		}
	}
	if err := ns.Netlink.LinkSetDown(l); err != nil {
		return fmt.Errorf("%s: %s down: %w", ns.Name, name, err)
	}
	if perm := l.Attrs().PermHWAddr; len(perm) > 0 && !bytes.Equal(perm, l.Attrs().HardwareAddr) {
		if err := ns.Netlink.LinkSetHardwareAddr(l, perm); err != nil {
			return fmt.Errorf("%s: %s back to MAC %s: %w", ns.Name, name, perm, err)
		}
	}
	if l.Attrs().MTU != 1500 {
		if err := ns.Netlink.LinkSetMTU(l, 1500); err != nil {
			return fmt.Errorf("%s: %s back to MTU 1500: %w", ns.Name, name, err)
		}
	}
	// Renamed first: the origin has NICs of its own (eth0).
	if err := ns.Netlink.LinkSetName(l, as); err != nil {
		return fmt.Errorf("%s: renaming %s to %s: %w", ns.Name, name, as, err)
	}
	if err := ns.Netlink.LinkSetNsFd(l, int(s.originNS)); err != nil {
		return fmt.Errorf("%s: moving %s back: %w", ns.Name, as, err)
	}
	return nil
}

// plug moves link from the origin namespace into ns and names it name.
func (s *Switch) plug(link string, ns *NS, name string) error {
	l, err := s.origin.LinkByName(link)
	if err != nil {
		return fmt.Errorf("finding %s: %w", link, err)
	}
	if err := s.origin.LinkSetNsFd(l, int(ns.Handle)); err != nil {
		return fmt.Errorf("moving %s into %s: %w", link, ns.Name, err)
	}
	if l, err = ns.Netlink.LinkByName(link); err != nil {
		return fmt.Errorf("%s: finding %s: %w", ns.Name, link, err)
	}
	if err := ns.Netlink.LinkSetName(l, name); err != nil {
		return fmt.Errorf("%s: renaming %s to %s: %w", ns.Name, link, name, err)
	}
	return nil
}

// Close stops dnsmasq (by its PID), removes the node and switch namespaces
// and the temporary directory. It is safe to call more than once and on a
// partially built switch.
func (s *Switch) Close() error {
	var errs []error
	if s.origin != nil {
		s.origin.Close()
		s.origin = nil
		_ = s.originNS.Close()
	}
	if s.lldpd != nil && s.lldpd.Process != nil {
		_ = s.lldpd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.lldpEnd:
		case <-time.After(5 * time.Second):
			_ = s.lldpd.Process.Kill()
			<-s.lldpEnd
		}
	}
	if s.lldpDir != "" {
		if err := os.RemoveAll(s.lldpDir); err != nil {
			errs = append(errs, err)
		}
	}
	if s.dnsmasq != nil && s.dnsmasq.Process != nil {
		select {
		case <-s.exited:
		default:
			_ = s.dnsmasq.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
				_ = s.dnsmasq.Process.Kill()
				<-s.exited
			}
		}
	}
	for _, release := range s.releaseThreads {
		close(release)
	}
	s.releaseThreads = nil
	s.mu.Lock()
	nodes := s.nodes
	s.nodes = nil
	s.mu.Unlock()
	for _, n := range nodes {
		if err := n.unmount(); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
		}
		if err := n.NS.close(); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
		}
	}
	if s.Options.NodeNamespaces && s.Dir != "" {
		if err := unmountUnder(s.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if s.NS != nil {
		if err := s.NS.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Dir != "" {
		if err := os.RemoveAll(s.Dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", s.Dir, err))
		}
	}
	return errors.Join(errs...)
}

// waitOperUp polls (for at most 5s) until the link is operationally up.
func waitOperUp(n *NS, name string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := n.Netlink.LinkByName(name)
		if err != nil {
			return fmt.Errorf("%s: finding %s: %w", n.Name, name, err)
		}
		if l.Attrs().OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not up after 5s (state %s)", n.Name, name, l.Attrs().OperState)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
