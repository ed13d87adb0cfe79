package benchcmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// simNodes is the size of policy.rollout1000; a lab holds at most 50 nodes
// with real handlers (one network namespace, node runtime and OVS each),
// so these nodes are simulated (simNode).
const simNodes = 1000

// simApply stands for a node's apply and probes: about what the example
// policy takes on an idle lab node.
const simApply = 500 * time.Millisecond

// simLockRenew is how often the simulated nodes renew their node lock:
// the period of a kubelet's own node Lease. The handler's default
// (handler.DefaultLockRetryPeriod, 2 s) makes 500 Lease writes a second
// at 1,000 nodes, more than this 2-core machine's API server takes beside
// anything else: the controller's own leader Lease renewals time out and
// it stops (bench/README.md).
const simLockRenew = 10 * time.Second

// policyRollout1000 is policy.rollout1000: the example policy with
// maxUnavailable 50% on 1,000 simulated nodes (simNode) against a real
// kube-apiserver and a real `knmstate controller` process: time to
// Available, API requests per node, the API server's CPU time and the
// controller's memory.
func policyRollout1000(ctx context.Context, env Env) (rows []Result, err error) {
	policy, err := readPolicy(env, "linux-bridge-rollout", "50%")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(env.LabDir, "kb-sim1000")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	te, err := testenv.Start(ctx, testenv.Options{RootDir: dir, RepoRoot: env.RepoRoot})
	if err != nil {
		return nil, notMeasurable("control plane: %v", err)
	}
	defer func() { err = errors.Join(err, te.Stop()) }()
	apiserverPID := te.PIDs()[0]

	cfg := *te.Config
	cfg.QPS = -1 // every simulated node has its own limits in reality
	kube, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(&cfg)
	if err != nil {
		return nil, err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nmstate"}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("namespace nmstate: %w", err)
	}
	ctrl, err := startController(ctx, env, te, dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, ctrl.stop()) }()

	// The nodes, each holding its node lock and watching, before the
	// clock starts.
	start := time.Now()
	simCtx, stopSim := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopSim(); wg.Wait() }()
	board, err := newPolicyBoard(simCtx, dyn)
	if err != nil {
		return nil, err
	}
	nodes := make([]*simNode, simNodes)
	for i := range nodes {
		n := &simNode{name: fmt.Sprintf("sim%04d", i+1), apply: simApply, policies: board, lockRenew: simLockRenew}
		if n.kube, n.dyn, err = nodeClients(&cfg); err != nil {
			return nil, err
		}
		nodes[i] = n
	}
	if err := forEach(ctx, nodes, 32, func(n *simNode) error { return n.setUp(ctx) }); err != nil {
		return nil, fmt.Errorf("setting up simulated nodes: %w", err)
	}
	simErrs := make(chan error, 2*simNodes)
	for _, n := range nodes {
		leading := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.lock(simCtx, leading); err != nil {
				simErrs <- err
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-leading:
			case <-simCtx.Done():
				return
			}
			if err := n.run(simCtx); err != nil && simCtx.Err() == nil {
				simErrs <- err
			}
		}()
	}
	// Every lock taken: every Lease exists with a holder.
	if err := waitFor(ctx, 200*time.Millisecond, "the simulated nodes' locks", func() (bool, error) {
		list, err := kube.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		held := 0
		for _, l := range list.Items {
			if strings.HasPrefix(l.Name, "knmstate-sim") && l.Spec.HolderIdentity != nil {
				held++
			}
		}
		return held == simNodes, nil
	}); err != nil {
		return nil, err
	}
	env.logf("bench: policy.rollout1000: %d simulated nodes up in %v", simNodes, time.Since(start).Round(time.Millisecond))
	// The handlers' watches are opened once they lead; a pause lets the
	// last ones start.
	if err := sleep(ctx, 2*time.Second); err != nil {
		return nil, err
	}

	before, err := requestCounts(ctx, kube)
	if err != nil {
		return nil, err
	}
	cpuBefore, err := cpuSeconds(apiserverPID)
	if err != nil {
		return nil, err
	}
	selfBefore, err := cpuSeconds(os.Getpid())
	if err != nil {
		return nil, err
	}
	ctrlBefore, err := ctrl.cpu()
	if err != nil {
		return nil, err
	}
	load := loadAverage()
	var obj map[string]any
	if err := yaml.Unmarshal(policy, &obj); err != nil {
		return nil, err
	}
	t0 := time.Now()
	tl, err := watchEnactments(ctx, dyn, "linux-bridge-rollout", t0)
	if err != nil {
		return nil, err
	}
	if _, err := dyn.Resource(nncpGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		tl.stop()
		return nil, fmt.Errorf("creating the policy: %w", err)
	}
	err = waitFor(ctx, 100*time.Millisecond, "policy Available on the simulated nodes", func() (bool, error) {
		select {
		case err := <-simErrs:
			return false, err
		default:
		}
		o, err := dyn.Resource(nncpGVR).Get(ctx, "linux-bridge-rollout", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(o, "Available"), nil
	})
	d := time.Since(t0)
	timeline := summarizeTimeline(tl.stop())
	env.logf("bench: policy.rollout1000: %v; %s", d.Round(time.Millisecond), timeline)
	after, aerr := requestCounts(ctx, kube)
	total, leases, parts := requestDelta(before, after)
	if err != nil {
		if aerr == nil {
			timeline += fmt.Sprintf("; %.0f requests: %s", total, strings.Join(parts[:min(len(parts), 8)], ", "))
		}
		if _, restarts, lastErr := ctrl.status(); restarts > 0 {
			timeline += fmt.Sprintf("; the controller stopped %d times, last: %s", restarts, lastErr)
		}
		return nil, fmt.Errorf("%w (%s)", err, timeline)
	}
	if aerr != nil {
		return nil, aerr
	}
	cpuAfter, err := cpuSeconds(apiserverPID)
	if err != nil {
		return nil, err
	}
	selfAfter, err := cpuSeconds(os.Getpid())
	if err != nil {
		return nil, err
	}
	ctrlAfter, err := ctrl.cpu()
	if err != nil {
		return nil, err
	}
	pid, restarts, lastErr := ctrl.status()
	mem, err := rssOf(pid)
	if err != nil {
		return nil, err
	}
	peak, err := peakRSS(pid)
	if err != nil {
		return nil, err
	}
	restartNote := "the controller ran throughout"
	if restarts > 0 {
		restartNote = fmt.Sprintf("the controller stopped %d times and was started again (as its Deployment would), last: %s", restarts, lastErr)
	}
	return []Result{
		{Name: "policy.rollout1000.available", Value: num(d.Seconds()), Unit: "s", Target: "< 60",
			Note: fmt.Sprintf("SIMULATED nodes: %d, the handler's API side each (node lock Lease renewed every %v, NNS, enactment Pending/Progressing/Available, %v standing for the apply) against a real kube-apiserver and controller; maxUnavailable 50%%; %s; %s; load average %s at the start",
				simNodes, simLockRenew, simApply, timeline, restartNote, load)},
		{Name: "policy.rollout1000.requests", Value: num(total / simNodes), Unit: "requests/node", Target: "-",
			Note: fmt.Sprintf("all API requests from create to Available (apiserver_request_total), of them node-lock Lease renewals %.1f/node; by resource: %s", leases/simNodes, strings.Join(parts, ", "))},
		{Name: "policy.rollout1000.apiserver_cpu", Value: num(cpuAfter - cpuBefore), Unit: "s", Target: "-",
			Note: fmt.Sprintf("kube-apiserver CPU time (user+system) from create to Available, %.0f%% of one core over %.1f s; the controller took %.1f s, the simulated nodes (this process) %.1f s", 100*(cpuAfter-cpuBefore)/d.Seconds(), d.Seconds(), ctrlAfter-ctrlBefore, selfAfter-selfBefore)},
		{Name: "policy.rollout1000.controller_rss", Value: num(mem.Total / mib), Unit: "MiB", Target: "-",
			Note: fmt.Sprintf("VmRSS of the controller at Available, peak %.1f MiB (of its last start); %s", peak/mib, mem.note())},
	}, nil
}

