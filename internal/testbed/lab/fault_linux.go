package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/knmstate/knmstate/internal/testbed/testenv"
)

// controllerLease is the controller's leader election Lease (in
// componentNamespace): its holder is the leader.
const controllerLease = "knmstate-controller"

// partitionTable is the nftables table of lab partition, in the node's
// own network namespace.
const partitionTable = "knmstate-partition"

// podKillInterval is how often a pod kept down (kill --for) is looked at
// for a container the kubelet started again.
const podKillInterval = 200 * time.Millisecond

func (s *supervisor) serveFault(w http.ResponseWriter, r *http.Request) {
	var f Fault
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&f); err != nil {
		http.Error(w, "lab fault: "+err.Error(), http.StatusBadRequest)
		return
	}
	// The lab's context: the restore after --for must outlive the request.
	res, err := s.fault(s.procCtx, f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// fault injects f now and, when f.For is set, schedules the component's
// return (the partition's end) after that long.
func (s *supervisor) fault(ctx context.Context, f Fault) (*FaultResult, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if s.opts.Kernel != "" {
		return nil, errors.New("lab kill, lab partition: not in guest mode")
	}
	if f.Node != "" {
		s.mu.Lock()
		_, err := s.state.Node(f.Node)
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	res := &FaultResult{Fault: f}
	var err error
	switch f.Component {
	case FaultAPIServer, FaultEtcd:
		err = s.killControlPlane(ctx, res)
	case FaultController:
		if s.opts.Kubelet {
			err = s.killPod(ctx, res, "")
		} else {
			err = s.killProcs(res, "controller")
		}
	case FaultHandler:
		if s.opts.Kubelet {
			err = s.killPod(ctx, res, f.Node)
		} else {
			err = s.killProcs(res, "handler/"+f.Node)
		}
	case FaultNode:
		if s.opts.Kubelet {
			// The init is PID 1 of the node's PID namespace: the kernel
			// kills every process of the node with it (kubelet,
			// containerd, shims, pods), as a power cut does.
			err = s.killProcs(res, "node-init/"+f.Node, "noded/"+f.Node)
		} else {
			err = s.killProcs(res, "handler/"+f.Node, "noded/"+f.Node)
		}
	case FaultPartition:
		err = s.partition(ctx, res)
	}
	if err != nil {
		return nil, err
	}
	s.log.Info("fault injected", "component", f.Component, "node", f.Node, "for", time.Duration(f.For), "target", res.Target, "pids", res.PIDs)
	s.publish()
	return res, nil
}

// killProcs SIGKILLs supervised processes by name, each kept down for
// res.For; the supervisor's back-off restarts them after that.
func (s *supervisor) killProcs(res *FaultResult, names ...string) error {
	var procs []*proc
	s.mu.Lock()
	for _, name := range names {
		for _, p := range s.procs {
			if p.name == name {
				procs = append(procs, p)
			}
		}
	}
	s.mu.Unlock()
	if len(procs) == 0 {
		return fmt.Errorf("lab kill: no process %s in this lab", strings.Join(names, " or "))
	}
	res.At = time.Now()
	var targets []string
	for _, p := range procs {
		pid, err := p.kill(time.Duration(res.For))
		if err != nil {
			return fmt.Errorf("lab kill: %w", err)
		}
		if pid > 0 {
			res.PIDs = append(res.PIDs, pid)
		}
		targets = append(targets, p.name)
	}
	res.Target = strings.Join(targets, ", ")
	if len(res.PIDs) == 0 && res.For == 0 {
		return fmt.Errorf("lab kill: %s not running", res.Target)
	}
	return nil
}

// killControlPlane SIGKILLs etcd or the API server and starts it again
// after res.For (at once without it), in the background.
func (s *supervisor) killControlPlane(ctx context.Context, res *FaultResult) error {
	if s.env == nil {
		return errors.New("lab kill: this lab's control plane is not the supervisor's")
	}
	name := testenv.Etcd
	if res.Component == FaultAPIServer {
		name = testenv.APIServer
	}
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	pid, err := s.env.Kill(name)
	if err != nil {
		return fmt.Errorf("lab kill: %w", err)
	}
	res.At, res.Target, res.PIDs = time.Now(), name, []int{pid}
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(res.For)):
		}
		begin := time.Now()
		if err := s.env.Restart(ctx, name); err != nil {
			s.log.Error("restarting after lab kill", "component", name, "err", err)
			s.note("%s did not come back after lab kill: %v", name, err)
			return
		}
		s.log.Info("back after lab kill", "component", name, "down", time.Since(res.At), "restart", time.Since(begin))
	}()
	return nil
}

