package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/knmstate/knmstate/internal/testbed/labnet"
	"github.com/knmstate/knmstate/internal/testbed/nmrun"
	"github.com/knmstate/knmstate/internal/testbed/ovsrun"
	"github.com/knmstate/knmstate/internal/testbed/testenv"
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
	// guest is the guest's agent (guest mode), for lab reboot.
	guest *guestClient
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
	// nm is each node's running NetworkManager (NetworkManager nodes of
	// the default and guest modes), for lab reboot.
	nmMu sync.Mutex
	nm   map[string]*nmrun.Instance
	// kubelet is kubelet mode's part (lab reboot restarts a node's init).
	kubelet *kubeletLab
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