// conditionTrue reports whether o has a status condition of type typ that
// is True.
func conditionTrue(o *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// forEach calls f for every item, at most par at a time, and returns the
// errors joined.
func forEach[T any](ctx context.Context, items []T, par int, f func(T) error) error {
	sem := make(chan struct{}, par)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(append(errs, ctx.Err())...)
}

// controllerProc runs `knmstate controller` as its Deployment would: a
// controller that stops (it does when it cannot renew its leader Lease in
// time, as on an overloaded API server) is started again, and counted.
type controllerProc struct {
	mu       sync.Mutex
	pid      int
	restarts int
	lastErr  string
	// exitedCPU is the CPU time of the controllers that stopped.
	exitedCPU float64
	stopped   chan struct{}
	cancel    context.CancelFunc
}

// startController runs `knmstate controller` against te with a
// cluster-admin identity (as the lab does), its log in dir, until stop.
func startController(ctx context.Context, env Env, te *testenv.Env, dir string) (*controllerProc, error) {
	cfg, err := te.UserConfig("knmstate-controller", "system:masters")
	if err != nil {
		return nil, err
	}
	kc := filepath.Join(dir, "controller.kubeconfig")
	if err := testenv.WriteKubeconfig(kc, cfg); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "controller.log"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &controllerProc{stopped: make(chan struct{}), cancel: cancel}
	started := make(chan error, 1)
	go func() {
		defer close(p.stopped)
		defer logf.Close()
		for first := true; ; first = false {
			cmd := exec.Command(env.Binary, "controller", "--kubeconfig", kc)
			cmd.Stdout, cmd.Stderr = logf, logf
			if err := cmd.Start(); err != nil {
				if first {
					started <- fmt.Errorf("starting the controller: %w", err)
				}
				return
			}
			p.mu.Lock()
			p.pid = cmd.Process.Pid
			p.mu.Unlock()
			if first {
				started <- nil
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-ctx.Done():
				_ = cmd.Process.Kill()
				<-done
				return
			case err := <-done:
				p.mu.Lock()
				p.restarts++
				p.exitedCPU += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
				p.lastErr = lastLine(logf.Name())
				if err != nil {
					p.lastErr = err.Error() + ": " + p.lastErr
				}
				p.mu.Unlock()
			}
			// A Deployment's first back-off.
			if sleep(ctx, time.Second) != nil {
				return
			}
		}
	}()
	if err := <-started; err != nil {
		cancel()
		<-p.stopped
		return nil, err
	}
	return p, nil
}

// status returns the running controller's PID and how often it stopped.
func (p *controllerProc) status() (pid, restarts int, lastErr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid, p.restarts, p.lastErr
}

// cpu is the CPU time of every controller started so far, in seconds.
func (p *controllerProc) cpu() (float64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, err := cpuSeconds(p.pid)
	return p.exitedCPU + cur, err
}

// stop kills the controller and waits for it.
func (p *controllerProc) stop() error {
	p.cancel()
	<-p.stopped
	return nil
}

// lastLine is the last line of a file ("" if unreadable).
func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// requestCounts reads the API server's request counters.
func requestCounts(ctx context.Context, kube kubernetes.Interface) ([]requestCount, error) {
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading API server metrics: %w", err)
	}
	return parseRequests(raw)
}

