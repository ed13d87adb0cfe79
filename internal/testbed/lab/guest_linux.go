package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/internal/testbed/initramfs"
	"github.com/knmstate/knmstate/internal/testbed/lab/labvm"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// guestPrograms are the programs of this machine the guest needs besides
// knmstate: the switch's DHCP/DNS server and LLDP agent, and iproute2 for
// `lab exec` (busybox's ip has no link types, netns or JSON).
var guestPrograms = []string{"/usr/sbin/dnsmasq", "/usr/bin/ip", "/usr/sbin/bridge", "/usr/sbin/lldpd", "/usr/sbin/lldpcli"}

// guestUsers: lldpd drops its privileges to _lldpd (Debian's build), in a
// chroot it makes itself.
var guestUsers = []labvm.User{{Name: "_lldpd", ID: 104, Home: "/run/lldpd"}}

// guestModules are the kernel features policies may ask for, loaded at
// boot (the guest has no modprobe). max_bonds=0 and numdummies=0 keep
// bonding and dummy from creating bond0 and dummy0.
var guestModules = []initramfs.ModuleRequest{
	{Name: "bonding", Params: "max_bonds=0"},
	{Name: "8021q"},
	{Name: "dummy", Params: "numdummies=0"},
	{Name: "vrf"},
	{Name: "veth"},
	{Name: "bridge"},
	{Name: "macvlan"},
	{Name: "macvtap"},
	{Name: "ipvlan"},
	{Name: "vxlan"},
	{Name: "team"},
	{Name: "team_mode_activebackup"},
	{Name: "team_mode_roundrobin"},
	{Name: "tun"},
	// Built by hack/kernel-lane/extmod.sh: Debian's config leaves it out.
	{Name: "hsr"},
}

// Guest mode's fixed timeouts: the guest boots in seconds, but everything
// in it runs many times slower than here.
const (
	guestNetworkTimeout = 5 * time.Minute
	guestNNSTimeout     = 5 * time.Minute
	guestPollEvery      = 2 * time.Second
)

