package lab

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/knmstate/knmstate/internal/manifest"
	"github.com/knmstate/knmstate/internal/testbed/lab/nodeinit"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
)

// A kubelet-mode node with the NetworkManager backend runs, as a RHEL or
// OpenShift node does, a system bus and NetworkManager before containerd:
// NetworkManager owns eth0 through a persistent DHCP profile (what an
// installer leaves on a node), so no node runtime runs there, and a policy
// may put the primary NIC under a bridge or bond whose profile comes back
// after a reboot without the handler. The handler's pod finds the bus
// through its DaemonSet's /run/dbus hostPath (--backend auto).
//
// Nothing here is left unmanaged but what the pod network makes: the CNI
// bridge and its pods' host-side veths (a node's NetworkManager leaves
// those alone through udev's unmanaged rules, which a NetworkManager
// without udev does not read).

// eth0ByNetworkManager: the nodes' NetworkManager configures eth0 from
// the profile eth0Keyfile writes, in every mode with the NetworkManager
// backend (as on a RHEL node: a policy may then put the primary NIC under
// a bridge, a bond or br-ex); no node runtime runs.
func (o Options) eth0ByNetworkManager() bool {
	return o.Backend == BackendNetworkManager
}

// Paths of a kubelet-mode NetworkManager node, under its directory.
const (
	// nodeDBusDir is bound on the node's /run/dbus: the bus socket is
	// reachable from this machine's side too (nmcli, the tests) at a path
	// that does not change with the node's PID. A reboot empties it, as it
	// does the node's tmpfs /run.
	nodeDBusDir = "run-dbus"
	// nodeNMRunDir is bound on the node's /run/NetworkManager, for the
	// same reasons: its resolv.conf (what NetworkManager's DNS renders;
	// the node's /etc/resolv.conf stays the lab's, as in the default
	// mode) is readable from this machine's side; a reboot empties it,
	// and the in-memory profiles in it go.
	nodeNMRunDir = "run-nm"
	// nodeNMDir holds NetworkManager's configuration and state file.
	nodeNMDir = "nm"
	// nodeKeyfileDir is the node's /etc/NetworkManager/system-connections:
	// persistent profiles, kept across reboots.
	nodeKeyfileDir = "etc/NetworkManager/system-connections"
)

// nodeNetworkManagerUnmanaged are the pod network's devices: the CNI
// bridge plugin's bridge and the host-side veths it names veth + 8 hex
// digits.
var nodeNetworkManagerUnmanaged = []string{"cni0", "veth????????"}

// nodeNetworkManagerBus is the node's bus address as seen from this
// machine's side and from inside the node alike.
func nodeNetworkManagerBus(dir string) string {
	return "unix:path=" + filepath.Join(dir, nodeDBusDir, "system_bus_socket")
}

// networkManagerNode writes a node's bus and NetworkManager configuration
// and eth0's profile (once: a profile the node changed is the node's) and
// returns the mounts and daemons that run them, to go before containerd.
func (k *kubeletLab) networkManagerNode(n *NodeState, dir string, env []string) ([]nodeinit.Mount, []nodeinit.Daemon, error) {
	nmDir := filepath.Join(dir, nodeNMDir)
	keyfiles := filepath.Join(dir, nodeKeyfileDir)
	for _, d := range []string{nmDir, keyfiles, filepath.Join(dir, nodeDBusDir), filepath.Join(dir, nodeNMRunDir), filepath.Join(dir, "var/lib/NetworkManager")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	socket := filepath.Join(manifest.HostDBusDir, "system_bus_socket")
	if err := nmrun.WriteBusConfig(filepath.Join(nmDir, "bus.conf"), socket); err != nil {
		return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if err := nmrun.WriteConfig(nmDir, nmrun.Config{KeyfileDir: keyfiles, Unmanaged: nodeNetworkManagerUnmanaged}); err != nil {
		return nil, nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	if err := writeEth0Profile(keyfiles, n.Name); err != nil {
		return nil, nil, err
	}
	n.NetworkManagerBus = nodeNetworkManagerBus(dir)
	n.NetworkManagerResolvConf = filepath.Join(dir, nodeNMRunDir, "resolv.conf")
	mounts := []nodeinit.Mount{
		{Source: filepath.Join(dir, nodeDBusDir), Target: manifest.HostDBusDir},
		{Source: filepath.Join(dir, nodeNMRunDir), Target: "/run/NetworkManager"},
	}
	bus := "unix:path=" + socket
	path, args, nmEnv := nmrun.Command(nmDir, bus)
	daemons := []nodeinit.Daemon{
		{Name: "dbus", Path: "/usr/bin/dbus-daemon", Args: []string{"--config-file=" + filepath.Join(nmDir, "bus.conf"), "--nofork", "--nopidfile"},
			Env: env, Log: filepath.Join(dir, "dbus.log"), Ready: socket},
		// Not waited for: the kubelet and containerd need nothing of it,
		// and eth0's lease is waited for by the lab (waitLeases).
		{Name: "NetworkManager", Path: path, Args: args, Env: nmEnv, Log: filepath.Join(dir, "NetworkManager.log"), PrivateMounts: true},
	}
	return mounts, daemons, nil
}

// eth0Keyfile is the node's primary NIC as an installer configures it:
// DHCPv4 with the node's name, IPv6 by router advertisements and DHCPv6.
// The DHCPv6 DUID is made of eth0's MAC: NetworkManager's default derives
// it from /etc/machine-id, which the lab's nodes share, and the switch
// would then give every node the same IPv6 lease.
func eth0Keyfile(node string) string {
	sum := sha256.Sum256([]byte("knmstate-lab/" + node + "/eth0"))
	uuid := fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	return `# written by knmstate lab: the node's primary NIC, configured by DHCP
[connection]
id=eth0
uuid=` + uuid + `
type=ethernet
interface-name=eth0
autoconnect=true

[ipv4]
method=auto
dhcp-hostname=` + node + `

[ipv6]
method=auto
dhcp-duid=ll
dhcp-hostname=` + node + `
`
}

// execEnv is the environment a command run on node n (lab exec) gets on
// top of the caller's: the node's NetworkManager bus, so nmcli talks to
// that node's NetworkManager as on the node itself.
func execEnv(n *NodeState) []string {
	if n.NetworkManagerBus == "" {
		return nil
	}
	return []string{"DBUS_SYSTEM_BUS_ADDRESS=" + n.NetworkManagerBus}
}
