package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// knmstate's components as processes: a handler per node on this
// machine's side, the controller in the switch namespace.

// available reports whether the knmstate binary implements a component
// (its flags include --kubeconfig), so the lab also runs with a binary
// where it is still a stub.
func (s *supervisor) available(component string) bool {
	out, err := exec.Command(s.opts.Binary, component, "--help").CombinedOutput()
	return err == nil && strings.Contains(string(out), "--kubeconfig")
}

func (s *supervisor) startComponents(env *testenv.Env, sw *labnet.Switch, nodes []NodeState) error {
	if err := writeHandlerKubeconfigs(env, s.opts.Dir, nodes, ""); err != nil {
		return err
	}
	if err := s.startHandlers(nodes, s.where, s.hostSpawner); err != nil {
		return err
	}
	// The controller runs inside the switch namespace, next to the API
	// server, like a control-plane pod. Its metrics on the switch
	// namespace's loopback (docs/metrics.md): `ip netns exec SWITCH curl
	// 127.0.0.1:8089/metrics`.
	s.mu.Lock()
	s.state.ControllerMetrics = ControllerMetricsAddress
	s.mu.Unlock()
	return s.startController(env, "switch netns "+sw.NS.Name, s.swSpawner, ControllerMetricsAddress)
}

// writeHandlerKubeconfigs writes each node's handler kubeconfig to
// DIR/nodes/NAME/kubeconfig (n.Kubeconfig): the API server as the node
// reaches it, through its NIC (server, when set, replaces the address).
func writeHandlerKubeconfigs(env *testenv.Env, dir string, nodes []NodeState, server string) error {
	for i := range nodes {
		n := &nodes[i]
		ndir := filepath.Join(dir, "nodes", n.Name)
		if err := os.MkdirAll(ndir, 0o700); err != nil {
			return fmt.Errorf("node %s dir: %w", n.Name, err)
		}
		cfg, err := env.UserConfig("knmstate-handler:"+n.Name, "system:masters")
		if err != nil {
			return err
		}
		cfg.Dial = nil // the handler dials from its node's namespace
		if server != "" {
			cfg.Host = server
		}
		n.Kubeconfig = filepath.Join(ndir, "kubeconfig")
		if err := testenv.WriteKubeconfig(n.Kubeconfig, cfg); err != nil {
			return err
		}
	}
	return nil
}

// startHandlers starts one `knmstate handler` per node, from spawner (on
// the side named side: "host" or "guest"), each reaching into its node:
// the kernel through --netns, the API through the node's NIC
// (--dial-netns) with the kubeconfig at n.Kubeconfig.
func (s *supervisor) startHandlers(nodes []NodeState, side string, spawner *spawner) error {
	o := s.opts
	if !s.available("handler") {
		s.note("`%s handler` is not implemented in this binary: nodes run without a handler and have no NodeNetworkState", o.Binary)
		return nil
	}
	out, _ := exec.Command(o.Binary, "handler", "--help").CombinedOutput()
	s.handlerHelp = string(out)
	for i := range nodes {
		p, err := s.handlerProc(&nodes[i], side, spawner)
		if err != nil {
			return err
		}
		s.start(p)
	}
	s.mu.Lock()
	s.state.Nodes = append([]NodeState(nil), nodes...)
	s.mu.Unlock()
	return nil
}

// handlerProc is node n's `knmstate handler` process.
func (s *supervisor) handlerProc(n *NodeState, side string, spawner *spawner) (*proc, error) {
	o := s.opts
	help := s.handlerHelp
	dir := filepath.Join(o.Dir, "nodes", n.Name)
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
		return nil, fmt.Errorf("node %s dir: %w", n.Name, err)
	}
	args := []string{"handler", "--node", n.Name, "--kubeconfig", n.Kubeconfig,
		"--netns", n.NetNS, "--dial-netns", n.NetNS, "--resolv-conf", n.ResolvConf}
	if strings.Contains(help, "--uts-ns") {
		args = append(args, "--uts-ns", n.UTSNS)
	}
	// The node's own OVS, or none: never the machine's default
	// socket.
	if strings.Contains(help, "--ovsdb") {
		args = append(args, "--ovsdb="+n.OVSDB)
		if n.OVSDB != "" && o.ovsDatapath() != "" {
			args = append(args, "--ovs-datapath="+o.ovsDatapath())
		}
	}
	if strings.Contains(help, "--state-dir") {
		args = append(args, "--state-dir", filepath.Join(dir, "state"))
	}
	// The node's `nmstatectl service` owns DHCP/autoconf; policy
	// applies hand it their dynamic settings.
	if strings.Contains(help, "--runtime-state-dir") && o.Nmstatectl != "" && o.Nmstatectl != NoNodeRuntime {
		args = append(args, "--runtime-state-dir", s.nodedStateDir(n.Name))
	}
	// The DNS probe asks for a name the lab's own DNS serves (the lab
	// has no Internet, so upstream's root-servers.net never resolves:
	// the probe would fail its check before every apply, cost a second
	// each time and never guard a DNS change). HandlerArgs come after
	// and may override it.
	if strings.Contains(help, "--probe-dns-host") {
		args = append(args, "--probe-dns-host="+apiHost)
	}
	// One handler per node, as the DaemonSet has it: the node's lock
	// Lease in kube-node-lease.
	if strings.Contains(help, "--node-lock-namespace") {
		args = append(args, "--node-lock-namespace=kube-node-lease", "--node-lock-identity=lab-handler-"+n.Name)
	}
	if n.NetworkManagerBus != "" {
		args = append(args, "--backend", BackendNetworkManager, "--dbus-address", n.NetworkManagerBus)
	}
	args = append(args, o.HandlerArgs...)
	return &proc{name: "handler/" + n.Name, where: side + " (netns " + n.NetNS + ")", bin: o.Binary, args: args,
		logPath: filepath.Join(dir, "handler.log"), spawner: spawner}, nil
}

// startController starts `knmstate controller` from spawner (where says
// where that is), with an admin kubeconfig of env as it is reached there,
// serving its metrics (plain HTTP) at metrics.
func (s *supervisor) startController(env *testenv.Env, where string, spawner *spawner, metrics string) error {
	o := s.opts
	if !s.available("controller") {
		s.note("`%s controller` is not implemented in this binary: the lab runs without it", o.Binary)
		return nil
	}
	cfg, err := env.UserConfig("knmstate-controller", "system:masters")
	if err != nil {
		return err
	}
	cfg.Dial = nil
	kc := filepath.Join(o.Dir, "controller.kubeconfig")
	if err := testenv.WriteKubeconfig(kc, cfg); err != nil {
		return err
	}
	s.start(&proc{name: "controller", where: where, bin: o.Binary,
		args:    []string{"controller", "--kubeconfig", kc, "--metrics-bind-address=" + metrics, "--metrics-secure=false"},
		logPath: filepath.Join(o.Dir, "controller.log"), spawner: spawner})
	return nil
}
