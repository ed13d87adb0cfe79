package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
	"github.com/knmstate/knmstate/pkg/nsrun"
)

// apiName is the API server's name in the lab's DNS zone.
const apiName = "api"

// ControllerMetricsAddress is where the controller of a lab in process
// mode serves its metrics (plain HTTP), inside the switch namespace.
const ControllerMetricsAddress = "127.0.0.1:8089"

// apiHost is the API server's fully qualified name in the lab's DNS.
const apiHost = apiName + ".lab.example"

// componentNamespace is where knmstate's components live in a cluster.
const componentNamespace = "nmstate"

// supervisor owns one running lab.
type supervisor struct {
	opts Options
	log  *slog.Logger
	// where is the side processes run on: "host", or "guest" for the
	// agent of guest mode.
	where string
	// cables are the guest's NIC pairs for the nodes' NICs (guest mode).
	cables []labnet.Cable

	mu    sync.Mutex
	state State
	procs []*proc
	// pubMu serialises writers of the state file (one temp file name).
	pubMu sync.Mutex

	// guestProcs are the processes of the guest (guest mode), as its
	// agent last reported them.
	guestProcs []Process
	// guestExited gets the guest's qemu status if it ends.
	guestExited chan string

	// Children: started from these spawners, stopped through procCancel.
	hostSpawner, swSpawner *spawner
	procCtx                context.Context
	procCancel             context.CancelFunc
	procWG                 sync.WaitGroup

	// sw is the lab's switch and ovs each node's running Open vSwitch
	// (default mode), for lab reboot; rebootMu serialises reboots.
	sw       *labnet.Switch
	ovsMu    sync.Mutex
	ovs      map[string]*ovsrun.OVS
	rebootMu sync.Mutex
	// handlerHelp is `knmstate handler --help`: the flags it has.
	handlerHelp string
	// env is the control plane (lab kill apiserver, etcd); faultMu
	// serialises faults of the control plane.
	env     *testenv.Env
	faultMu sync.Mutex
}

// start runs p under the supervisor until the lab stops.
func (s *supervisor) start(p *proc) {
	p.changed, p.stopped = s.publish, make(chan struct{})
	ctx, cancel := context.WithCancel(s.procCtx)
	p.cancel = cancel
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	s.procWG.Add(1)
	go func() { defer s.procWG.Done(); defer cancel(); p.run(ctx) }()
}

