// Package kernel is knmstate's kernel backend: it reads one network
// namespace (links, addresses, routes, rules), a resolv.conf file and a UTS
// namespace's hostname into an nmstate.State (Show), and carries out the
// operations of an nmstate.Plan there (Execute).
//
// It owns every netlink, sysctl and namespace syscall of the engine; netlink
// types never leave it, and each kernel object kind has one conversion
// function in each direction (link ↔ Interface, address, route, rule). It
// must not decide what to change: ordering, merging and verification belong
// to pkg/nmstate and pkg/apply. It never touches a namespace other than the
// one it was opened for; code that must run inside that namespace (sysctl
// files under /proc/sys/net, sethostname) runs on a locked OS thread that is
// switched in and back.
//
// # Why vishvananda/netlink
//
// github.com/vishvananda/netlink rather than jsimonetti/rtnetlink: it has
// typed link kinds for everything nmstate manages in the kernel (bond,
// bridge, vlan, vxlan, macvlan, macvtap, ipvlan, vrf, veth, tuntap, dummy),
// a per-namespace Handle (netlink.NewHandleAt) so no goroutine ever changes
// namespace for netlink work, and bridge VLAN, protinfo and policy-rule
// support. Where it does not parse an attribute nmstate reports (IFLA_BR_*
// beyond a handful, bridge-port slave data, min/max MTU, IPv6 devconf,
// locked route metrics), the package reads the raw attributes of the same
// dump through the library's nl helpers on a socket in the same namespace,
// so there is still one dump per object kind.
//
// # What Show reports and Execute does
//
// Show follows nmstate's kernel query: interfaces in ifindex order (veth
// as type veth with its peer, resolved across namespaces when possible;
// unknown link kinds as `unknown`), IP sections with `enabled` (IPv4: has
// an address; IPv6: not disabled), dynamic addresses marked by finite
// lifetimes, IPv6 link-local addresses left out; routes.config holds
// static/boot routes, routes.running also RA/DHCP/daemon routes, never the
// kernel's prefix routes; multipath routes are flattened with weights;
// rules skip the three default rules; DNS comes from the ResolvConf file,
// the hostname from the UTS namespace.
//
// Execute runs a plan's operations in order, each idempotent (replace over
// add; deleting what is gone succeeds), and wraps an error with the
// operation's text. A link kind the kernel lacks gives a Dependency error
// naming the module: `bond0: kernel has no bonding support (module
// bonding)`. Routes are installed with protocol static so they read back
// as config; weighted IPv4 next hops are merged into one multipath route.
// A bond's ports-config (queue-id, priority: IFLA_BOND_SLAVE_QUEUE_ID and
// _PRIO, the latter since Linux 6.0) is set on each port once it is
// attached, and read back from the ports. HSR/PRP links are created with a
// raw request (the library has no hsr type); their multicast spec reads
// back as the supervision address's last byte, as nmstate reports it.
// SR-IOV: the VF count is the parent device's sriov_numvfs, found under
// /sys/bus/<IFLA_PARENT_DEV_BUS_NAME>/devices/<IFLA_PARENT_DEV_NAME> (bus
// devices are not namespaced, /sys/class/net is); VF settings go over
// netlink, and the link dump asks for the VF lists (RTEXT_FILTER_VF).
// ethtool (features, rings, coalescing, pause) goes over the ethtool
// generic netlink family on a socket opened in the namespace
// (ethtool_linux.go); Show reports it for ethernet NICs and veths, with
// the changeable features only, as upstream does. 802.1x runs Debian's
// wpa_supplicant (wired driver) per interface in the namespace, with its
// configuration, pid file and control sockets under
// Options.SupplicantDir; the applied section kept there is what Show
// reports (supplicant_linux.go). MACsec links are created with a raw
// request; MKA runs the same way, wpa_supplicant with driver macsec_linux
// on the base interface (macsec_linux.go). Options.HostnameFile is the
// static hostname: `config: ""` empties it and the node runtime takes the
// DHCP host name (hostname_linux.go, SetDHCPHostname). Options.LLDPDir
// holds lldp.enabled markers and the neighbours the node runtime stores
// (lldp_linux.go).
//
// Execute resolves interface names from one link dump per call (a cache
// that follows its own creates and deletes and trusts only a link's
// existence, index and kind; values it compares, such as MTU, MAC or
// controller, are read fresh), reads the route table at most once, and
// writes a run of sysctls from one namespace switch: the cost of a plan
// is close to that of the same requests sent by `ip -batch`.
//
// The node runtime (pkg/noded) and its DHCP clients follow single links
// rather than the whole state: LinkReader (a link's flags and operational
// state, WaitOperUp, one link's addresses as netip prefixes) and
// WatchLinks (link notifications as LinkEvent values) give them that
// without netlink types (linkstate_linux.go). internal/deptest fails when
// a package outside this one and internal/testbed imports netlink.
//
// Linux only: every file but this one ends in _linux.go.
package kernel
