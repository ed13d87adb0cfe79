package lab

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// rebootKubelet is lab reboot of a kubelet-mode node: its init stops (its
// daemons and NetworkManager, containerd, the kubelet, kube-proxy, and
// with the PID namespace every pod's containers), its node runtime too;
// then what a reboot leaves: no cgroups of its pods, a fresh /run (a new
// mount namespace; the directories bound on its /run/dbus and
// /run/NetworkManager emptied, in-memory profiles with them), new
// network and UTS namespaces with new NICs (no addresses, no routes). Its
// directory's var/lib (containerd, the kubelet, /var/lib/knmstate with
// the handler's checkpoints and the runtime's leases, NetworkManager's
// leases), var/k8s_nmstate and persistent NetworkManager profiles are
// kept, as disks are. Then its init starts again with the same spec, and
// the reboot returns once the node has its address: NetworkManager's
// (from persistent profiles only, whichever link they put it on) or the
// node runtime's on eth0. The kubelet restarts the node's pods, the
// handler's among them.
func (s *supervisor) rebootKubelet(ctx context.Context, idx int, n NodeState, res *RebootResult) error {
	k := s.kubelet
	if k == nil {
		return fmt.Errorf("lab reboot: node %s: kubelet mode not running", n.Name)
	}
	dir := filepath.Join(s.opts.Dir, "nodes", n.Name)
	initName := "node-init/" + n.Name
	s.mu.Lock()
	var sp *spawner
	for _, p := range s.procs {
		if p.name == initName {
			sp = p.spawner
		}
	}
	s.mu.Unlock()
	s.stop(initName)
	if sp != nil {
		sp.close()
		k.spawners = slices.DeleteFunc(k.spawners, func(x *spawner) bool { return x == sp })
	}
	s.stop("noded/" + n.Name)
	// The last processes of the PID namespace go a moment after its init;
	// runc's cgroups with their last task.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := removeCgroupTree(k.hierarchies, n.CgroupRoot)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lab reboot: node %s: %w", n.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, d := range []string{nodeDBusDir, nodeNMRunDir} {
		if err := emptyDir(filepath.Join(dir, d)); err != nil {
			return fmt.Errorf("lab reboot: node %s: a fresh /run: %w", n.Name, err)
		}
	}
	if err := s.sw.RemoveNode(n.Name); err != nil {
		return fmt.Errorf("lab reboot: %w", err)
	}
	res.Down = Duration(time.Since(res.Start))

	dhcp := s.opts.Nmstatectl != "" && s.opts.Nmstatectl != NoNodeRuntime
	if err := s.addNode(s.sw, &n, lanPrefix, dhcp); err != nil {
		return fmt.Errorf("lab reboot: %w", err)
	}
	spec, err := k.prepareNode(&n)
	if err != nil {
		return fmt.Errorf("lab reboot: %w", err)
	}
	if err := k.startNodeInit(&n, spec); err != nil {
		return fmt.Errorf("lab reboot: %w", err)
	}
	res.Handler = time.Now()
	s.mu.Lock()
	s.state.Nodes[idx] = n
	s.mu.Unlock()
	s.publish()
	if dhcp || s.opts.eth0ByNetworkManager() {
		wait := waitLeases
		if s.opts.eth0ByNetworkManager() {
			wait = waitAddress
		}
		if err := wait(ctx, s.sw, []NodeState{n}, time.Minute); err != nil {
			return fmt.Errorf("lab reboot: %w", err)
		}
	}
	res.Up = Duration(time.Since(res.Start))
	s.log.Info("node rebooted", "node", n.Name, "down", time.Duration(res.Down), "up", time.Duration(res.Up))
	return nil
}

// emptyDir removes what dir holds and keeps dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// WaitHandlerBack waits, after a kubelet-mode reboot begun at since, until
// the node's handler pod runs again (a container started after since, and
// Ready) and every enactment of before is Available, and returns when it
// saw that. Unlike WaitAvailableAgain it does not ask for the enactments
// to be written anew: on NetworkManager nodes persistent profiles bring a
// policy's state back by themselves, and the handler finds nothing to do.
func WaitHandlerBack(ctx context.Context, kubeconfig, node string, before map[string]Enactment, since time.Time, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return time.Time{}, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return time.Time{}, err
	}
	floor := since.Truncate(time.Second)
	last := "no handler pod"
	for {
		pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/component=handler", FieldSelector: "spec.nodeName=" + node})
		back := false
		if err == nil {
			for _, p := range pods.Items {
				for _, cs := range p.Status.ContainerStatuses {
					if r := cs.State.Running; cs.Ready && r != nil && !r.StartedAt.Time.Before(floor) {
						back = true
					}
				}
			}
			last = fmt.Sprintf("%d handler pods on %s, none Ready since the reboot", len(pods.Items), node)
		}
		if back {
			avail, err := AvailableEnactments(ctx, kubeconfig, node)
			var missing []string
			for _, n := range slices.Sorted(maps.Keys(before)) {
				if _, ok := avail[n]; err != nil || !ok {
					missing = append(missing, n)
				}
			}
			if len(missing) == 0 {
				return time.Now(), nil
			}
			last = "not Available: " + strings.Join(missing, ", ")
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("after the reboot of %s: %s", node, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