// buildGuest is guest mode: the control plane and the controller on this
// machine, everything of the nodes in a qemu guest on Debian's kernel.
func (s *supervisor) buildGuest(ctx context.Context, teardown *[]func()) error {
	o := s.opts
	kernel, err := labvm.FindKernel(o.KernelCache)
	if err != nil {
		return err
	}
	nodes := planNodes(o.Nodes)
	for i := range nodes {
		nodes[i].Kernel = kernel.Release
	}

	// The control plane, on this machine's loopback, while the guest
	// boots. Its certificate also names the switch's address, where the
	// guest's forwarder takes the nodes' connections.
	t := time.Now()
	envc := make(chan envResult, 1)
	go func() {
		e, err := testenv.Start(ctx, testenv.Options{
			RootDir:   o.Dir,
			APIServer: o.APIServer,
			Hosts:     []string{lanPrefix.Addr().String(), apiHost},
		})
		if err == nil {
			s.step("control plane (etcd, kube-apiserver, CRDs, admission policy)", t)
		}
		envc <- envResult{e, err}
	}()
	env, envErr := (*testenv.Env)(nil), error(nil)
	envDone := false
	waitEnv := func() (*testenv.Env, error) {
		if !envDone {
			r := <-envc
			env, envErr, envDone = r.env, r.err, true
			if env != nil {
				*teardown = append(*teardown, func() {
					if err := env.Stop(); err != nil {
						s.log.Error("stop control plane", "err", err)
					}
				})
			}
		}
		return env, envErr
	}
	defer func() { _, _ = waitEnv() }() // stopped by the teardown, even after a failure here

	if err := s.startSpawners(ctx, "", teardown); err != nil {
		return err
	}
	guest, client, err := s.bootGuest(ctx, kernel, nodes)
	if err != nil {
		return err
	}
	gst, err := s.waitGuest(ctx, client, PhaseNetworkReady, guestNetworkTimeout)
	if err != nil {
		return err
	}
	nodes = gst.Nodes
	s.mu.Lock()
	s.state.Nodes = append([]NodeState(nil), nodes...)
	s.mu.Unlock()
	for _, st := range gst.Steps {
		s.addStep("guest: "+st.Name, time.Duration(st.Duration))
	}
	pollCtx, stopPoll := context.WithCancel(ctx)
	pollDone := make(chan struct{})
	go func() { s.pollGuest(pollCtx, client); close(pollDone) }()
	*teardown = append(*teardown, func() { stopPoll(); <-pollDone })

	env, err = waitEnv()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(o.Dir, kubeconfigFile)
	if err := testenv.WriteKubeconfig(kubeconfig, env.Config); err != nil {
		return err
	}
	port := env.Host()[strings.LastIndex(env.Host(), ":")+1:]
	guest.APIServer = net.JoinHostPort(labvm.HostAddr, port)
	s.mu.Lock()
	s.state.Kubeconfig, s.state.APIServer, s.state.Guest = kubeconfig, env.Host(), guest
	s.guest = client
	s.mu.Unlock()
	s.publish()

	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: componentNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", componentNamespace, err)
	}
	if err := s.createNodes(ctx, kube, nodes, teardown); err != nil {
		return err
	}

	// The handlers in the guest reach the API server through the guest's
	// forwarder at the switch's address: their kubeconfigs say so.
	t = time.Now()
	server := "https://" + net.JoinHostPort(lanPrefix.Addr().String(), strconv.Itoa(apiPort))
	if err := writeHandlerKubeconfigs(env, o.Dir, nodes, server); err != nil {
		return err
	}
	gs := guestStart{APIServer: guest.APIServer, Kubeconfigs: map[string][]byte{}}
	for _, n := range nodes {
		b, err := os.ReadFile(n.Kubeconfig)
		if err != nil {
			return fmt.Errorf("node %s kubeconfig: %w", n.Name, err)
		}
		gs.Kubeconfigs[n.Name] = b
	}
	if err := client.start(ctx, gs); err != nil {
		return err
	}
	// On this machine's loopback: a free port, never a fixed one.
	mport, err := freeLoopbackPort()
	if err != nil {
		return err
	}
	metrics := net.JoinHostPort("127.0.0.1", strconv.Itoa(mport))
	if err := s.startController(env, "host", s.hostSpawner, metrics); err != nil {
		return err
	}
	s.mu.Lock()
	s.state.ControllerMetrics = metrics
	s.mu.Unlock()
	s.refreshGuest(ctx, client)
	if s.available("handler") {
		dyn, err := dynamic.NewForConfig(env.Config)
		if err != nil {
			return err
		}
		if err := waitNNS(ctx, dyn, nodes, guestNNSTimeout); err != nil {
			return err
		}
		s.step("handlers (in the guest): every node has a NodeNetworkState", t)
	}
	return nil
}

// envResult is a control plane's start.
type envResult struct {
	env *testenv.Env
	err error
}