// stop ends the supervised process named name (as the lab's teardown
// does: SIGTERM, then SIGKILL) and forgets it; false if there is none.
func (s *supervisor) stop(name string) bool {
	s.mu.Lock()
	var p *proc
	for i, q := range s.procs {
		if q.name == name {
			p = q
			s.procs = append(s.procs[:i:i], s.procs[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	if p == nil {
		return false
	}
	p.cancel()
	<-p.stopped
	s.publish()
	return true
}

// Run is the supervisor (`knmstate lab run`): it builds the lab in
// opts.Dir, publishes its state, keeps it running until ctx ends and then
// removes everything it created except its log. Up starts it detached.
func Run(ctx context.Context, opts Options) error {
	begin := time.Now()
	opts, err := opts.withDefaults()
	if err != nil {
		return fmt.Errorf("lab options: %w", err)
	}
	s := &supervisor{
		opts:  opts,
		where: "host",
		log:   slog.New(slog.NewTextHandler(os.Stderr, nil)),
		state: State{
			Name: opts.Name, Dir: opts.Dir, PID: os.Getpid(),
			Phase: PhaseStarting, StartedAt: begin,
		},
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return fmt.Errorf("lab dir: %w", err)
	}
	pid := filepath.Join(opts.Dir, pidFile)
	if err := os.WriteFile(pid, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("lab pidfile: %w", err)
	}
	defer os.Remove(pid)
	defer os.Remove(filepath.Join(opts.Dir, stateFile))
	s.publish()

	var teardown []func()
	defer func() {
		s.mu.Lock()
		s.state.Phase = PhaseStopping
		s.mu.Unlock()
		s.publish()
		for i := len(teardown) - 1; i >= 0; i-- {
			teardown[i]()
		}
		s.log.Info("lab stopped")
	}()
	err = s.build(ctx, begin, &teardown)
	if err != nil {
		s.mu.Lock()
		s.state.Phase, s.state.Error = PhaseFailed, err.Error()
		s.mu.Unlock()
		s.publish()
		s.log.Error("lab failed", "err", err)
		if ctx.Err() != nil {
			return nil // stopped during start-up
		}
		return err
	}
	stopControl, err := s.serveControl(ctx)
	if err != nil {
		s.log.Error("no control socket: lab reboot will not work", "err", err)
	} else {
		defer stopControl()
	}
	<-ctx.Done()
	s.log.Info("stopping lab")
	return nil
}

// scale stretches a wait for the mode the lab runs in.
func (s *supervisor) scale(d time.Duration) time.Duration { return s.opts.scale(d) }

// step times one start-up step.
func (s *supervisor) step(name string, begin time.Time) { s.addStep(name, time.Since(begin)) }

// addStep records a start-up step that took d.
func (s *supervisor) addStep(name string, d time.Duration) {
	s.mu.Lock()
	s.state.Steps = append(s.state.Steps, Step{Name: name, Duration: Duration(d)})
	s.mu.Unlock()
	s.log.Info("step done", "step", name, "duration", d)
}

func (s *supervisor) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.state.Notes = append(s.state.Notes, msg)
	s.mu.Unlock()
	s.log.Warn(msg)
}

// snapshot is the lab's state with the processes' current status.
func (s *supervisor) snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state
	st.Processes = nil
	for _, p := range s.procs {
		st.Processes = append(st.Processes, p.snapshot())
	}
	st.Processes = append(st.Processes, s.guestProcs...)
	return st
}

// publish writes the state file (with the processes' current status).
func (s *supervisor) publish() {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	st := s.snapshot()
	if err := writeState(&st); err != nil {
		s.log.Error("publish state", "err", err)
	}
}

// setPhase sets and publishes the lab's phase (and error, for Failed).
func (s *supervisor) setPhase(phase, err string) {
	s.mu.Lock()
	s.state.Phase, s.state.Error = phase, err
	s.mu.Unlock()
	s.publish()
}

func (s *supervisor) build(ctx context.Context, begin time.Time, teardown *[]func()) error {
	o := s.opts
	if o.Kernel != "" {
		if err := s.buildGuest(ctx, teardown); err != nil {
			return err
		}
		s.ready(begin)
		return nil
	}
	if err := checkNamespacesFree(o.Name); err != nil {
		return err
	}

	// The switch first: the API server binds to its gateway address.
	t := time.Now()
	nodes := planNodes(o.Nodes)
	sw, err := s.newSwitch(ctx, nodes, teardown)
	if err != nil {
		return err
	}
	s.sw = sw
	s.step("switch namespace, bridge, dnsmasq", t)

	// The control plane and the nodes' namespaces in parallel: the API
	// server's start-up dominates.
	t = time.Now()
	envc := make(chan envResult, 1)
	go func() {
		topts := testenv.Options{
			RootDir:   o.Dir,
			APIServer: o.APIServer,
			NetNS:     sw.NS.Path,
			Address:   lanPrefix.Addr().String(),
			Hosts:     []string{apiHost},
			// Who wrote what: the user guide's troubleshooting and the
			// tests that count a component's writes read it.
			AuditWrites: true,
		}
		if o.Kubelet {
			topts.Kubelets, topts.ServiceCIDR = true, serviceCIDR
			// Nothing of knmstate: its bundle brings the CRDs.
			topts.SkipInstall = o.Install == InstallNone
		}
		e, err := testenv.Start(ctx, topts)
		if err == nil {
			s.step("control plane (etcd, kube-apiserver, CRDs, admission policy)", t)
		}
		envc <- envResult{e, err}
	}()
	var env *testenv.Env
	envDone := false
	waitEnv := func() error {
		if !envDone {
			r := <-envc
			env, envDone = r.env, true
			if r.err != nil {
				return r.err
			}
			s.env = env
			*teardown = append(*teardown, func() {
				if err := env.Stop(); err != nil {
					s.log.Error("stop control plane", "err", err)
				}
			})
		}
		if env == nil {
			return errors.New("control plane did not start")
		}
		return nil
	}
	// The control plane must be stopped even when a node step fails.
	defer func() {
		if !envDone {
			if r := <-envc; r.env != nil {
				_ = r.env.Stop()
			}
		}
	}()

	if err := s.addNodes(ctx, sw, nodes, teardown); err != nil {
		return err
	}

	if err := waitEnv(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	*teardown = append(*teardown, cancel)

	// kubectl's way in.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("forwarder: %w", err)
	}
	fwd := newForwarder(ln, strings.TrimPrefix(env.Host(), "https://"), env.Config.Dial, s.log)
	fwdDone := make(chan struct{})
	go func() { fwd.serve(ctx); close(fwdDone) }()
	*teardown = append(*teardown, func() { cancel(); <-fwdDone })
	kubeconfig := filepath.Join(o.Dir, kubeconfigFile)
	host := rest.CopyConfig(env.Config)
	host.Host, host.Dial = "https://"+fwd.Addr(), nil
	if err := testenv.WriteKubeconfig(kubeconfig, host); err != nil {
		return err
	}
	s.mu.Lock()
	s.state.Kubeconfig, s.state.Forwarder, s.state.APIServer = kubeconfig, fwd.Addr(), env.Host()
	s.state.AuditLog = env.AuditLog()
	s.mu.Unlock()

	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	// The namespace knmstate is deployed in (the controller's leader
	// election lease lives there).
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: componentNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", componentNamespace, err)
	}
	if o.Kubelet {
		if err := s.buildKubelet(ctx, cancel, env, sw, kube, nodes, teardown); err != nil {
			return err
		}
	} else if err := s.buildProcesses(ctx, env, sw, kube, nodes, teardown); err != nil {
		return err
	}
	s.ready(begin)
	return nil
}

// ready marks the lab Ready.
func (s *supervisor) ready(begin time.Time) {
	s.mu.Lock()
	s.state.Phase = PhaseReady
	s.state.ReadyAfter = Duration(time.Since(begin))
	kubeconfig := s.state.Kubeconfig
	s.mu.Unlock()
	s.publish()
	s.log.Info("lab ready", "after", time.Since(begin), "kubeconfig", kubeconfig)
}

// lanPrefix is the switch's IPv4 network; the gateway (the switch's own
// address) is where the API server listens in every mode.
var lanPrefix = netip.MustParsePrefix("192.0.2.1/24")

// switchVLANs are the tagged networks of the switch in guest mode, with
// DHCP: upstream's examples and e2e tests put VLANs 102 and 103 on the
// nodes' NICs and bonds.
var switchVLANs = []labnet.VLAN{
	{ID: 102, Gateway4: netip.MustParsePrefix("10.102.0.1/24")},
	{ID: 103, Gateway4: netip.MustParsePrefix("10.103.0.1/24")},
}

// checkNamespacesFree fails when namespaces of a lab of this name exist.
func checkNamespacesFree(name string) error {
	names, err := labnet.Namespaces(name)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("namespaces of a lab named %s exist already (%s): stop that lab first (knmstate lab down --name %s, or --dir of that lab)",
			name, strings.Join(names, ", "), name)
	}
	return nil
}