// requestDelta returns the requests between two readings: the total, the
// Lease requests among them, and "resource verb n" parts, largest first.
func requestDelta(before, after []requestCount) (total, leases float64, parts []string) {
	by := map[string]float64{}
	add := func(cs []requestCount, sign float64) {
		for _, c := range cs {
			key := c.resource
			if c.subresource != "" {
				key += "/" + c.subresource
			}
			by[key+" "+c.verb] += sign * c.n
			total += sign * c.n
			if c.resource == "leases" {
				leases += sign * c.n
			}
		}
	}
	add(after, 1)
	add(before, -1)
	keys := slices.Collect(maps.Keys(by))
	slices.SortFunc(keys, func(a, b string) int {
		if by[a] != by[b] {
			if by[a] > by[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		if by[k] >= 1 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, by[k]))
		}
	}
	return total, leases, parts
}

// cpuSeconds is a process's CPU time (user + system) from /proc/PID/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis are plain: utime and stime are the 12th and
	// 13th of them.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var ticks float64
	for _, v := range f[11:13] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return ticks / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on Linux.
const clockTicks = 100

// peakRSS is a process's peak resident memory (VmHWM), in bytes.
func peakRSS(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("pid %d: /proc status lacks VmHWM", pid)
}

// nodeClients returns clients with a connection of their own, as each
// handler has: over one shared HTTP/2 connection, one node's unread watch
// stalls the connection's flow-control window for all, and the API server
// closes the stalled watches (re-opened by the thousand).
func nodeClients(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	c := rest.CopyConfig(cfg)
	// A config with its own dialer gets a transport of its own (client-go
	// shares transports between equal TLS configurations only).
	c.Dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, nil, err
	}
	kube, err := kubernetes.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, nil, err
	}
	return kube, dyn, nil
}