// bootGuest writes the guest's initramfs and starts qemu; it returns the
// guest's state and a client of its agent.
func (s *supervisor) bootGuest(ctx context.Context, kernel labvm.Kernel, nodes []NodeState) (*GuestState, *guestClient, error) {
	o := s.opts
	t := time.Now()
	dir := filepath.Join(o.Dir, "guest")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("guest dir: %w", err)
	}
	token, err := randomToken()
	if err != nil {
		return nil, nil, err
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return nil, nil, fmt.Errorf("guest token: %w", err)
	}
	// Every NIC of every node is a cable: virtio-net devices, reported as
	// ethernet (as a virtual machine's NICs are upstream), where veths
	// would be reported as veth. eth0's permanent MAC is the one the
	// switch's DHCP reservation knows (a bond copying it gets that one).
	var cables []labvm.Cable
	for i := range nodes {
		for j := range nodeNICs {
			c := labvm.NumberedCable(len(cables))
			if j == 0 {
				c.Node = nodes[i].mac().String()
			}
			cables = append(cables, c)
		}
	}
	cfg := GuestConfig{Name: o.Name, Nodes: nodes, HandlerArgs: o.HandlerArgs, Token: token,
		NodeRuntime: o.Nmstatectl != NoNodeRuntime, Cables: cables, Backend: o.Backend}
	var nmOVS *nmrun.Build
	if o.Backend == BackendNetworkManager && !o.NoOVS {
		if nmOVS, err = networkManagerOVSBuild(o); err != nil {
			return nil, nil, fmt.Errorf("guest NetworkManager nodes with Open vSwitch: %w; or ask for a lab without it with --no-ovs", err)
		}
		cfg.NMOVSBuild = filepath.Dir(nmOVS.NetworkManager)
	}
	if cfg.NodeRuntime && o.Nmstatectl != o.Binary {
		return nil, nil, fmt.Errorf("nmstatectl: guest mode runs the node runtime of the knmstate binary (or none), not %s", o.Nmstatectl)
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	initrd := filepath.Join(dir, "initrd.cpio")
	img := labvm.Image{
		Kernel:   kernel,
		Modules:  guestModules,
		Programs: guestPrograms,
		Users:    guestUsers,
		Files:    map[string]string{guestBinary: o.Binary},
		Data:     map[string][]byte{guestConfigPath: cfgJSON},
		Command:  []string{guestBinary, "lab", "guest", "--config", guestConfigPath},
	}
	if o.Backend == BackendNetworkManager {
		if err := addGuestNetworkManager(&img, nmOVS); err != nil {
			return nil, nil, err
		}
	}
	if err := img.Write(initrd); err != nil {
		return nil, nil, err
	}
	s.step("guest initramfs", t)

	t = time.Now()
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, nil, err
	}
	g := &GuestState{
		Kernel: kernel.Release, Agent: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		TokenFile: tokenFile, Console: filepath.Join(dir, "console.log"),
		MemoryMiB: o.GuestMemory, CPUs: o.GuestCPUs,
	}
	m := labvm.Machine{
		Kernel: kernel, Initrd: initrd, MemoryMiB: o.GuestMemory, CPUs: o.GuestCPUs,
		Console: g.Console,
		// The guest's code is small (a kernel, a Go binary, dnsmasq):
		// 256 MiB of translations instead of qemu's 1 GiB keeps qemu's
		// memory near the guest's own.
		TranslationCacheMiB: 256,
		Forwards:            []labvm.Forward{{HostPort: port, GuestPort: guestAgentPort}},
		Cables:              cables,
	}
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return nil, nil, fmt.Errorf("guest mode needs qemu-system-x86_64 (make setup): %w", err)
	}
	exited := make(chan string, 1)
	s.start(&proc{name: "qemu", where: "host (guest: " + kernel.Release + ")", bin: qemu, args: m.Args(),
		logPath: filepath.Join(dir, "qemu.log"), spawner: s.hostSpawner, once: true,
		exited: func(status string) {
			exited <- status
			s.note("the guest ended (%s): its nodes are gone; see %s", status, g.Console)
		}})
	s.mu.Lock()
	s.state.Guest = g
	s.mu.Unlock()
	s.publish()
	client := newGuestClient(g.Agent, token)
	s.guestExited = exited
	s.step("qemu started", t)
	return g, client, nil
}

// waitGuest polls the agent until it reports phase (or Ready), fails, or
// the guest ends.
func (s *supervisor) waitGuest(ctx context.Context, c *guestClient, phase string, timeout time.Duration) (*State, error) {
	s.mu.Lock()
	console := s.state.Guest.Console
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := c.status(rctx)
		rcancel()
		if err == nil {
			s.setGuestProcs(st.Processes)
			switch st.Phase {
			case phase, PhaseReady:
				return st, nil
			case PhaseFailed:
				return nil, fmt.Errorf("guest: %s", st.Error)
			}
			err = fmt.Errorf("guest phase %s", st.Phase)
		}
		last = err
		select {
		case status := <-s.guestExited:
			return nil, fmt.Errorf("the guest ended during start-up (%s)%s", status, logTail(console, 30))
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the guest (%s): %w%s", last, ctx.Err(), logTail(console, 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// pollGuest refreshes the guest's processes in the lab's state until ctx
// ends.
func (s *supervisor) pollGuest(ctx context.Context, c *guestClient) {
	t := time.NewTicker(guestPollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.refreshGuest(ctx, c)
	}
}

func (s *supervisor) refreshGuest(ctx context.Context, c *guestClient) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if st, err := c.status(rctx); err == nil {
		s.setGuestProcs(st.Processes)
		s.publish()
	}
}

// setGuestProcs records the guest's processes, marked as the guest's.
func (s *supervisor) setGuestProcs(ps []Process) {
	for i := range ps {
		ps[i].Guest = true
	}
	s.mu.Lock()
	s.guestProcs = ps
	s.mu.Unlock()
}

// randomToken is a bearer token for the guest agent.
func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("guest token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// freeLoopbackPort returns a port of 127.0.0.1 that is free now (qemu
// binds it; another process could take it first, then qemu fails).
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
