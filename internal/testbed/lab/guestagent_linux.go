package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
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

	"github.com/knmstate/knmstate/internal/testbed/lab/labvm"
	"github.com/knmstate/knmstate/internal/testbed/lab/remoteexec"
	"github.com/knmstate/knmstate/internal/testbed/labnet"
)

// guestPath is the PATH of commands the agent runs in the nodes:
// Debian's programs of the image first, busybox's applets last.
const guestPath = "/usr/sbin:/usr/bin:/sbin:/bin:" + labvm.BusyboxDir

// agent is the guest side of guest mode: a supervisor that builds the
// switch and the nodes inside the guest, plus the HTTP endpoints the lab's
// supervisor on the host drives it through.
type agent struct {
	s     *supervisor
	cfg   GuestConfig
	start chan startReq
	// ctx is the agent's life (RunGuest's), for reboots.
	ctx context.Context

	mu       sync.Mutex
	spawners map[string]*spawner // exec: one per node, made on first use
}

type startReq struct {
	gs   guestStart
	done chan error
}

// RunGuest is the guest agent (`knmstate lab guest`), run by the guest's
// /init: it brings up the guest's uplink, builds the lab's switch (bridge,
// dnsmasq) and nodes with their node runtimes as the supervisor does on
// this machine in the default mode, and, once the supervisor sends the API
// server's address and the kubeconfigs, forwards the switch's API address
// to it and starts the handlers. It serves its state, that start and exec
// into the nodes on GuestAddr:guestAgentPort until ctx ends.
func RunGuest(ctx context.Context, configPath string) error {
	begin := time.Now()
	b, err := os.ReadFile(configPath)
	if err != nil {
		return fmt.Errorf("guest config: %w", err)
	}
	var cfg GuestConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("guest config %s: %w", configPath, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("guest agent: %w", err)
	}
	opts := Options{Name: cfg.Name, Dir: guestDir, Nodes: len(cfg.Nodes), Binary: exe, Nmstatectl: exe,
		HandlerArgs: cfg.HandlerArgs, Kernel: KernelDebian, Backend: cfg.Backend, NMOVSBuild: cfg.NMOVSBuild}
	if !cfg.NodeRuntime {
		opts.Nmstatectl = NoNodeRuntime
	}
	a := &agent{
		ctx:      ctx,
		cfg:      cfg,
		start:    make(chan startReq),
		spawners: map[string]*spawner{},
		s: &supervisor{
			opts:  opts,
			where: "guest",
			log:   slog.New(slog.NewTextHandler(os.Stderr, nil)),
			state: State{Name: opts.Name, Dir: opts.Dir, PID: os.Getpid(), Phase: PhaseStarting, StartedAt: begin},
		},
	}
	s := a.s
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return fmt.Errorf("lab dir: %w", err)
	}
	if err := setupUplink(); err != nil {
		return err
	}
	if a.s.cables, err = findCables(cfg.Cables); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(labvm.GuestAddr, strconv.Itoa(guestAgentPort)))
	if err != nil {
		return fmt.Errorf("guest agent: %w", err)
	}
	srv := &http.Server{Handler: a.mux(), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	s.log.Info("guest agent listening", "addr", ln.Addr().String())

	var teardown []func()
	defer func() {
		s.setPhase(PhaseStopping, "")
		for i := len(teardown) - 1; i >= 0; i-- {
			teardown[i]()
		}
		a.closeSpawners()
		s.log.Info("guest agent stopped")
	}()
	if err := a.build(ctx, &teardown); err != nil {
		s.setPhase(PhaseFailed, err.Error())
		s.log.Error("guest lab failed", "err", err)
		<-ctx.Done() // the supervisor reads the error, then stops the guest
		return err
	}
	s.mu.Lock()
	s.state.ReadyAfter = Duration(time.Since(begin))
	s.mu.Unlock()
	s.setPhase(PhaseReady, "")
	s.log.Info("guest lab ready", "after", time.Since(begin))
	<-ctx.Done()
	return nil
}