// planNodes names the lab's n nodes and gives each its role and address
// (what the switch's DHCP server reserves for its eth0).
func planNodes(n int) []NodeState {
	nodes := make([]NodeState, n)
	for i := range nodes {
		role := RoleWorker
		if i == 0 {
			role = RoleControlPlane
		}
		b := lanPrefix.Addr().As4()
		b[3] = byte(11 + i)
		nodes[i] = NodeState{Name: NodeName(i), Role: role, Address: netip.AddrFrom4(b).String()}
	}
	return nodes
}

// newSwitch creates the switch namespace with its bridge and dnsmasq
// (reservations for the nodes' eth0 MACs) and the spawners children start
// from; the teardown removes them.
func (s *supervisor) newSwitch(ctx context.Context, nodes []NodeState, teardown *[]func()) (*labnet.Switch, error) {
	o := s.opts
	var extra []string
	for _, n := range nodes {
		// The address the node's DHCP client gets (by eth0's MAC).
		extra = append(extra, fmt.Sprintf("dhcp-host=%s,%s,%s", n.mac(), n.Name, n.Address))
	}
	var vlans []labnet.VLAN
	if o.Kernel != "" {
		vlans = switchVLANs // the switch needs 8021q: the guest's kernel
	}
	sw, err := labnet.NewSwitch(ctx, labnet.Options{
		Cables:         s.cables,
		VLANs:          vlans,
		Gateway4:       lanPrefix,
		Name:           o.Name,
		Dir:            o.Dir,
		NodeNamespaces: true,
		Records:        map[string]netip.Addr{apiHost: lanPrefix.Addr(), registryName + ".lab.example": lanPrefix.Addr()},
		DnsmasqExtra:   extra,
		// The switch announces itself over LLDP (lldpd), so lldp.enabled
		// on a node's NIC lists it as neighbour.
		LLDP: true,
		// The NICs are born unconfigured: no SLAAC from the switch's router
		// advertisements. eth0, the primary NIC, accepts them (addNode).
		NodeSysctls: map[string]string{
			"net/ipv6/conf/default/accept_ra": "0",
			"net/ipv6/conf/default/autoconf":  "0",
		},
	})
	if err != nil {
		return nil, err
	}
	*teardown = append(*teardown, func() {
		if err := sw.Close(); err != nil {
			s.log.Error("remove switch", "err", err)
		}
	})
	s.mu.Lock()
	s.state.SwitchNS, s.state.SwitchDir = sw.NS.Name, sw.Dir
	s.mu.Unlock()
	if err := s.startSpawners(ctx, sw.NS.Path, teardown); err != nil {
		return nil, err
	}
	return sw, nil
}

