package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
)

// Each node's own Open vSwitch (database and vswitchd), when the machine
// has Debian's openvswitch-switch.

// ovsAvailable says whether the nodes get their own Open vSwitch: in the
// default mode, where the handler processes reach the node's database
// socket in the lab directory, and in guest mode with the NetworkManager
// backend (OVS and NetworkManager with its OVS plugin in the guest's
// image). With the NetworkManager backend, the nodes' NetworkManager runs
// with its OVS plugin (hack/nm-ovs.sh's build: Debian's has none). Without
// what that needs the lab refuses to start unless asked for a lab without
// it (NoOVS), so the OVS tests never quietly turn into checks of the
// refusal. (A kubelet-mode handler pod would need the socket under the
// node's /run/openvswitch: not done; the guest with the kernel backend
// has no Open vSwitch, to keep kernele2e's minutes.)
func (s *supervisor) ovsAvailable() (bool, error) {
	nm := s.opts.Backend == BackendNetworkManager
	switch {
	case s.opts.NoOVS:
		s.note("asked for a lab without Open vSwitch (--no-ovs): OVS policies fail saying so")
		return false, nil
	case s.opts.Kubelet:
		s.note("kubelet mode: the nodes have no Open vSwitch (OVS policies fail saying so)")
		return false, nil
	case s.opts.Kernel != "" && (!nm || s.opts.NMOVSBuild == ""):
		s.note("guest mode: the nodes have no Open vSwitch (OVS policies fail saying so)")
		return false, nil
	}
	for _, bin := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd"} {
		if _, err := exec.LookPath(bin); err != nil {
			return false, fmt.Errorf("no %s (Debian's openvswitch-switch; make setup installs it): the nodes would have no Open vSwitch; ask for a lab without it with --no-ovs", bin)
		}
	}
	if _, err := os.Stat(ovsrun.DefaultSchema); err != nil {
		return false, fmt.Errorf("no Open vSwitch schema (%w): ask for a lab without Open vSwitch with --no-ovs", err)
	}
	if nm {
		if _, err := s.networkManagerOVSBuild(); err != nil {
			return false, fmt.Errorf("%w; or ask for a lab without Open vSwitch with --no-ovs", err)
		}
	}
	return true, nil
}

// ovsDatapath is the datapath_type of the nodes' OVS bridges: netdev
// (userspace) on this machine, whose kernel has no openvswitch module;
// "" (OVS's default, the kernel datapath) in the guest, whose Debian
// kernel loads it: there NetworkManager's OVS interfaces are the kernel's
// internal ports, as on a real node (its DHCP client gets no lease on the
// userspace datapath's taps: docs/lab.md).
func (o Options) ovsDatapath() string {
	if o.Kernel != "" {
		return ""
	}
	return "netdev"
}

// networkManagerOVSBuild is the NetworkManager with its OVS plugin the
// nodes run (Options.NMOVSBuild).
func (s *supervisor) networkManagerOVSBuild() (*nmrun.Build, error) {
	return networkManagerOVSBuild(s.opts)
}

func networkManagerOVSBuild(o Options) (*nmrun.Build, error) {
	if o.NMOVSBuild != "" {
		return nmrun.BuildAt(o.NMOVSBuild)
	}
	return nmrun.OVSBuild()
}

// startOVS gives the node its own Open vSwitch: ovsdb-server and
// ovs-vswitchd (userspace datapath: bridges need no openvswitch module)
// with their database, sockets and logs in the node's ovs directory and
// ovs-vswitchd in the node's network namespace, stopped by the teardown.
func (s *supervisor) startOVS(ctx context.Context, n *NodeState, teardown *[]func()) error {
	t := time.Now()
	dir := s.ovsDir(n.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("node %s ovs dir: %w", n.Name, err)
	}
	o, err := ovsrun.Start(ctx, ovsrun.Options{Dir: dir, NetNS: n.NetNS, StartTimeout: s.scale(20 * time.Second)})
	if err != nil {
		return fmt.Errorf("node %s: Open vSwitch: %w", n.Name, err)
	}
	s.ovsMu.Lock()
	if s.ovs == nil {
		s.ovs = map[string]*ovsrun.OVS{}
	}
	s.ovs[n.Name] = o
	s.ovsMu.Unlock()
	if teardown != nil {
		// Whichever instance runs then (a reboot replaces it).
		name := n.Name
		*teardown = append(*teardown, func() { s.stopOVS(name) })
	}
	if o.Address != n.OVSDB {
		return fmt.Errorf("node %s: Open vSwitch listens on %s, not %s", n.Name, o.Address, n.OVSDB)
	}
	s.step("node "+n.Name+": Open vSwitch (ovsdb-server, ovs-vswitchd)", t)
	return nil
}

// stopOVS stops the node's Open vSwitch, if it runs.
func (s *supervisor) stopOVS(node string) {
	s.ovsMu.Lock()
	o := s.ovs[node]
	delete(s.ovs, node)
	s.ovsMu.Unlock()
	if o == nil {
		return
	}
	if err := o.Stop(); err != nil {
		s.log.Error("stop Open vSwitch", "node", node, "err", err)
	}
}

// ovsDir is the directory of a node's Open vSwitch.
func (s *supervisor) ovsDir(node string) string {
	return filepath.Join(s.opts.Dir, "nodes", node, "ovs")
}

// nodeOVSDB is the node's OVS database for nmstatectl: its own, or none
// (never the machine's default socket).
func nodeOVSDB(n *NodeState) string {
	if n.OVSDB == "" {
		return "none"
	}
	return n.OVSDB
}