// build makes the switch and the nodes, then waits for the supervisor's
// start and starts the API forwarder and the handlers.
func (a *agent) build(ctx context.Context, teardown *[]func()) error {
	s := a.s
	t := time.Now()
	nodes := append([]NodeState(nil), a.cfg.Nodes...)
	sw, err := s.newSwitch(ctx, nodes, teardown)
	if err != nil {
		return err
	}
	s.step("switch namespace, bridge, dnsmasq", t)
	s.sw = sw
	if err := s.addNodes(ctx, sw, nodes, teardown); err != nil {
		return err
	}
	if err := a.startNetworkManagers(ctx, sw, nodes, teardown); err != nil {
		return err
	}
	s.setPhase(PhaseNetworkReady, "")

	var req startReq
	select {
	case req = <-a.start:
	case <-ctx.Done():
		return ctx.Err()
	}
	err = a.startHandlers(ctx, sw, nodes, req.gs, teardown)
	req.done <- err
	return err
}

// startHandlers forwards the switch's API address to the API server and
// starts a handler per node with its kubeconfig.
func (a *agent) startHandlers(ctx context.Context, sw *labnet.Switch, nodes []NodeState, gs guestStart, teardown *[]func()) error {
	s := a.s
	t := time.Now()
	var ln net.Listener
	addr := net.JoinHostPort(lanPrefix.Addr().String(), strconv.Itoa(apiPort))
	if err := sw.NS.Do(func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return fmt.Errorf("api forwarder: %w", err)
	}
	var d net.Dialer
	fwd := newForwarder(ln, gs.APIServer, d.DialContext, s.log)
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { fwd.serve(fctx); close(done) }()
	*teardown = append(*teardown, func() { cancel(); <-done })
	for i := range nodes {
		n := &nodes[i]
		kc, ok := gs.Kubeconfigs[n.Name]
		if !ok {
			return fmt.Errorf("no kubeconfig for node %s", n.Name)
		}
		dir := filepath.Join(s.opts.Dir, "nodes", n.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("node %s dir: %w", n.Name, err)
		}
		n.Kubeconfig = filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(n.Kubeconfig, kc, 0o600); err != nil {
			return fmt.Errorf("node %s kubeconfig: %w", n.Name, err)
		}
	}
	if err := s.startHandlers(nodes, s.where, s.hostSpawner); err != nil {
		return err
	}
	s.publish()
	s.step("API forwarder and handlers started", t)
	return nil
}

// setupUplink configures the guest's NIC on qemu's user-mode network:
// GuestAddr/24, up, no IPv6 and no default route. Only this machine's
// loopback (HostAddr) and the forwarded port are reachable through it.
func setupUplink() error {
	ns, err := netns.Get()
	if err != nil {
		return fmt.Errorf("guest uplink: %w", err)
	}
	defer ns.Close()
	nl, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("guest uplink: %w", err)
	}
	defer nl.Close()
	// By MAC: the kernel names NICs in the order it finds them, and the
	// cables' NICs are found too.
	l, err := linkByMAC(nl, labvm.UplinkMAC)
	if err != nil {
		return fmt.Errorf("guest uplink: %w", err)
	}
	if err := nl.LinkSetName(l, guestUplink); err != nil {
		return fmt.Errorf("guest uplink: renaming %s: %w", l.Attrs().Name, err)
	}
	// The guest's own namespace (this is not the lab's machine).
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+guestUplink+"/disable_ipv6", []byte("1"), 0); err != nil {
		return fmt.Errorf("guest uplink: %w", err)
	}
	p := netip.PrefixFrom(netip.MustParseAddr(labvm.GuestAddr), 24)
	if err := nl.AddrReplace(l, &netlink.Addr{IPNet: prefixIPNet(p)}); err != nil {
		return fmt.Errorf("guest uplink: adding %s: %w", p, err)
	}
	if err := nl.LinkSetUp(l); err != nil {
		return fmt.Errorf("guest uplink: setting %s up: %w", guestUplink, err)
	}
	return nil
}

// guestUplink names the guest's NIC on qemu's user-mode network.
const guestUplink = "uplink"

