package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/pkg/nsrun"
)

// What runs on a node besides the handler: the node runtime (`nmstatectl
// service`: DHCP clients, DNS) and, with the NetworkManager backend, a
// private NetworkManager.

// startNetworkManagers runs one private NetworkManager per node (its own
// bus and state under the node's directory) with eth0's DHCP profile
// (eth0Keyfile, written once: a profile the node changed is the node's),
// and waits for eth0's leases: NetworkManager, not a node runtime, owns
// the node's link to the API server.
func (s *supervisor) startNetworkManagers(ctx context.Context, sw *labnet.Switch, nodes []NodeState, teardown *[]func()) error {
	for i := range nodes {
		if err := s.startNetworkManager(ctx, &nodes[i], teardown); err != nil {
			return err
		}
	}
	if err := waitLeases(ctx, sw, nodes, s.scale(time.Minute)); err != nil {
		return fmt.Errorf("%w (NetworkManager configures eth0: nodes/*/nm/NetworkManager.log)", err)
	}
	return nil
}

// startNetworkManager starts the node's NetworkManager and records it for
// lab reboot; with teardown, whichever instance runs then is stopped by it.
func (s *supervisor) startNetworkManager(ctx context.Context, n *NodeState, teardown *[]func()) error {
	dir := filepath.Join(s.opts.Dir, "nodes", n.Name, "nm")
	if err := writeEth0Profile(filepath.Join(dir, "system-connections"), n.Name); err != nil {
		return err
	}
	opts := nmrun.Options{NetNS: nsrun.File(n.NetNS), Dir: dir}
	if n.OVSDB != "" {
		// The node's Open vSwitch (startOVS), through the OVS plugin.
		b, err := s.networkManagerOVSBuild()
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		opts.OVS, opts.Build = s.ovsDir(n.Name), b
	}
	in, err := nmrun.Start(ctx, opts)
	s.nmMu.Lock()
	if s.nm == nil {
		s.nm = map[string]*nmrun.Instance{}
	}
	s.nm[n.Name] = in
	s.nmMu.Unlock()
	if teardown != nil {
		name := n.Name
		*teardown = append(*teardown, func() { s.stopNetworkManager(name) })
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	n.NetworkManagerBus = in.Bus
	n.NetworkManagerResolvConf = filepath.Join(in.RunDir, "resolv.conf")
	return nil
}

// stopNetworkManager stops the node's NetworkManager and its bus, if they
// run, and reports whether they did.
func (s *supervisor) stopNetworkManager(node string) bool {
	s.nmMu.Lock()
	in := s.nm[node]
	delete(s.nm, node)
	s.nmMu.Unlock()
	if in == nil {
		return false
	}
	if err := in.Stop(); err != nil {
		s.log.Error("stop NetworkManager", "node", node, "err", err)
	}
	return true
}

// writeEth0Profile writes eth0's profile into the keyfile directory
// unless it is there already.
func writeEth0Profile(keyfiles, node string) error {
	if err := os.MkdirAll(keyfiles, 0o700); err != nil {
		return fmt.Errorf("node %s: %w", node, err)
	}
	profile := filepath.Join(keyfiles, "eth0.nmconnection")
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		return err
	}
	if err := os.WriteFile(profile, []byte(eth0Keyfile(node)), 0o600); err != nil {
		return fmt.Errorf("node %s: eth0 profile: %w", node, err)
	}
	return nil
}

// nodeConfig is the state file the node runtime applies at start: eth0 by
// DHCPv4, DHCPv6 and SLAAC, as an installer would configure a node's
// primary NIC.
const nodeConfig = `# written by knmstate lab: the node's primary NIC, configured by DHCP
interfaces:
- name: eth0
  type: ethernet
  state: up
  ipv4:
    enabled: true
    dhcp: true
    dhcp-custom-hostname: %[1]s
  ipv6:
    enabled: true
    dhcp: true
    dhcp-custom-hostname: %[1]s
    autoconf: true
`

// nodedStateDir is the node runtime's state directory. In kubelet mode it
// is the node's /var/lib/knmstate/noded, where the handler's pod finds it
// (a hostPath volume).
func (s *supervisor) nodedStateDir(node string) string {
	dir := filepath.Join(s.opts.Dir, "nodes", node)
	if s.opts.Kubelet {
		return filepath.Join(dir, "var", "lib", "knmstate", "noded")
	}
	return filepath.Join(dir, "noded")
}

// startNodeRuntime runs the node's network service (`nmstatectl service`,
// the node runtime of pkg/noded: DHCP clients, leases, DNS) on the node's
// namespaces, applying nodeConfig at start.
func (s *supervisor) startNodeRuntime(n *NodeState) error {
	dir := filepath.Join(s.opts.Dir, "nodes", n.Name)
	cfgDir := filepath.Join(dir, "config")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		return fmt.Errorf("node %s config dir: %w", n.Name, err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "00-eth0.yml"), []byte(fmt.Sprintf(nodeConfig, n.Name)), 0o600); err != nil {
		return fmt.Errorf("node %s config: %w", n.Name, err)
	}
	var args []string
	if s.opts.Nmstatectl == s.opts.Binary {
		args = []string{"nmstatectl"} // knmstate carries nmstatectl
	}
	s.start(&proc{
		name: "noded/" + n.Name, where: s.where + " (netns " + n.NetNS + ")", bin: s.opts.Nmstatectl,
		args: append(args, "--netns", n.NetNS, "--resolv-conf", n.ResolvConf, "--uts-ns", n.UTSNS, "--ovsdb", nodeOVSDB(n), "--ovs-datapath", "netdev",
			"--state-dir", s.nodedStateDir(n.Name), "service", "--config", cfgDir),
		logPath: filepath.Join(dir, "noded.log"), spawner: s.hostSpawner,
	})
	return nil
}