// startSpawners makes the spawners children start from (this machine's
// side, and the switch namespace when swNS is set) and the context they
// run under; the teardown stops every child.
func (s *supervisor) startSpawners(ctx context.Context, swNS string, teardown *[]func()) error {
	var err error
	if s.hostSpawner, err = newSpawner(""); err != nil {
		return err
	}
	if swNS != "" {
		if s.swSpawner, err = newSpawner(swNS); err != nil {
			s.hostSpawner.close()
			return err
		}
	}
	s.procCtx, s.procCancel = context.WithCancel(context.WithoutCancel(ctx))
	*teardown = append(*teardown, func() {
		// Every child gets SIGTERM at once; the spawners' threads end
		// once all are reaped.
		s.procCancel()
		s.procWG.Wait()
		s.hostSpawner.close()
		if s.swSpawner != nil {
			s.swSpawner.close()
		}
	})
	return nil
}

// addNodes creates the nodes' namespaces and NICs, starts their Open
// vSwitch and node runtimes and waits for their eth0 leases.
func (s *supervisor) addNodes(ctx context.Context, sw *labnet.Switch, nodes []NodeState, teardown *[]func()) error {
	tn := time.Now()
	dhcp := s.opts.Nmstatectl != "" && s.opts.Nmstatectl != NoNodeRuntime
	if !dhcp {
		s.note("no node runtime (nmstatectl): eth0 addresses are installed statically (the address DHCP would give), no DHCP client runs")
	}
	withOVS := s.ovsAvailable()
	for i := range nodes {
		if withOVS {
			// Known before the node runtime starts, which connects
			// once the database listens.
			nodes[i].OVSDB = "unix:" + filepath.Join(s.ovsDir(nodes[i].Name), "db.sock")
		}
		if err := s.addNode(sw, &nodes[i], lanPrefix, dhcp); err != nil {
			return err
		}
		if withOVS {
			if err := s.startOVS(ctx, &nodes[i], teardown); err != nil {
				return err
			}
		}
	}
	s.mu.Lock()
	s.state.Nodes = append([]NodeState(nil), nodes...)
	s.mu.Unlock()
	s.publish()
	s.step(fmt.Sprintf("%d node namespaces with eth0..eth2", len(nodes)), tn)
	if dhcp {
		tn = time.Now()
		if err := waitLeases(ctx, sw, nodes, s.scale(time.Minute)); err != nil {
			return err
		}
		s.step("node runtimes: eth0 configured by DHCP", tn)
	}
	if s.opts.FirstBootDir != "" {
		if err := s.installFirstBootFiles(nodes); err != nil {
			return err
		}
		for i := range nodes {
			s.firstBoot(ctx, &nodes[i])
		}
	}
	return nil
}