// findCables finds the guest's cables by their MACs and names their ends
// c<i>n and c<i>s, names no node NIC has, for the switch to move.
func findCables(macs []labvm.Cable) ([]labnet.Cable, error) {
	if len(macs) == 0 {
		return nil, nil
	}
	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("guest cables: %w", err)
	}
	defer nl.Close()
	cables := make([]labnet.Cable, len(macs))
	for i, m := range macs {
		c := labnet.Cable{Node: fmt.Sprintf("c%dn", i), Switch: fmt.Sprintf("c%ds", i)}
		for _, end := range []struct{ mac, name string }{{m.Node, c.Node}, {m.Switch, c.Switch}} {
			l, err := linkByMAC(nl, end.mac)
			if err != nil {
				return nil, fmt.Errorf("guest cable %d: %w", i, err)
			}
			if err := nl.LinkSetName(l, end.name); err != nil {
				return nil, fmt.Errorf("guest cable %d: renaming %s to %s: %w", i, l.Attrs().Name, end.name, err)
			}
		}
		cables[i] = c
	}
	return cables, nil
}

// linkByMAC is the link whose MAC address is mac.
func linkByMAC(nl *netlink.Handle, mac string) (netlink.Link, error) {
	links, err := nl.LinkList()
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if strings.EqualFold(l.Attrs().HardwareAddr.String(), mac) {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no NIC with MAC %s", mac)
}

func (a *agent) mux() http.Handler {
	m := http.NewServeMux()
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !remoteexec.Authorized(r, a.cfg.Token) {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h(w, r)
		}
	}
	m.HandleFunc("GET /status", auth(func(w http.ResponseWriter, _ *http.Request) {
		st := a.s.snapshot()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&st)
	}))
	m.HandleFunc("POST /start", auth(func(w http.ResponseWriter, r *http.Request) {
		var gs guestStart
		if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&gs); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := startReq{gs: gs, done: make(chan error, 1)}
		select {
		case a.start <- req:
		case <-r.Context().Done():
			return
		default:
			http.Error(w, "not waiting for a start (phase "+a.s.snapshot().Phase+")", http.StatusConflict)
			return
		}
		if err := <-req.done; err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	m.HandleFunc("POST /reboot/{node}", auth(func(w http.ResponseWriter, r *http.Request) {
		node := r.PathValue("node")
		// The agent's context, not the request's: a supervisor that
		// goes away must not leave the node half rebooted.
		res, err := a.s.reboot(a.ctx, node)
		// The node's namespaces are new ones either way.
		a.dropSpawner(node)
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	}))
	m.Handle("POST /exec", &remoteexec.Server{Token: a.cfg.Token, Command: a.execCommand, Start: a.execStart})
	return m
}

// execCommand is the command of an exec request, run in the node's
// namespaces by execStart.
func (a *agent) execCommand(r remoteexec.Request) (*exec.Cmd, error) {
	if _, err := a.nodeSpawner(r.Target); err != nil {
		return nil, err
	}
	cmd := exec.Command(r.Args[0], r.Args[1:]...)
	cmd.Env = append([]string{"PATH=" + guestPath, "HOME=/root"}, a.nodeEnv(r.Target)...)
	cmd.Dir = "/"
	return cmd, nil
}

// execStart starts an exec request's command from a thread inside the
// node's network, mount and UTS namespaces.
func (a *agent) execStart(r remoteexec.Request, cmd *exec.Cmd) error {
	sp, err := a.nodeSpawner(r.Target)
	if err != nil {
		return err
	}
	return sp.start(cmd)
}

// nodeSpawner returns the spawner of a node's namespaces, made on first
// use (once the node exists).
func (a *agent) nodeSpawner(node string) (*spawner, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if sp := a.spawners[node]; sp != nil {
		return sp, nil
	}
	st := a.s.snapshot()
	n, err := st.Node(node)
	if err != nil {
		return nil, err
	}
	if n.NetNS == "" {
		return nil, fmt.Errorf("node %s is not built yet (phase %s)", node, st.Phase)
	}
	sp, err := newNodeSpawner("/run/netns/"+n.NetNS, n.MountNS, n.UTSNS)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	a.spawners[node] = sp
	return sp, nil
}

// dropSpawner closes the node's exec spawner (its namespaces are gone).
func (a *agent) dropSpawner(node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if sp := a.spawners[node]; sp != nil {
		sp.close()
		delete(a.spawners, node)
	}
}

func (a *agent) closeSpawners() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, sp := range a.spawners {
		sp.close()
		delete(a.spawners, name)
	}
}