// killPod SIGKILLs the containers of the handler pod of node, or of the
// leading controller pod (node ""), found by the container IDs in their
// processes' cgroups. With res.For it keeps killing what the kubelet
// starts again in that pod until res.For has passed.
func (s *supervisor) killPod(ctx context.Context, res *FaultResult, node string) error {
	kube, err := kubernetes.NewForConfig(s.env.Config)
	if err != nil {
		return err
	}
	pod, err := s.faultPod(ctx, kube, node)
	if err != nil {
		return fmt.Errorf("lab kill: %w", err)
	}
	res.At = time.Now()
	res.Target = "pod " + pod.Namespace + "/" + pod.Name
	res.PIDs, err = killContainers(pod)
	if err != nil {
		return fmt.Errorf("lab kill: %w", err)
	}
	if len(res.PIDs) == 0 {
		return fmt.Errorf("lab kill: no running container process of pod %s/%s", pod.Namespace, pod.Name)
	}
	if res.For == 0 {
		return nil
	}
	go func() {
		until := time.After(time.Duration(res.For))
		for {
			select {
			case <-ctx.Done():
				return
			case <-until:
				return
			case <-time.After(podKillInterval):
			}
			p, err := kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			if pids, _ := killContainers(p); len(pids) > 0 {
				s.log.Info("lab kill: killed the restarted containers again", "pod", pod.Name, "pids", pids)
			}
		}
	}()
	return nil
}

// faultPod is the handler pod on node, or the controller pod holding the
// leader Lease (node "").
func (s *supervisor) faultPod(ctx context.Context, kube kubernetes.Interface, node string) (*corev1.Pod, error) {
	pods := kube.CoreV1().Pods(componentNamespace)
	if node == "" {
		l, err := kube.CoordinationV1().Leases(componentNamespace).Get(ctx, controllerLease, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("the controller's leader Lease: %w", err)
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return nil, errors.New("the controller's leader Lease has no holder")
		}
		// controller-runtime's identity is HOSTNAME_UUID, the pod's name first.
		name, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
		return pods.Get(ctx, name, metav1.GetOptions{})
	}
	list, err := pods.List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/component=handler",
		FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return nil, fmt.Errorf("the handler pod of %s: %w", node, err)
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no handler pod on %s", node)
}

// killContainers SIGKILLs every process of the pod's running containers.
func killContainers(pod *corev1.Pod) ([]int, error) {
	var ids []string
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running == nil {
			continue
		}
		_, id, ok := strings.Cut(c.ContainerID, "://")
		if ok && id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	pids, err := processesInCgroups(ids)
	if err != nil {
		return nil, err
	}
	var killed []int
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			killed = append(killed, pid)
		}
	}
	return killed, nil
}

// processesInCgroups are the processes of this machine whose cgroup path
// names one of the container IDs (runc names a container's cgroup after
// its ID in every driver).
func processesInCgroups(ids []string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil {
			continue // gone meanwhile
		}
		for _, id := range ids {
			if bytes.Contains(b, []byte(id)) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// partition drops the node's traffic to the API server with a rule in
// the node's own network namespace (never this machine's), and removes
// it after res.For.
func (s *supervisor) partition(ctx context.Context, res *FaultResult) error {
	s.mu.Lock()
	n, err := s.state.Node(res.Node)
	var netns string
	if err == nil {
		netns = n.NetNS
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	api := lanPrefix.Addr().String()
	// Created empty first so that the delete never fails: a partition
	// that is still on is replaced, not doubled.
	rules := fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	chain output {
		type filter hook output priority 0; policy accept;
		ip daddr %[2]s tcp dport 6443 drop
	}
}
`, partitionTable, api)
	if err := nftIn(netns, rules); err != nil {
		return fmt.Errorf("lab partition %s: %w", res.Node, err)
	}
	res.At, res.Target = time.Now(), fmt.Sprintf("%s -> %s:6443 (nftables table %s in %s)", res.Node, api, partitionTable, netns)
	go func() {
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(res.For)):
		}
		if err := nftIn(netns, "delete table inet "+partitionTable+"\n"); err != nil {
			s.log.Error("healing lab partition", "node", res.Node, "err", err)
			return
		}
		s.log.Info("lab partition healed", "node", res.Node, "after", time.Since(res.At))
	}()
	return nil
}

// nftIn runs nft with rules inside the lab's network namespace netns.
func nftIn(netns, rules string) error {
	cmd := exec.Command("nsenter", "--net="+labnetPath(netns), "--", "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s", netns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Inject asks the lab in dir to inject f (lab kill, lab partition) and
// returns once the component is down (the partition is on).
func Inject(ctx context.Context, dir string, f Fault) (*FaultResult, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, controlFile)
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://lab/fault", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lab %s: reaching the lab's supervisor (is the lab in %s up?): %w", f.verb(), dir, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, errors.New(strings.TrimSpace(string(msg)))
	}
	var res FaultResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return nil, fmt.Errorf("lab %s: reading the answer: %w", f.verb(), err)
	}
	return &res, nil
}