// ovsAvailable says whether the nodes get their own Open vSwitch: in the
// default mode, where the handler processes reach the node's database
// socket in the lab directory, when Debian's openvswitch-switch is
// installed. (A kubelet-mode handler pod would need the socket under the
// node's /run/openvswitch, which is the machine's: not done.)
func (s *supervisor) ovsAvailable() bool {
	if s.opts.Kubelet {
		s.note("kubelet mode: the nodes have no Open vSwitch (OVS policies fail saying so)")
		return false
	}
	if s.opts.Backend == BackendNetworkManager {
		return false // the handlers drive NetworkManager, which makes no OVS here
	}
	for _, bin := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd"} {
		if _, err := exec.LookPath(bin); err != nil {
			s.note("no %s (Debian's openvswitch-switch): the nodes have no Open vSwitch (OVS policies fail saying so)", bin)
			return false
		}
	}
	if _, err := os.Stat(ovsrun.DefaultSchema); err != nil {
		s.note("no OVS schema (%v): the nodes have no Open vSwitch", err)
		return false
	}
	return true
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

// createNodes creates the nodes' Node objects and keeps them Ready (the
// teardown stops the heartbeat).
func (s *supervisor) createNodes(ctx context.Context, kube kubernetes.Interface, nodes []NodeState, teardown *[]func()) error {
	t := time.Now()
	for _, n := range nodes {
		if err := createNode(ctx, kube, n); err != nil {
			return err
		}
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		keepReady(ctx, kube, nodes, s.opts.Heartbeat, func(msg string, args ...any) { s.log.Error(msg, args...) })
		close(done)
	}()
	*teardown = append(*teardown, func() { stop(); <-done })
	s.step("node objects", t)
	return nil
}

// buildProcesses is the default mode: Node objects kept Ready by the
// lab, a handler process per node on this machine's side, the controller
// in the switch namespace.
func (s *supervisor) buildProcesses(ctx context.Context, env *testenv.Env, sw *labnet.Switch, kube kubernetes.Interface, nodes []NodeState, teardown *[]func()) error {
	if err := s.createNodes(ctx, kube, nodes, teardown); err != nil {
		return err
	}
	if s.opts.Backend == BackendNetworkManager {
		t := time.Now()
		if err := s.startNetworkManagers(ctx, nodes, teardown); err != nil {
			return err
		}
		s.step("NetworkManager per node", t)
	}

	// Handlers (one per node) and the controller.
	t := time.Now()
	if err := s.startComponents(env, sw, nodes); err != nil {
		return err
	}
	s.publish()
	handlers := s.available("handler")
	if handlers {
		dyn, err := dynamic.NewForConfig(env.Config)
		if err != nil {
			return err
		}
		if err := waitNNS(ctx, dyn, nodes, s.scale(2*time.Minute)); err != nil {
			return err
		}
		s.step("handlers: every node has a NodeNetworkState", t)
	}
	return nil
}

// nodeNICs are every node's NICs; eth0 is the primary one.
var nodeNICs = []string{"eth0", "eth1", "eth2"}

// addNode creates a node's namespaces and NICs and gives eth0 the address
// the switch's DHCP server reserves for the node, with the default route.
func (s *supervisor) addNode(sw *labnet.Switch, n *NodeState, gw4 netip.Prefix, dhcp bool) error {
	node, err := sw.AddNode(n.Name, nodeNICs...)
	if err != nil {
		return err
	}
	n.NetNS, n.MountNS, n.UTSNS, n.ResolvConf, n.NICs = node.NS.Name, node.MountNS, node.UTSNS, node.ResolvConf, node.NICs
	eth0, err := node.NS.Netlink.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("node %s: eth0: %w", n.Name, err)
	}
	// A fixed MAC, so the switch's DHCP reservation finds the node.
	if err := node.NS.Netlink.LinkSetHardwareAddr(eth0, n.mac()); err != nil {
		return fmt.Errorf("node %s: eth0 MAC %s: %w", n.Name, n.mac(), err)
	}
	// The primary NIC takes the switch's router advertisements (SLAAC and
	// the IPv6 default route), as a DHCP-configured NIC does.
	for _, k := range []string{"accept_ra", "autoconf"} {
		if err := node.NS.Sysctl("net/ipv6/conf/eth0/"+k, "1"); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if dhcp {
		n.RuntimeStateDir = s.nodedStateDir(n.Name)
		return s.startNodeRuntime(n)
	}
	addr := netip.PrefixFrom(netip.MustParseAddr(n.Address), gw4.Bits())
	a, err := netlink.ParseAddr(addr.String())
	if err != nil {
		return err
	}
	if err := node.NS.Netlink.AddrAdd(eth0, a); err != nil {
		return fmt.Errorf("node %s: adding %s to eth0: %w", n.Name, addr, err)
	}
	gw := gw4.Addr().AsSlice()
	if err := node.NS.Netlink.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: gw}); err != nil {
		return fmt.Errorf("node %s: default route via %s: %w", n.Name, gw4.Addr(), err)
	}
	return nil
}

// startNetworkManagers runs one private NetworkManager per node (its own
// bus and state under the node's directory), leaving eth0, the node's
// link to the API server, to the node runtime.
func (s *supervisor) startNetworkManagers(ctx context.Context, nodes []NodeState, teardown *[]func()) error {
	for i := range nodes {
		n := &nodes[i]
		in, err := nmrun.Start(ctx, nmrun.Options{NetNS: nsrun.File(n.NetNS), Dir: filepath.Join(s.opts.Dir, "nodes", n.Name, "nm"), Unmanaged: []string{"eth0"}})
		*teardown = append(*teardown, func() {
			if err := in.Stop(); err != nil {
				s.log.Error("stop NetworkManager", "node", n.Name, "err", err)
			}
		})
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		n.NetworkManagerBus = in.Bus
		n.NetworkManagerResolvConf = filepath.Join(in.RunDir, "resolv.conf")
	}
	return nil
}

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
		if n.OVSDB != "" {
			args = append(args, "--ovs-datapath=netdev")
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

// waitNNS waits until every node has a NodeNetworkState with a state.
func waitNNS(ctx context.Context, dyn dynamic.Interface, nodes []NodeState, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		missing, err := missingNNS(ctx, dyn, nodes)
		if err == nil && len(missing) == 0 {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("no NodeNetworkState yet for %s", strings.Join(missing, ", "))
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the handlers: %w", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// mac is the node's eth0 MAC address: locally administered, derived from
// the node's address.
func (n *NodeState) mac() net.HardwareAddr {
	a := netip.MustParseAddr(n.Address).As4()
	return net.HardwareAddr{0x02, 0x6b, 0x6e, 0x6d, a[2], a[3]}
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

// nodeOVSDB is the node's OVS database for nmstatectl: its own, or none
// (never the machine's default socket).
func nodeOVSDB(n *NodeState) string {
	if n.OVSDB == "" {
		return "none"
	}
	return n.OVSDB
}

// waitLeases waits until every node's eth0 has its reserved IPv4 address
// and a default route.
func waitLeases(ctx context.Context, sw *labnet.Switch, nodes []NodeState, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		var missing []string
		for _, n := range nodes {
			if !hasLease(n) {
				missing = append(missing, n.Name)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no DHCP lease on eth0 of %s (see nodes/*/noded.log and %s): %w", strings.Join(missing, ", "), sw.LogPath(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// hasLease reports whether the node's eth0 has its address and a default
// route.
func hasLease(n NodeState) bool {
	h, err := netns.GetFromName(n.NetNS)
	if err != nil {
		return false
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE)
	if err != nil {
		return false
	}
	defer nl.Close()
	l, err := nl.LinkByName("eth0")
	if err != nil {
		return false
	}
	addrs, err := nl.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return false
	}
	found := false
	for _, a := range addrs {
		found = found || a.IP.String() == n.Address
	}
	if !found {
		return false
	}
	routes, err := nl.RouteList(l, netlink.FAMILY_V4)
	if err != nil {
		return false
	}
	for _, r := range routes {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() {
			return true
		}
	}
	return false
}
